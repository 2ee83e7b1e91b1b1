"""The soft-vote surrogate: values by hand from the logits, and every exact route against
enumeration (it is linear-fractional, so the MILP routes answer it as they answer
``weighted``)."""

from __future__ import annotations

import numpy as np
import pytest

from selection.logits import ValidationLogits
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.exhaustive import best_delta, best_eps, best_fisher_fair, enumerate_table
from selection.synthetic import synthetic_stats

ROUTES = ("highs", "cbc", "scip", "cpsat")


def _problem(n=9, k=3, seed=0, S=80, C=5) -> SelectionProblem:
    rng = np.random.default_rng(seed)
    df = synthetic_stats(n, seed=seed)
    df["n_samples"] = rng.integers(2, 40, n)
    doms = sorted(df["domain"].unique())
    dom = np.arange(S) % len(doms)
    y = rng.integers(0, C, S)
    # each client's model leans to the truth on its own domain's samples, a little elsewhere
    own = np.array([doms.index(d) for d in df["domain"]])
    z = rng.normal(size=(n, S, C))
    z[np.arange(n)[:, None], np.arange(S)[None, :], y[None, :]] += np.where(
        own[:, None] == dom[None, :], 2.0, 0.5
    )
    lg = ValidationLogits(0, df["client_id"].to_numpy(str), z.astype(np.float16), y, dom,
                          tuple(doms))  # fmt: skip
    return SelectionProblem.from_stats(df, k, surrogate="softvote", logits=lg)


def test_softvote_values_by_hand():
    p = _problem()
    lg = p.logits
    z = lg.z.astype(np.float64)
    prob = np.exp(z) / np.exp(z).sum(axis=2, keepdims=True)
    pt = prob[:, np.arange(len(lg.y)), lg.y]  # (N, S)
    sel = [0, 4, 7]
    w = p.n_samples[sel] / p.n_samples[sel].sum()
    got = evaluate(p, sel)
    for j, d in enumerate(p.domains):
        want = 100 * (w @ pt[sel][:, lg.domain == j].mean(axis=1))
        assert got[f"U_{d}"] == pytest.approx(want, abs=1e-3)
    assert got["utility"] == pytest.approx(100 * (w @ pt[sel].mean(axis=1)), abs=1e-3)
    assert 0 < got["worst"] <= got["utility"] <= 100


def _close(route):
    # CP-SAT solves the probabilities rounded to 1/1000 %: its optimum is the true one's
    # within that rounding (the others solve the true floats)
    return 2e-3 if route == "cpsat" else 1e-6


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("route", ROUTES)
def test_softvote_every_route_equals_enumeration(route, seed):
    from selection.solvers.eps import EpsSolver
    from selection.solvers.fisher_fair import FisherFairSolver
    from selection.solvers.maxmin import MaxminSolver

    p = _problem(seed=seed)
    gaps = sorted({round(g, 6) for g in enumerate_table(p)["gap"]})
    tol = _close(route)
    for eps in (None, gaps[len(gaps) // 2], gaps[len(gaps) // 5]):
        want = evaluate(p, best_eps(p, eps))
        got = EpsSolver(eps=eps, backend=route, enum_limit=0).solve(p)
        assert got.ok, (route, eps, got.message)
        assert got.objectives["utility"] == pytest.approx(want["utility"], abs=tol), (route, eps)
        assert got.objectives["gap"] <= (np.inf if eps is None else eps + tol)
    for delta in (0.0, 2.0, np.inf):
        want = evaluate(p, best_delta(p, delta))
        got = MaxminSolver(delta=delta, backend=route, enum_limit=0).solve(p).objectives
        assert got["worst"] == pytest.approx(want["worst"], abs=tol), (route, delta)
        want = evaluate(p, best_fisher_fair(p, delta))
        got = FisherFairSolver(delta=delta, backend=route, enum_limit=0).solve(p).objectives
        assert got["sum_Fz"] == pytest.approx(want["sum_Fz"], abs=1e-6 + tol), (route, delta)


def test_softvote_as_a_selector_in_the_loop():
    from selection.selectors import make_selector, parse_spec

    assert parse_spec("eps-rel:0.5@stale+softvote").surrogate == "softvote"
    p = _problem()
    sel = make_selector("maxmin:2@softvote")
    picked = sel.choose(p)
    want = best_delta(p, 2.0)
    assert sorted(picked) == sorted(p.ids[list(want)].tolist()) or evaluate(
        p, [list(p.ids).index(c) for c in picked]
    )["worst"] == pytest.approx(evaluate(p, want)["worst"], abs=1e-6)
    with pytest.raises(Exception, match="needs the trained clients' validation logits"):
        parse_spec("eps:5@probe+softvote")
