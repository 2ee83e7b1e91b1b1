"""ε-constraint: every backend's complete front equals exhaustive enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection.solvers.base import SweepOptions
from selection.solvers.eps import EpsSolver
from selection.solvers.exhaustive import ExhaustiveSolver, exact_front
from selection.solvers.sweeps import sweep_eps

SETTINGS = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _points(df, cols=("utility", "gap")):
    ok = df[df.status == "optimal"]
    return np.unique(np.round(ok[list(cols)].to_numpy(), 6), axis=0)


@pytest.mark.parametrize("backend", ["highs", "cbc", "scip"])
@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(6, 11),
    k=st.integers(1, 4),
    kind=st.sampled_from(["synthetic", "random"]),
)
def test_complete_front_equals_enumeration(make_problem, backend, seed, n, k, kind):
    p = make_problem(n, k, seed=seed, kind=kind)
    sweep = sweep_eps(p, complete=True, options=SweepOptions(backend=backend))
    np.testing.assert_array_equal(_points(sweep), _points(exact_front(p)))
    assert sweep.status.iloc[-1] == "infeasible" or sweep.gap.iloc[-1] < 1e-6
    assert (sweep.status.iloc[:-1] == "optimal").all()


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(6, 11), k=st.integers(1, 4))
def test_cpsat_complete_front_on_scaled_data(make_problem, seed, n, k):
    # utilities with 3 decimals: CP-SAT's scale 1000 represents them exactly
    p = make_problem(n, k, seed=seed, kind="random", decimals=3)
    sweep = sweep_eps(p, complete=True, options=SweepOptions(backend="cpsat"))
    np.testing.assert_array_equal(_points(sweep), _points(exact_front(p)))


def test_cpsat_on_unscaled_data_within_scaling_error(make_problem):
    p = make_problem(10, 3, seed=11, kind="random")
    for e in (None, 30.0, 12.0):
        a = EpsSolver(eps=e, backend="cpsat").solve(p)
        b = ExhaustiveSolver(eps=e).solve(p)
        assert a.objectives["utility"] == pytest.approx(b.objectives["utility"], abs=1e-3)


def test_auto_uses_enumeration_then_the_milp_fallback(make_problem):
    from selection.solvers.milp.portfolio import AUTO_MILP

    small = make_problem(10, 3)
    assert EpsSolver().route(small) == "enum"
    assert AUTO_MILP == "cbc"  # the faster exact route at N=5000 (results/benchmarks/solvers.md)
    assert EpsSolver(enum_limit=10).route(small) == AUTO_MILP
    assert EpsSolver(eps=5.0).solve(small).backend == "enum"


def test_infeasible_eps_is_a_status_not_an_exception(make_problem):
    p = make_problem(10, 3, seed=2)
    for backend in ("enum", "highs", "cbc", "cpsat"):
        r = EpsSolver(eps=0.0, backend=backend).solve(p)
        assert r.status == "infeasible" and r.selected == () and not r.ok
        assert r.param == "eps=0"


def test_points_are_pareto_optimal_not_weakly(make_problem):
    # at a loose ε several selections reach U*; the second stage must pick the least gap
    p = make_problem(12, 3, seed=5, kind="random", decimals=0)
    from selection.objectives import u_star

    for backend in ("highs", "cbc", "cpsat", "enum"):
        r = EpsSolver(backend=backend).solve(p)
        b = ExhaustiveSolver().solve(p)
        assert r.objectives["utility"] == pytest.approx(u_star(p))
        assert r.objectives["gap"] == pytest.approx(b.objectives["gap"], abs=1e-9)


@pytest.mark.parametrize("backend", ["highs", "cbc", "cpsat", "enum"])
def test_f_min_and_b_max(make_problem, backend):
    p = make_problem(11, 3, seed=8, kind="random", decimals=3)
    # CP-SAT rounds F_z and B to 1/1000: each of the K terms is off by at most 0.5e-3
    slack = 3 * 0.5e-3 + 1e-9 if backend == "cpsat" else 1e-9
    for f_min, b_max in [(0.5, None), (None, 0.6), (0.0, 1.0)]:
        r = EpsSolver(eps=40.0, f_min=f_min, b_max=b_max, backend=backend).solve(p)
        e = ExhaustiveSolver(eps=40.0, f_min=f_min, b_max=b_max).solve(p)
        assert r.objectives["utility"] == pytest.approx(e.objectives["utility"], abs=1e-6)
        if f_min is not None:
            assert r.objectives["sum_Fz"] >= f_min - slack
        if b_max is not None:
            assert r.objectives["sum_B"] <= b_max + slack


def test_with_param_shares_the_persistent_model(make_problem):
    p = make_problem(12, 4, seed=3)
    s = EpsSolver(backend="highs")
    m = s.model(p)
    t = s.with_param(3.0)
    assert t.model(p) is m and t.eps == 3.0 and s.eps is None
    assert t.solve(p).param == "eps=3"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"eps": -0.1},
        {"eps": float("nan")},
        {"eps": "x"},
        {"backend": "gurobi"},
        {"time_limit": 0},
        {"time_limit": -1.0},
        {"f_min": float("inf")},
        {"b_max": -0.2},
        {"seed": -1},
        {"threads": 0},
        {"scale": 0},
        {"mip_gap": 1.5},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        EpsSolver(**kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["highs", "cbc", "cpsat"])
@pytest.mark.parametrize("seed", [0, 1])
def test_larger_complete_fronts_equal_enumeration(make_problem, backend, seed):
    for kind in ("synthetic", "random"):
        p = make_problem(18, 5, seed=seed, kind=kind, decimals=3 if backend == "cpsat" else None)
        sweep = sweep_eps(p, complete=True, options=SweepOptions(backend=backend))
        np.testing.assert_array_equal(_points(sweep), _points(exact_front(p)))
