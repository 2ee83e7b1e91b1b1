"""eps-rel: ε at a fraction α of the round's own gap range, checked against enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from selection.solvers.exhaustive import ExhaustiveSolver, exact_front
from selection.solvers.registry import make_solver


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ends_of_the_range_are_the_ends_of_the_front(make_problem, seed):
    p = make_problem(12, 4, seed=seed)
    front = exact_front(p)  # (max U, min gap), one row per front point
    lo = make_solver("eps-rel", alpha=0.0).solve(p)
    hi = make_solver("eps-rel", alpha=1.0).solve(p)
    assert lo.objectives["gap"] == pytest.approx(front["gap"].min(), abs=1e-6)
    assert hi.objectives["utility"] == pytest.approx(front["utility"].max(), abs=1e-9)
    assert hi.objectives["gap"] == pytest.approx(front["gap"].max(), abs=1e-6)


@pytest.mark.parametrize("alpha", [0.25, 0.5, 0.75])
def test_middle_equals_the_eps_point_at_the_interpolated_eps(make_problem, alpha):
    p = make_problem(12, 4, seed=7)
    front = exact_front(p)
    g_min, g_top = front["gap"].min(), front["gap"].max()
    eps = g_min + alpha * (g_top - g_min)
    want = ExhaustiveSolver(eps=eps + 1e-9).solve(p)
    got = make_solver("eps-rel", alpha=alpha).solve(p)
    assert got.ok and got.param == f"alpha={alpha:g}"
    assert got.objectives["utility"] == pytest.approx(want.objectives["utility"], abs=1e-9)
    assert got.objectives["gap"] <= eps + 1e-6


def test_alpha_out_of_range_is_refused():
    with pytest.raises(ValueError, match="alpha"):
        make_solver("eps-rel", alpha=1.5)
    with pytest.raises(ValueError, match="alpha"):
        make_solver("eps-rel", alpha=-0.1)


def test_utility_grows_with_alpha(make_problem):
    p = make_problem(14, 4, seed=3)
    u = [make_solver("eps-rel", alpha=a).solve(p).objectives["utility"] for a in (0, 0.5, 1)]
    assert np.all(np.diff(u) >= -1e-9)
