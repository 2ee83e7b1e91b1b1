"""Selectors built from spec strings: valid ids, fallbacks, errors, randomness per selector."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.selectors import make_selector, split_specs
from selection.solvers.exhaustive import exact_front
from selection.synthetic import synthetic_stats

K = 5
SPECS = [
    "eps:30",
    "maxmin:2",
    "weighted:1,0,0",
    "composite:1,1,1",
    "nsga2:knee",
    "nsga2:min-gap",
    "fisher-topk",
    "random",
    "proportional",
    "power-of-choice:10",
    "qffl:1",
]


@pytest.fixture(scope="module")
def stats() -> pd.DataFrame:
    return synthetic_stats(20, seed=15, rounds=3)


@pytest.fixture(scope="module")
def last_round(stats) -> pd.DataFrame:
    return stats[stats["round"] == 2].reset_index(drop=True)


@pytest.mark.parametrize("spec", SPECS)
def test_each_spec_returns_k_distinct_ids_of_the_last_round(spec, stats, last_round):
    sel = make_selector(spec, seed=1)
    ids = sel(stats, K)
    assert len(ids) == K == len(set(ids))
    assert set(ids) <= set(last_round["client_id"])
    assert ids == [c for c in last_round["client_id"] if c in ids]  # table order
    assert sel.last is not None and sel.last.ok and tuple(ids) == sel.last.ids
    assert sel.last.seconds >= 0 and {"utility", "gap", "worst"} <= set(sel.last.objectives)
    assert sel.fallback == ""


def test_all_returns_every_client(stats, last_round):
    assert make_selector("all")(stats, K) == list(last_round["client_id"])


def test_fisher_topk_takes_the_k_largest_f(last_round):
    ids = make_selector("fisher-topk")(last_round, K)
    assert set(ids) == set(last_round.nlargest(K, "F")["client_id"])


def test_weighted_u_only_takes_the_top_k_by_u(last_round):
    ids = make_selector("weighted:1")(last_round, K)
    assert set(ids) == set(last_round.nlargest(K, "U")["client_id"])


def test_power_of_choice_keeps_the_highest_loss(last_round):
    ids = make_selector("power-of-choice:20")(last_round, K)  # d = N: every client a candidate
    assert set(ids) == set(last_round.nlargest(K, "loss")["client_id"])
    no_loss = last_round.drop(columns="loss")
    ids = make_selector("power-of-choice:20")(no_loss, K)
    assert set(ids) == set(no_loss.nsmallest(K, "U")["client_id"])
    with pytest.raises(SelectionError, match="d=3 must be at least k=5"):
        make_selector("power-of-choice:3")(last_round, K)


def test_proportional_favours_large_clients(last_round):
    big = last_round.copy()
    big.loc[3, "n_samples"] = 10_000_000
    sel = make_selector("proportional", seed=0)
    assert all(big.loc[3, "client_id"] in sel(big, K) for _ in range(10))


def test_qffl_exposes_q_and_others_do_not(last_round):
    assert make_selector("qffl:2.5").aggregation_q == 2.5
    assert make_selector("random").aggregation_q is None


def test_infeasible_eps_falls_back_to_the_smallest_gap_point(last_round):
    problem = SelectionProblem.from_stats(last_round, K)
    front = exact_front(problem)
    best = front.sort_values(["gap", "utility"], ascending=[True, False]).iloc[0]
    sel = make_selector("eps:0")
    ids = sel(last_round, K)
    assert "fell back to the smallest-gap point" in sel.fallback and "eps:0" in sel.fallback
    assert sel.last.objectives["gap"] == pytest.approx(best["gap"], abs=1e-6)
    assert sel.last.objectives["utility"] == pytest.approx(best["utility"], abs=1e-6)
    assert ";".join(ids) == best["selected"]
    # a later feasible call clears the message
    sel2 = make_selector("eps:100")
    sel2(last_round, K)
    assert sel2.fallback == ""


def test_randomness_is_per_selector_and_seeded(last_round):
    a = make_selector("random", seed=4)
    b = make_selector("random", seed=4)
    c = make_selector("random", seed=5)
    seq_a = [tuple(a(last_round, K)) for _ in range(5)]
    assert seq_a == [tuple(b(last_round, K)) for _ in range(5)]
    assert seq_a != [tuple(c(last_round, K)) for _ in range(5)]
    assert len(set(seq_a)) > 1  # successive rounds differ


@pytest.mark.parametrize(
    "spec,fragment",
    [
        ("", "empty"),
        ("eps", "eps needs a value"),
        ("eps:x", "'x' is not a number"),
        ("eps:-1", ">= 0"),
        ("maxmin:nan", ">= 0"),
        ("weighted", "needs comma-separated weights"),
        ("weighted:1,a", "'a'"),
        ("weighted:0,0", "all zero"),
        ("nsga2:middle", "pick='middle'"),
        ("random:3", "random takes no argument"),
        ("power-of-choice", "needs a value"),
        ("power-of-choice:2.5", "integer"),
        ("qffl", "needs a value"),
    ],
)
def test_bad_specs_raise_naming_spec_and_forms(spec, fragment):
    """One short line: the offending part and "see fedsel methods" (it listed every form, a
    410-620-character line)."""
    with pytest.raises(SelectionError) as info:
        make_selector(spec)
    msg = str(info.value)
    assert fragment in msg and f"{spec!r}" in msg and msg.endswith("(see fedsel methods)")
    assert "valid forms" not in msg and len(msg) < 160, msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("eps:abc", "'abc' is not a number; its form: eps:E (see fedsel methods)"),
        ("eps:5@later", "unknown modifier 'later': not an information model, surrogate, verify"),
        ("eps:5@", "an empty modifier"),
        ("maxmin:2@probe+probe", "two information model modifiers (see fedsel methods)"),
        ("eps-lt:5@agg=nonsense", "aggregation 'nonsense'"),
        ("eps:5@stale=3", "modifier 'stale' takes no value (see fedsel methods)"),
    ],
)
def test_a_bad_spec_is_one_short_line_naming_its_fault(spec, said):
    with pytest.raises(SelectionError) as info:
        make_selector(spec)
    msg = str(info.value)
    assert said in msg and "\n" not in msg and len(msg) < 160, msg
    assert msg.endswith("(see fedsel methods)") and "valid forms" not in msg


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("bogus", "unknown selector 'bogus' (fedsel methods lists every selector)"),
        ("maxmn:2", "unknown selector 'maxmn'; did you mean 'maxmin'?"),
        ("fisher-topc", "did you mean 'fisher-topk'?"),
        ("eps:5@prob", "unknown modifier 'prob'; did you mean 'probe'?"),
        ("eps:5@weigthed", "did you mean 'weighted'?"),
    ],
)
def test_a_typo_gets_a_did_you_mean_on_one_short_line(spec, said):
    with pytest.raises(SelectionError) as info:
        make_selector(spec)
    msg = str(info.value)
    assert said in msg and "\n" not in msg and len(msg) < 200


def test_bad_k_raises(last_round):
    with pytest.raises(SelectionError, match="k=21 exceeds the 20 clients"):
        make_selector("random")(last_round, 21)


def test_nsga2_selector_repeats_for_the_same_seed(last_round):
    a = make_selector("nsga2:knee", seed=2)
    b = make_selector("nsga2:knee", seed=2)
    assert a(last_round, K) == b(last_round, K)
    assert np.isfinite(a.last.objectives["gap"])


@pytest.mark.parametrize(
    ("text", "specs"),
    [
        ("weighted:1,0,0,eps:5", ["weighted:1,0,0", "eps:5"]),
        ("random,bogus", ["random", "bogus"]),
        ("maxmin:2,qffl:1, proportional", ["maxmin:2", "qffl:1", "proportional"]),
        ("composite:0.2,0.3,0.5,nsga2:knee", ["composite:0.2,0.3,0.5", "nsga2:knee"]),
        ("eps:5,0", ["eps:5,0"]),  # a number continues an argument: then refused as a spec
    ],
)
def test_split_specs_keeps_commas_inside_a_spec(text, specs):
    assert split_specs(text) == specs


def test_stratified_quota_per_domain_and_seeded():
    from selection.selectors import stratified_sample

    domains = np.array(["a"] * 5 + ["b"] * 5 + ["c"] * 5 + ["d"] * 5)
    n = np.array([600] * 5 + [72] * 5 + [732] * 5 + [100] * 5, dtype=float)
    for k in (4, 5, 8, 11):
        idx = stratified_sample(domains, n, k, np.random.default_rng(0))
        counts = np.bincount(np.searchsorted(["a", "b", "c", "d"], domains[idx]), minlength=4)
        assert len(set(idx)) == k and counts.min() >= k // 4 and counts.max() <= k // 4 + 1
    a = stratified_sample(domains, n, 5, np.random.default_rng(1))
    b = stratified_sample(domains, n, 5, np.random.default_rng(1))
    assert a.tolist() == b.tolist()
    # a small domain with fewer clients than its quota gives all it has
    small = np.array(["a"] * 8 + ["b"])
    idx = stratified_sample(small, np.ones(9), 6, np.random.default_rng(0))
    assert (small[idx] == "b").sum() == 1 and len(idx) == 6


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ([0, 0, 1], "returned client 0 twice"),
        ([0, -1, 2], "returned client index -1, outside"),
        ([0, 1, 99], "returned client index 99, outside"),
        ([0.0, 1.0, 2.0], "not a whole client index"),
        ([0, 1], "returned 2 clients, expected k=3"),
    ],
)
def test_a_plugin_rules_answer_is_checked_like_a_built_ins(answer, said, monkeypatch):
    """A rule's pick (a plugin's included) must be K distinct whole indices in range: a
    repeated client, a negative index numpy would wrap, an index past N, floats and a short
    answer are refused with one line naming the rule (they ran, or tracebacked)."""
    from selection.baselines.uniform import Uniform
    from selection.synthetic import synthetic_stats

    monkeypatch.setattr(Uniform, "pick", lambda self, problem, rng: np.array(answer))
    with pytest.raises(SelectionError, match=said) as info:
        make_selector("random")(synthetic_stats(6, seed=0, rounds=1), 3)
    assert "baseline random" in str(info.value) and "\n" not in str(info.value)


def test_a_formulation_returning_one_client_k_times_is_refused_not_optimal():
    from selection.example import small_problem
    from selection.solvers.base import Solver
    from selection.solvers.result import RawResult, Status

    class Repeats(Solver):
        name = "repeats"

        def _solve(self, problem):
            return RawResult((1,) * problem.k, Status.OPTIMAL, backend="hand")

    with pytest.raises(SelectionError, match="repeats: returned client 1 twice"):
        Repeats().solve(small_problem())


@pytest.mark.parametrize("spec", ["eps-lt:5@ensemble", "fisher-lt:5@stale+ensemble"])
def test_a_long_term_formulation_on_a_black_box_surrogate_is_refused_at_parse(spec):
    """Refused when the spec is read, not in round 0 after training (and, in a study, after
    another entry's run)."""
    from selection.specs import parse_spec

    with pytest.raises(SelectionError, match="needs a linear or linear-fractional surrogate"):
        parse_spec(spec)
    pytest.importorskip("fl_oracle.experiments.study.settings")
    from fl_oracle.experiments.study.settings import StudySettings

    with pytest.raises(ValueError, match="linear-fractional surrogate"):
        StudySettings(selectors=("proportional", spec))
