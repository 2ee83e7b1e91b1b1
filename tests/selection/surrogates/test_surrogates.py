"""Surrogates of U(S), U_d(S): registry, values by hand, every exact route on ``weighted``
against enumeration, ensemble by brute force, and verified picks."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.logits import ValidationLogits, read_logits, write_logits
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.selectors import make_selector, parse_spec
from selection.solvers.base import SweepOptions
from selection.solvers.exhaustive import (
    best_delta,
    best_eps,
    best_fisher_fair,
    eps_rule,
    top_selections,
)
from selection.surrogates import get_surrogate, surrogates
from selection.synthetic import synthetic_stats

ROUTES = ("highs", "cbc", "cpsat")


def _table(n: int, seed: int) -> pd.DataFrame:
    df = synthetic_stats(n, seed=seed)
    rng = np.random.default_rng(seed + 100)
    df["n_samples"] = rng.integers(2, 40, n)  # small sizes: distinct ratios stay far apart
    ucols = [c for c in df.columns if c.startswith("U")]
    df[ucols] = df[ucols].round(2)
    return df


def _weighted(n=9, k=3, seed=0) -> SelectionProblem:
    return SelectionProblem.from_stats(_table(n, seed), k, surrogate="weighted")


def test_registry_declares_structures():
    s = surrogates()
    assert list(s)[:3] == ["mean", "weighted", "ensemble"]
    assert [s[n].structure for n in ("mean", "weighted", "ensemble")] == [
        "linear",
        "linear-fractional",
        "black-box",
    ]
    with pytest.raises(SelectionError, match="unknown surrogate 'nope'"):
        get_surrogate("nope")


def test_weighted_values_by_hand():
    p = _weighted()
    sel = [0, 3, 5]
    n = p.n_samples[sel].astype(float)
    want = (n / n.sum()) @ p.Ud[sel]
    got = evaluate(p, sel)
    for j, d in enumerate(p.domains):
        assert got[f"U_{d}"] == pytest.approx(want[j], abs=1e-12)
    assert got["utility"] == pytest.approx((n / n.sum()) @ p.U[sel], abs=1e-12)
    assert got["gap"] == pytest.approx(want.max() - want.min(), abs=1e-12)
    # the block and matrix forms agree
    idx = np.array(list(itertools.combinations(range(p.n), p.k)))
    X = np.zeros((len(idx), p.n))
    np.put_along_axis(X, idx, 1.0, axis=1)
    sur = get_surrogate("weighted")
    U1, Ud1 = sur.block(p, idx)
    U2, Ud2 = sur.matrix(p, X)
    np.testing.assert_allclose(U1, U2, atol=1e-10)
    np.testing.assert_allclose(Ud1, Ud2, atol=1e-10)


def test_mean_is_unchanged_by_the_surrogate_layer():
    df = _table(8, 1)
    p = SelectionProblem.from_stats(df, 3)
    sel = [1, 2, 6]
    assert evaluate(p, sel)["utility"] == pytest.approx(p.U[sel].mean(), abs=1e-12)
    assert p.surrogate == "mean"


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("route", ROUTES)
def test_weighted_eps_every_route_equals_enumeration(route, seed):
    from selection.solvers.eps import EpsSolver

    p = _weighted(seed=seed)
    gaps = sorted({round(g, 6) for g in _all_gaps(p)})
    for eps in (None, gaps[len(gaps) // 2], gaps[len(gaps) // 5], gaps[0] + 1e-4):
        want = best_eps(p, eps)
        r = EpsSolver(eps=eps, backend=route).solve(p)
        assert r.ok and want
        ow, og = evaluate(p, want), r.objectives
        assert og["utility"] == pytest.approx(ow["utility"], abs=1e-6), (route, eps)
        assert og["gap"] == pytest.approx(ow["gap"], abs=1e-5), (route, eps)
        assert og["gap"] <= (np.inf if eps is None else eps + 1e-6)


def _all_gaps(p):
    from selection.solvers.exhaustive import enumerate_table

    return enumerate_table(p)["gap"]


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("route", ROUTES)
def test_weighted_maxmin_and_fisher_fair_every_route_equal_enumeration(route, seed):
    from selection.solvers.fisher_fair import FisherFairSolver
    from selection.solvers.maxmin import MaxminSolver

    p = _weighted(seed=seed)
    for delta in (0.0, 1.0, 4.0, np.inf):
        want = evaluate(p, best_delta(p, delta))
        got = MaxminSolver(delta=delta, backend=route).solve(p).objectives
        assert got["worst"] == pytest.approx(want["worst"], abs=1e-6), (route, delta)
        assert got["utility"] == pytest.approx(want["utility"], abs=1e-6), (route, delta)
        want = evaluate(p, best_fisher_fair(p, delta))
        got = FisherFairSolver(delta=delta, backend=route).solve(p).objectives
        assert got["sum_Fz"] == pytest.approx(want["sum_Fz"], abs=1e-6), (route, delta)
        assert got["utility"] == pytest.approx(want["utility"], abs=1e-6), (route, delta)


def test_weighted_complete_sweep_equals_the_exact_front():
    from selection.solvers.exhaustive import exact_front
    from selection.solvers.sweeps import sweep_eps

    p = _weighted(n=10, k=3, seed=4)
    exact = exact_front(p, ("utility", "gap"))
    for route in ("highs", "cbc"):
        front = sweep_eps(p, complete=True, options=SweepOptions(backend=route))
        front = front[front["status"] == "optimal"].sort_values("utility", ascending=False)
        np.testing.assert_allclose(front["utility"], exact["utility"], atol=1e-6)
        np.testing.assert_allclose(front["gap"], exact["gap"], atol=1e-5)


def _logits_problem(n=7, k=3, seed=0, S=60, C=4):
    rng = np.random.default_rng(seed)
    df = _table(n, seed)
    doms = sorted(df["domain"].unique())
    z = rng.normal(size=(n, S, C)).astype(np.float16)
    y = rng.integers(0, C, S)
    dom = np.arange(S) % len(doms)
    z[:, : S // 3] = z[:1, : S // 3]  # a third of the samples: every model agrees
    lg = ValidationLogits(0, df["client_id"].to_numpy(str), z, y, dom, tuple(doms))
    return df, lg


def test_ensemble_equals_brute_force_argmax(tmp_path):
    df, lg = _logits_problem()
    write_logits(lg, tmp_path / "r.npz")
    back = read_logits(tmp_path / "r.npz")
    assert np.array_equal(back.z, lg.z) and back.domains == lg.domains
    p = SelectionProblem.from_stats(df, 3, surrogate="ensemble", logits=back)
    z = lg.z.astype(np.float64)
    for sel in itertools.combinations(range(p.n), 3):
        w = p.n_samples[list(sel)].astype(np.float64)
        L = np.einsum("k,ksc->sc", w / w.sum(), z[list(sel)])
        Ly = L[np.arange(len(lg.y)), lg.y]
        rival = L.copy()
        rival[np.arange(len(lg.y)), lg.y] = -np.inf
        margin = Ly - rival.max(1)
        # float32 sums (the surrogate's) may decide a near-tie either way, nothing else
        sure, near = margin > 1e-4, np.abs(margin) <= 1e-4
        got = evaluate(p, sel)
        for d in [*p.domains, None]:
            m = np.ones(len(lg.y), bool) if d is None else lg.domain == lg.domains.index(d)
            key = "utility" if d is None else f"U_{d}"
            lo, hi = 100 * sure[m].mean(), 100 * (sure | near)[m].mean()
            assert lo - 1e-9 <= got[key] <= hi + 1e-9, (sel, key)


def test_ensemble_needs_logits_and_milp_routes_refuse_it():
    df, lg = _logits_problem()
    with pytest.raises(SelectionError, match="needs the round's validation logits"):
        SelectionProblem.from_stats(df, 3, surrogate="ensemble")
    p = SelectionProblem.from_stats(df, 3, surrogate="ensemble", logits=lg)
    from selection.solvers.maxmin import MaxminSolver

    with pytest.raises(SelectionError, match="black-box: the cbc MILP route cannot take it"):
        MaxminSolver(delta=1, backend="cbc").solve(p)
    r = MaxminSolver(delta=1).solve(p)  # auto enumerates
    assert r.ok and r.selected == best_delta(p, 1.0)


def test_top_selections_are_ranked_and_the_first_is_the_answer():
    p = _weighted(seed=2)
    gaps = np.sort(_all_gaps(p))
    eps = float(gaps[len(gaps) // 2])
    top = top_selections(p, eps_rule(eps), 6)
    assert top[0] == best_eps(p, eps)
    U = [evaluate(p, s)["utility"] for s in top]
    assert U == sorted(U, reverse=True) and len(set(top)) == 6
    assert all(evaluate(p, s)["gap"] <= eps + 1e-9 for s in top)


def test_verified_pick_commits_the_best_realized_candidate():
    df = _table(8, 5)
    sel = make_selector("maxmin:2@weighted+verify=4")
    assert sel.surrogate == "weighted" and sel.verify == 4
    p = SelectionProblem.from_stats(df, 3, surrogate="weighted")
    cands = sel._make(0).candidates(p, 4)
    # a fake "true aggregate": the last candidate is realized best on the worst domain
    best = tuple(cands[-1])

    def evaluate_aggregate(ids):
        idx = tuple(int(np.flatnonzero(p.ids == c)[0]) for c in ids)
        bonus = 30.0 if tuple(sorted(idx)) == best else 0.0
        return 60.0, np.full(p.d, 40.0 + bonus)

    sel.evaluator = evaluate_aggregate
    ids = sel.choose(p)
    assert tuple(sorted(int(np.flatnonzero(p.ids == c)[0]) for c in ids)) == best
    assert sel.last.objectives["realized_worst"] == 70.0
    assert "candidate 4 of 4" in sel.last.message


@pytest.mark.parametrize(
    ("a", "b"),
    [("eps:5@mean", "eps:5"), ("eps:5@verify+ensemble", "eps:5@ensemble+verify")],
)
def test_specs_have_one_canonical_form(a, b):
    assert parse_spec(a).canonical == parse_spec(b).canonical


def test_bad_modifiers_are_refused():
    with pytest.raises(SelectionError, match="unknown modifier 'later'"):
        parse_spec("eps:5@later")
    with pytest.raises(SelectionError, match="two surrogate modifiers"):
        parse_spec("eps:5@weighted+ensemble")
    with pytest.raises(SelectionError, match="verify needs a formulation"):
        make_selector("random@verify")


@pytest.mark.parametrize(
    ("a", "b"), [("eps:5.0", "eps:5"), ("eps: 5", "eps:5"), ("maxmin:2e0", "maxmin:2"),
                 ("weighted:0.50,0.5", "weighted:0.5,0.5")]
)  # fmt: skip
def test_number_spellings_are_one_spec(a, b):
    assert parse_spec(a).canonical == parse_spec(b).canonical


def test_underscored_numbers_are_refused():
    with pytest.raises(SelectionError, match="without '_'"):
        parse_spec("weighted:0_1")
