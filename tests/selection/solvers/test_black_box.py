"""The ``search`` route of a black-box surrogate (the logit ensemble): ``auto`` takes it above
the enumeration limit and says so; its answers meet the formulation's rows, never beat
enumeration's optimum, reach it on small instances, stay below the proven bound, and repeat
with the seed."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.selectors import make_selector
from selection.solvers.black_box import Goal, first_bound, search
from selection.solvers.eps import EpsSolver, min_gap_point
from selection.solvers.exhaustive import best_delta, best_eps, best_fisher_fair, exact_front
from selection.solvers.fisher_fair import FisherFairSolver
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.min_gap import MinGapSolver
from selection.synthetic_logits import synthetic_logits


def _ensemble(n: int, k: int, seed: int = 0, samples: int = 40) -> SelectionProblem:
    table, logits = synthetic_logits(n, seed=seed, samples_per_domain=samples)
    return SelectionProblem.from_stats(table, k, surrogate="ensemble", logits=logits)


def test_auto_takes_the_search_route_above_the_enumeration_limit():
    p = _ensemble(16, 3)
    eps = float(exact_front(p)["gap"].median())
    assert EpsSolver(eps=eps).route(p) == "enum"
    route, why = EpsSolver(eps=eps, enum_limit=0).route_choice(p)
    assert route == "search" and "black-box: swap local search" in why
    r = EpsSolver(eps=eps, enum_limit=0).solve(p)
    assert r.backend == "search" and r.status == "feasible" and r.route_reason == why
    assert r.objectives["gap"] <= eps + 1e-9
    assert r.objectives["utility"] <= r.bound <= 100.0
    assert "neighbours" in r.message


@pytest.mark.parametrize("seed", range(4))
def test_search_reaches_the_enumeration_optimum_on_small_instances(seed):
    p = _ensemble(9, 3, seed=seed)
    eps = float(exact_front(p)["gap"].median())
    eps_ = EpsSolver(eps=eps, enum_limit=0, seed=seed).solve(p)
    want = evaluate(p, best_eps(p, eps))
    assert eps_.objectives["utility"] == pytest.approx(want["utility"])
    assert eps_.objectives["gap"] <= eps + 1e-9
    mm = MaxminSolver(delta=2.0, enum_limit=0, seed=seed).solve(p)
    assert mm.objectives["worst"] == pytest.approx(evaluate(p, best_delta(p, 2.0))["worst"])
    ff = FisherFairSolver(delta=2.0, enum_limit=0, seed=seed).solve(p)
    assert ff.objectives["sum_Fz"] == pytest.approx(evaluate(p, best_fisher_fair(p, 2.0))["sum_Fz"])
    mg = MinGapSolver(enum_limit=0, seed=seed).solve(p)
    assert mg.backend == "search"
    assert mg.objectives["gap"] == pytest.approx(MinGapSolver().solve(p).objectives["gap"])


def test_a_short_search_never_beats_enumeration_and_meets_its_rows():
    p = _ensemble(14, 4, seed=5)
    goal = Goal((("utility", 1.0), ("gap", -1.0)), (("gap", -np.inf, 3.0),))
    out = search(p, goal, evaluations=200, seed=0)
    best = evaluate(p, best_eps(p, 3.0))
    if out.feasible:
        got = evaluate(p, out.selected)
        assert got["gap"] <= 3.0 + 1e-9 and got["utility"] <= best["utility"] + 1e-9
    assert out.evaluations >= 200 and out.stopped == "budget"


def test_same_seed_same_selection_other_seed_other_walk():
    p = _ensemble(60, 6, seed=2)
    goal = Goal((("utility", 1.0), ("gap", -1.0)), (("gap", -np.inf, 4.0),))
    a, b, c = (search(p, goal, evaluations=3000, seed=s) for s in (0, 0, 1))
    assert a.selected == b.selected and a.rank == b.rank
    assert c.selected != a.selected


def test_the_bounds_hold_for_every_selection():
    p = _ensemble(9, 3, seed=7)
    every = [evaluate(p, s) for s in itertools.combinations(range(p.n), p.k)]
    U = max(e["utility"] for e in every)
    worst = max(e["worst"] for e in every)
    gap = min(e["gap"] for e in every)
    assert U <= first_bound(p, "utility") + 1e-9
    assert worst <= first_bound(p, "worst") + 1e-9
    assert gap >= first_bound(p, "gap") - 1e-9
    eps = 5.0
    U_eps = max(e["utility"] for e in every if e["gap"] <= eps)
    assert U_eps <= first_bound(p, "utility", eps) + 1e-9


def test_selectors_and_the_fallback_take_the_route():
    table, logits = synthetic_logits(40, seed=3, samples_per_domain=40)
    sel = make_selector("eps:5@ensemble")
    ids = sel(table, 6, logits=logits)
    assert len(ids) == 6 and sel.last.backend == "search"
    p = SelectionProblem.from_stats(table, 6, surrogate="ensemble", logits=logits)
    point = min_gap_point(p)  # C(40, 6) = 3.8 million > the enumeration limit
    assert point.backend == "search" and point.ok and point.bound <= point.objectives["gap"]
    rel = make_selector("eps-rel:0.5@ensemble")
    assert len(rel(table, 6, logits=logits)) == 6 and rel.last.backend == "search"
