"""Max-min with an average floor: every backend equals enumeration for each δ of a grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection.objectives import u_star
from selection.problem import SelectionProblem
from selection.solvers.exhaustive import ExhaustiveSolver
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.sweeps import sweep_delta

DELTAS = [0.0, 0.5, 1.0, 2.0, 5.0, 100.0]


@pytest.mark.parametrize("backend", ["highs", "cbc", "cpsat"])
@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 11), k=st.integers(1, 4))
def test_delta_grid_equals_enumeration(make_problem, backend, seed, n, k):
    p = make_problem(n, k, seed=seed, kind="random", decimals=3)
    got = sweep_delta(p, DELTAS, backend=backend)
    ref = sweep_delta(p, DELTAS, backend="enum")
    assert (got.status == "optimal").all()
    np.testing.assert_allclose(got.worst, ref.worst, atol=1e-6)
    np.testing.assert_allclose(got.utility, ref.utility, atol=1e-6)
    assert (got.utility >= u_star(p) - np.array(DELTAS) - 1e-6).all()


def test_delta_zero_keeps_u_star(make_problem):
    p = make_problem(30, 6, seed=1)
    for backend in ("highs", "cbc", "cpsat"):
        r = MaxminSolver(delta=0.0, backend=backend).solve(p)
        assert r.objectives["utility"] == pytest.approx(u_star(p), abs=1e-3)


def test_ties_in_worst_go_to_higher_utility():
    # every selection of two has worst 40 (domain d1); the U column differs
    ud = np.array([[90, 40], [70, 40], [60, 40], [80, 40]], dtype=float)
    df = pd.DataFrame(
        {
            "round": 0,
            "client_id": ["a", "b", "c", "d"],
            "domain": ["d0", "d1", "d0", "d1"],
            "n_samples": 5,
            "U": [50.0, 60.0, 70.0, 55.0],
            "F": [1.0, 2.0, 3.0, 4.0],
            "B": 0.1,
            "cos_g": 0.0,
            "U_d0": ud[:, 0],
            "U_d1": ud[:, 1],
        }
    )
    p = SelectionProblem.from_stats(df, 2)
    for backend in ("enum", "highs", "cbc", "cpsat"):
        r = MaxminSolver(delta=100.0, backend=backend).solve(p)
        assert r.ids == ("b", "c"), backend
        assert r.objectives["worst"] == pytest.approx(40.0)


def test_exhaustive_delta_matches(make_problem):
    p = make_problem(10, 3, seed=4)
    for d in DELTAS:
        a = MaxminSolver(delta=d).solve(p)
        b = ExhaustiveSolver(delta=d).solve(p)
        assert a.selected == b.selected and a.param == f"delta={d:g}"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"delta": -1.0},
        {"delta": None},
        {"delta": float("nan")},
        {"backend": "x"},
        {"time_limit": 0},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        MaxminSolver(**kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["highs", "cbc", "cpsat"])
def test_larger_delta_grid_equals_enumeration(make_problem, backend):
    for seed, kind in [(0, "synthetic"), (1, "random")]:
        p = make_problem(18, 5, seed=seed, kind=kind, decimals=3)
        got = sweep_delta(p, DELTAS, backend=backend)
        ref = sweep_delta(p, DELTAS, backend="enum")
        np.testing.assert_allclose(got.worst, ref.worst, atol=1e-6)
        np.testing.assert_allclose(got.utility, ref.utility, atol=1e-6)
