"""``agg=best``: a formulation chooses its picks' aggregation weights jointly with S.

Ground truth first: on small random rounds (N <= 10, K <= 4) every pair (S, w), w one of
samples / uniform / domain, is enumerated with the surrogate's U_d(S, w), the formulation's
question is answered on that table directly (its references, U* or worst* or the gap range,
taken over the pairs), and the pair the formulation chose must reach the same optimum. Then
the spec (canonical form, refusals), the selector (weights, fallback, a long-term run's
queues) and the drivers (the loop's committed and recorded weights, ``fedsel train``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from selection.aggregation import FAMILY, AggregationChoice, aggregation_weights, pick_weights
from selection.aggregation_choice import choose_jointly, family_of
from selection.errors import SelectionError
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.selectors import make_selector
from selection.solvers.eps import EpsSolver
from selection.solvers.eps_rel import EpsRelSolver
from selection.solvers.fisher_fair import FisherFairSolver
from selection.solvers.long_term import LongTermEpsSolver, LongTermFisherSolver
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.weighted import WeightedSolver
from selection.specs import parse_spec, selector_help
from selection.synthetic import synthetic_stats
from selection.synthetic_logits import synthetic_logits

TOL = 1e-7  # enumeration compares at 1e-9; the MILP-free routes here are exact


# ------------------------------------------------------------------ the enumerated pairs
def _round(seed: int, surrogate: str) -> SelectionProblem:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(5, 11)), int(rng.integers(2, 5))
    if surrogate == "weighted":
        table, logits = synthetic_stats(n, seed=seed), None
        # sizes spread over two orders of magnitude: the rules disagree
        table["n_samples"] = rng.integers(5, 800, n)
    else:
        table, logits = synthetic_logits(n, seed=seed, samples_per_domain=40)
    return SelectionProblem.from_stats(table, k, surrogate=surrogate, logits=logits)


def _pairs(problem: SelectionProblem, rules) -> dict[str, np.ndarray]:
    """Every (S, w): the rule's position, S's indices, U(S, w), U_d(S, w) and the rest."""
    idx = np.array(list(itertools.combinations(range(problem.n), problem.k)))
    parts = []
    for j, rule in enumerate(rules):
        q = problem.with_aggregation(rule)
        U, Ud = q.surrogate_model.block(q, idx)
        parts.append({"rule": np.full(len(idx), j), "idx": idx, "utility": U, "Ud": Ud})
    t = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    t["gap"] = t["Ud"].max(axis=1) - t["Ud"].min(axis=1)
    t["worst"] = t["Ud"].min(axis=1)
    t["sum_Fz"] = problem.F_z[t["idx"]].sum(axis=1)
    return t


def _lex_best(t: dict, mask: np.ndarray, keys) -> tuple[float, ...]:
    """The best key values over the masked pairs (values compared at 1e-9, as enumeration)."""
    cand = np.flatnonzero(mask)
    assert cand.size, "the enumerated question is infeasible"
    best = []
    for name, sign in keys:
        v = np.round(t[name][cand], 9) * sign
        best.append(float(v.max()) * sign)
        cand = cand[v == v.max()]
    return tuple(best)


def _chosen(t: dict, rules, choice) -> int:
    """The row of the chosen pair in the enumeration."""
    j = list(rules).index(choice.rule)
    sel = np.array(sorted(choice.result.selected))
    rows = np.flatnonzero((t["rule"] == j) & (t["idx"] == sel).all(axis=1))
    assert rows.size == 1
    return int(rows[0])


def _check(t, rules, choice, mask, keys) -> None:
    want = _lex_best(t, mask, keys)
    row = _chosen(t, rules, choice)
    assert mask[row], "the chosen pair breaks the joint question's constraint"
    got = tuple(float(t[name][row]) for name, _ in keys)
    assert got == pytest.approx(want, abs=TOL), (got, want)
    # the result's objectives are predicted under the chosen weights
    assert choice.result.objectives["utility"] == pytest.approx(t["utility"][row], abs=TOL)
    assert choice.result.objectives["worst"] == pytest.approx(t["worst"][row], abs=TOL)


SEEDS = range(6)
SURROGATES = ["weighted", "softvote", "ensemble"]


@pytest.mark.parametrize("surrogate", SURROGATES)
@pytest.mark.parametrize("seed", SEEDS)
def test_eps_chooses_the_enumerated_best_pair(seed, surrogate):
    p = _round(seed, surrogate)
    t = _pairs(p, FAMILY)
    for q in (0.1, 0.4, 1.0):  # ε at quantiles of the pairs' gaps: tight to unconstrained
        eps = float(np.quantile(t["gap"], q))
        choice = choose_jointly(EpsSolver(eps=eps), p)
        _check(t, FAMILY, choice, t["gap"] <= eps + 1e-9, [("utility", 1), ("gap", -1)])


@pytest.mark.parametrize("surrogate", SURROGATES)
@pytest.mark.parametrize("seed", SEEDS)
def test_maxmin_floors_the_average_at_the_best_pair(seed, surrogate):
    """max worst(S, w) s.t. U(S, w) >= U*_J − δ, U*_J the best U of any pair; then max U."""
    p = _round(seed, surrogate)
    t = _pairs(p, FAMILY)
    u_star = t["utility"].max()
    for delta in (0.0, 1.0, 4.0):
        choice = choose_jointly(MaxminSolver(delta=delta), p)
        mask = t["utility"] >= u_star - delta - 1e-9
        _check(t, FAMILY, choice, mask, [("worst", 1), ("utility", 1)])
        assert choice.result.param == f"delta={delta:g}"


@pytest.mark.parametrize("surrogate", SURROGATES)
@pytest.mark.parametrize("seed", SEEDS)
def test_fisher_fair_floors_the_worst_domain_at_the_best_pair(seed, surrogate):
    p = _round(seed, surrogate)
    t = _pairs(p, FAMILY)
    worst_star = t["worst"].max()
    for delta in (0.0, 2.0, math.inf):
        choice = choose_jointly(FisherFairSolver(delta=delta), p)
        mask = t["worst"] >= worst_star - delta - 1e-9
        _check(t, FAMILY, choice, mask, [("sum_Fz", 1), ("utility", 1)])


@pytest.mark.parametrize("surrogate", SURROGATES)
@pytest.mark.parametrize("seed", SEEDS)
def test_eps_rel_places_eps_on_the_pairs_gap_range(seed, surrogate):
    p = _round(seed, surrogate)
    t = _pairs(p, FAMILY)
    g_min = t["gap"].min()
    top = np.flatnonzero(np.isclose(t["utility"], t["utility"].max(), rtol=0, atol=1e-9))
    g_top = t["gap"][top].min()
    for alpha in (0.0, 0.5):
        eps = g_min + alpha * (g_top - g_min) + 1e-9
        choice = choose_jointly(EpsRelSolver(alpha=alpha), p)
        _check(t, FAMILY, choice, t["gap"] <= eps + 1e-9, [("utility", 1), ("gap", -1)])
        assert choice.result.method == "eps-rel"


@pytest.mark.parametrize("surrogate", ["weighted", "softvote"])
@pytest.mark.parametrize("seed", SEEDS)
def test_a_weighted_sum_keeps_its_selection_and_takes_the_weights_of_highest_u(seed, surrogate):
    """The weighted sum of per-client scores is the same under every w: S is its top-K, w the
    rule with the highest U(S, w) (the stated tie-break), as the enumeration of (score, U,
    worst) says."""
    p = _round(seed, surrogate)
    t = _pairs(p, FAMILY)
    solver = WeightedSolver(weights=(1.0, 1.0, 0.5))
    t["score"] = solver.scores(p)[t["idx"]].sum(axis=1)
    choice = choose_jointly(solver, p)
    _check(t, FAMILY, choice, np.ones(len(t["rule"]), bool), [("score", 1), ("utility", 1)])
    assert choice.result.selected == solver.solve(p).selected


@pytest.mark.parametrize("cls", [LongTermEpsSolver, LongTermFisherSolver])
@pytest.mark.parametrize("surrogate", ["weighted", "softvote"])
@pytest.mark.parametrize("seed", SEEDS)
def test_long_term_maximizes_the_rounds_drift_plus_penalty_over_its_family(seed, surrogate, cls):
    """V·P(S, w) − Σ_d Q_d (Ū − U_d − ε) from the round's starting queues, over the rules
    under which the surrogate stays linear or linear-fractional (samples, uniform); the
    queues then move as the chosen rule's solve alone moves them."""
    p = _round(seed, surrogate)
    rules = family_of(cls, p)
    assert rules == ("samples", "uniform")
    rng = np.random.default_rng(seed)
    queues = {d: float(rng.uniform(0, 30)) for d in p.domains}
    solver = cls(eps=2.0, V=float(rng.uniform(1, 20)), queues=queues)
    t = _pairs(p, rules)
    q = np.array([queues[d] for d in p.domains])
    P = np.empty(len(t["rule"]))
    for j, rule in enumerate(rules):  # P(S, w) = Σ p_i v_i, v the formulation's values
        pr = p.with_aggregation(rule)
        v = solver.penalty_values(pr, pr.surrogate_model.client_values(pr)[0])
        rows = t["rule"] == j
        w = pr.surrogate_model.pick_weights(pr, t["idx"][rows])
        P[rows] = (w * np.asarray(v, float)[t["idx"][rows]]).sum(axis=1)
    g = t["Ud"].mean(axis=1, keepdims=True) - t["Ud"] - 2.0
    t["dpp"] = solver.V * P - g @ q
    choice = choose_jointly(solver, p)
    _check(t, rules, choice, np.ones(len(P), bool), [("dpp", 1)])
    alone = cls(eps=2.0, V=solver.V, queues=queues)
    assert alone.solve(p.with_aggregation(choice.rule)).selected == choice.result.selected
    assert solver.state() == pytest.approx(alone.state())


def test_the_rules_disagree_somewhere():
    """Not a vacuous check: on these rounds the chosen weights differ from sample weights."""
    chosen = set()
    for seed in SEEDS:
        p = _round(seed, "weighted")
        for delta in (0.0, 4.0):
            chosen.add(str(choose_jointly(MaxminSolver(delta=delta), p).rule))
        chosen.add(str(choose_jointly(EpsSolver(eps=None), p).rule))
    assert {"samples"} < chosen, chosen


# ------------------------------------------------------------------ the spec
def test_a_spec_with_agg_best_parses_and_prints_canonically():
    s = parse_spec("eps-lt:5@agg=best+weighted+probe")
    assert s.canonical == "eps-lt:5@probe+weighted+agg=best"
    assert parse_spec(s.canonical) == s and s.aggregation is AggregationChoice.BEST
    assert parse_spec("maxmin:2.0 @ agg=best + ensemble").canonical == "maxmin:2@ensemble+agg=best"


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("eps:5@agg=best", "the mean surrogate models no aggregate; use weighted, ensemble, "
                           "softvote, e.g. eps:5@weighted+agg=best"),
        ("eps:5@probe+agg=best", "models no aggregate"),
        ("oort:0.9@weighted+agg=best", "oort is a baseline rule"),
        ("fisher-topk@agg=best", "fisher-topk is a baseline rule"),
        ("nsga2@weighted+agg=best", "(weighted, eps, eps-rel, maxmin, fisher-fair, eps-lt, "
                                    "fisher-lt); nsga2 does not"),
        ("eps:5@ensemble+verify+agg=best", "verify measures one weighting's candidates"),
        ("eps-lt:5@ensemble+agg=best", "eps-lt needs a linear or linear-fractional surrogate"),
        ("eps:5@agg=bets", "one of samples, uniform, domain, best"),
        ("eps:5@weighted+xyz", "not an information model, surrogate, verify or agg="),
    ],
)  # fmt: skip
def test_a_spec_that_cannot_choose_its_weights_is_refused_in_one_line(spec, needle):
    with pytest.raises(SelectionError) as err:
        parse_spec(spec)
    text = str(err.value)
    assert needle in text and "\n" not in text, text


def test_the_methods_listing_names_the_choice():
    """--selector's help sends to fedsel methods, whose modifiers name every agg= rule."""
    from selection.specs import modifier_help

    assert "fedsel methods" in selector_help()
    text = dict(modifier_help())["agg=RULE"]
    assert "the picks' aggregation weights: samples, uniform, domain, best;" in text
    assert "agg=best chooses them with the picks (with a surrogate of the aggregate" in text


# ------------------------------------------------------------------ the selector
def test_the_selector_commits_the_chosen_pair_and_weighs_its_picks_by_it():
    table = synthetic_stats(10, seed=3)
    table["n_samples"] = np.random.default_rng(3).integers(5, 800, 10)
    sel = make_selector("maxmin:0@weighted+agg=best")
    ids = sel(table, 4)
    rule = sel.chosen_aggregation
    assert rule in FAMILY
    plain = SelectionProblem.from_stats(table, 4)  # the driver's problem: sizes and domains
    assert sel.aggregation_weights(plain, ids) == pytest.approx(pick_weights(rule, plain, ids))
    judged = SelectionProblem.from_stats(table, 4, surrogate="weighted").with_aggregation(rule)
    assert sel.last.objectives == pytest.approx(evaluate(judged, sel.last.selected))
    assert f"weights {rule}" in sel.last.message


def test_an_eps_no_pair_meets_falls_back_to_the_smallest_gap_pair():
    p = _round(1, "weighted")
    t = _pairs(p, FAMILY)
    sel = make_selector("eps:0@weighted+agg=best")
    ids = sel.choose(p)
    assert sel.fallback and sel.chosen_aggregation in FAMILY
    best_gap, best_u = _lex_best(t, np.ones(len(t["rule"]), bool), [("gap", -1), ("utility", 1)])
    assert sel.last.objectives["gap"] == pytest.approx(best_gap, abs=TOL)
    assert sel.last.objectives["utility"] == pytest.approx(best_u, abs=TOL)
    want = aggregation_weights(
        sel.chosen_aggregation, ids, [p.n_samples[list(p.ids).index(c)] for c in ids],
        [p.client_domains[list(p.ids).index(c)] for c in ids],
    )  # fmt: skip
    assert sel.aggregation_weights(p, ids) == pytest.approx(want)


def test_a_surrogate_under_a_rule_travels_to_a_worker_process():
    import pickle

    q = _round(0, "weighted").with_aggregation("domain")
    back = pickle.loads(pickle.dumps(q.surrogate))
    assert back == "weighted[agg=domain]" and back.model is q.surrogate.model


# ------------------------------------------------------------------ the drivers
def test_the_loop_commits_and_records_the_chosen_weights():
    pytest.importorskip("fl_oracle.experiments.loop")
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run

    from helpers import fake_oracle as fake

    oracle = fake.FakeOracle(0, clients_per_domain=2)
    sel = make_selector("maxmin:1@weighted+agg=best", seed=0)
    seen = []
    own = sel.aggregation_weights

    def spy(problem, ids):  # what the round's choice gave the driver
        w = own(problem, ids)
        seen.append((list(ids), sel.chosen_aggregation, w))
        return w

    sel.aggregation_weights = spy
    h = run_training(
        oracle, plan_run(sel, rounds=3, k=3, name="x", stats_mode=sel.spec.information)
    ).history
    table = oracle.clients.set_index("client_id")
    assert len(seen) == len(oracle.steps) == 3
    for (picked, weights), recorded, (ids, rule, w) in zip(
        oracle.steps, h["agg_weights"], seen, strict=True
    ):
        want = aggregation_weights(
            rule, picked, table.loc[picked, "n_samples"], table.loc[picked, "domain"]
        )
        assert ids == picked and weights == pytest.approx(want) and w == pytest.approx(want)
        assert np.allclose([float(x) for x in recorded.split(";")], [want[c] for c in picked],
                           rtol=1e-5)  # fmt: skip


def test_fedsel_train_runs_a_spec_that_chooses_its_weights(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    import fl_oracle.cli.train as cli_train
    from fl_oracle.sim.config import OracleConfig
    from fl_oracle.sim.oracle import Oracle

    from helpers import fake_oracle as fake
    from helpers.cli import run_fedsel

    data = fake.tiny_data()

    def config(seed, federation=None, **kw):
        return OracleConfig(seed=int(seed), **{**fake.tiny_overrides(), "lr": 0.2})

    monkeypatch.setattr(cli_train, "make_config", config)
    monkeypatch.setattr(cli_train, "make_oracle", lambda c, data_=None, **_: Oracle(c, data=data))
    out = tmp_path / "run"
    spec = "maxmin:2@weighted+agg=best"
    code, _, err = run_fedsel(
        ["train", "--selector", spec, "--k", 3, "--rounds", 2, "--seed", 1, "--out", out,
         "--no-progress"], capsys,
    )  # fmt: skip
    assert code == 0, err
    h = pd.read_csv(out / "history.csv", keep_default_na=False)
    assert len(h) == 2 and set(h["selector"]) == {spec}
    for picked, recorded in zip(h["selected"], h["agg_weights"], strict=True):
        w = [float(x) for x in recorded.split(";")]
        assert len(w) == len(picked.split(";")) == 3 and sum(w) == pytest.approx(1.0, abs=1e-5)


def test_the_rounds_predicted_objectives_are_under_the_weights_chosen_with_the_picks():
    """The history's pred_* of an agg=best round are the solver's own objectives of the pair
    (S, w) it chose, not those under the default sample weights."""
    from fl_oracle.experiments.round_step import choose_round
    from selection.example import example_stats
    from selection.selectors import make_selector

    stats = example_stats()
    for spec in ("maxmin:2@weighted+agg=best", "eps:10@weighted+agg=best"):
        sel = make_selector(spec)
        choice = choose_round(sel, stats[stats["round"] == 2], 5, name=spec, where="round 2",
                              surrogate="weighted")  # fmt: skip
        assert sel.chosen_aggregation is not None
        for key in ("utility", "worst", "gap"):
            assert choice.pred[key] == pytest.approx(sel.last.objectives[key], abs=1e-9)
