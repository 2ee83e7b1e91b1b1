"""The smallest-gap point: the bounded route equals enumeration where both run, its bounds hold
where it stops early, and it is deterministic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection.problem import SelectionProblem
from selection.solvers.eps import EpsSolver, min_gap_point
from selection.solvers.exhaustive import exact_front
from selection.solvers.min_gap import MinGapSolver, default_nodes
from selection.solvers.swap_search import SwapData, swap_search
from selection.synthetic import near_tied_stats

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _enumerated(p: SelectionProblem) -> pd.Series:
    """The smallest-gap point of the exact (U, gap) front: min gap, then max U."""
    front = exact_front(p)
    return front.sort_values(["gap", "utility"], ascending=[True, False]).iloc[0]


def test_a_hand_computed_case():
    # two domains; gaps of the pairs: {0,1} 0, {0,2} 2, {1,2} 2, {0,3} 1, {1,3} 1, {2,3} 3
    # (mean rows); {0,1} is the only gap 0
    Ud = np.array([[50.0, 52.0], [54.0, 52.0], [50.0, 56.0], [54.0, 54.0]])
    df = pd.DataFrame(
        {
            "round": 0,
            "client_id": [f"c{i}" for i in range(4)],
            "domain": ["a", "b", "a", "b"],
            "n_samples": 10,
            "U": Ud.mean(axis=1),
            "F": 1.0,
            "B": 0.1,
            "cos_g": 0.0,
            "U_a": Ud[:, 0],
            "U_b": Ud[:, 1],
        }
    )
    p = SelectionProblem.from_stats(df, 2)
    for backend in ("enum", "highs"):
        r = MinGapSolver(backend=backend).solve(p)
        assert r.status == "optimal" and r.backend == backend
        assert r.selected == (0, 1)
        assert r.objectives["gap"] == 0.0 and r.objectives["utility"] == 52.0
        assert r.bound == 0.0


@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(6, 14),
    k=st.integers(1, 5),
    kind=st.sampled_from(["synthetic", "random"]),
    decimals=st.sampled_from([None, 2, 0]),
)
def test_bounded_route_equals_enumeration(make_problem, seed, n, k, kind, decimals):
    p = make_problem(n, k, seed=seed, kind=kind, decimals=decimals)
    best = _enumerated(p)
    enum = MinGapSolver(backend="enum").solve(p)
    bounded = MinGapSolver(backend="highs", iterations=3).solve(p)
    for r in (enum, bounded):
        assert r.status == "optimal", r.message
        assert r.objectives["gap"] == pytest.approx(best["gap"], abs=1e-7)
        assert r.objectives["utility"] == pytest.approx(best["utility"], abs=1e-6)
        assert r.bound == pytest.approx(best["gap"], abs=1e-7)
    assert ";".join(enum.ids) == best["selected"]  # ties: the first selection enumerated


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(6, 12), k=st.integers(2, 4))
def test_weighted_surrogate_equals_enumeration(make_stats, seed, n, k):
    # linear-fractional: the stages are Dinkelbach steps on the sample-weighted rows
    p = SelectionProblem.from_stats(make_stats(n, seed, "random"), k, surrogate="weighted")
    best = _enumerated(p)
    r = MinGapSolver(backend="highs", iterations=2).solve(p)
    assert r.status == "optimal", r.message
    assert r.objectives["gap"] == pytest.approx(best["gap"], abs=1e-7)
    assert r.objectives["utility"] == pytest.approx(best["utility"], abs=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_constraints_equal_enumeration(make_problem, seed):
    p = make_problem(12, 4, seed=seed, kind="random")
    f_min, b_max = float(np.sort(p.F_z)[-6:].sum() / 2), float(np.sort(p.B)[:6].sum())
    enum = MinGapSolver(backend="enum", f_min=f_min, b_max=b_max).solve(p)
    r = MinGapSolver(backend="highs", f_min=f_min, b_max=b_max).solve(p)
    assert enum.status == r.status == "optimal"
    assert r.objectives["gap"] == pytest.approx(enum.objectives["gap"], abs=1e-7)
    assert r.objectives["utility"] == pytest.approx(enum.objectives["utility"], abs=1e-6)
    assert r.objectives["sum_Fz"] >= f_min - 1e-9 and r.objectives["sum_B"] <= b_max + 1e-9
    # rows no selection meets: infeasible on both routes
    for backend in ("enum", "highs"):
        none = MinGapSolver(backend=backend, f_min=1e6).solve(p)
        assert none.status == "infeasible" and not none.ok


def test_a_stopped_search_brackets_the_smallest_gap():
    # 1 node, no kicks: stopped early on near-tied rows, yet bound <= min gap <= gap returned
    p = SelectionProblem.from_stats(near_tied_stats(24, seed=3), 4)
    best = _enumerated(p)
    r = MinGapSolver(backend="highs", iterations=0, node_limit=1).solve(p)
    assert r.ok and r.backend == "highs"
    assert r.bound <= best["gap"] + 1e-9 <= r.objectives["gap"] + 2e-9
    if r.status == "time_limit":
        assert "smallest gap in [" in r.message
    else:
        assert r.objectives["gap"] == pytest.approx(best["gap"], abs=1e-7)


def test_same_seed_same_selection_other_seed_other_path():
    p = SelectionProblem.from_stats(near_tied_stats(120, seed=1), 12)
    a = MinGapSolver(iterations=20, node_limit=20, seed=0).solve(p)
    b = MinGapSolver(iterations=20, node_limit=20, seed=0).solve(p)
    assert a.backend == "highs" and a.selected == b.selected and a.message == b.message
    data = SwapData(A=p.Ud, a=p.U, w=np.ones(p.n))
    start = np.zeros(p.n, dtype=bool)
    start[:12] = True
    runs = [swap_search(data, start, iterations=10, seed=s)[0] for s in (0, 0, 1)]
    assert np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[0], runs[2])


def test_swap_search_never_breaks_the_rows(make_problem):
    p = make_problem(30, 6, seed=4, kind="random")
    f_min = float(np.sort(p.F_z)[-6:].sum() / 2)
    data = SwapData(A=p.Ud, a=p.U, w=np.ones(p.n), F_z=p.F_z, f_min=f_min)
    start = np.zeros(p.n, dtype=bool)
    start[np.argsort(-p.F_z)[:6]] = True
    best, key = swap_search(data, start, iterations=30, seed=0)
    assert best.sum() == 6 and p.F_z[best].sum() >= f_min - 1e-9
    assert key == data.key(best) and key <= data.key(start)


def test_min_gap_point_takes_the_eps_solvers_settings(make_problem):
    p = make_problem(10, 3, seed=2)
    r = min_gap_point(p, solver=EpsSolver(backend="highs"))
    assert r.method == "min-gap" and r.backend == "highs" and r.status == "optimal"
    e = min_gap_point(p)
    assert e.backend == "enum" and e.objectives["gap"] == pytest.approx(r.objectives["gap"])
    assert default_nodes(200) == 500 and default_nodes(10**6) == 50


def test_black_box_surrogate_enumerates_and_is_refused_above(make_stats):
    from selection.errors import SelectionError
    from selection.logits import ValidationLogits

    df = make_stats(8, 0)
    rng = np.random.default_rng(0)
    doms = tuple(sorted(df["domain"].unique()))
    z = rng.normal(size=(8, 40, 3)).astype(np.float16)
    lg = ValidationLogits(0, df["client_id"].to_numpy(str), z, rng.integers(0, 3, 40),
                          np.arange(40) % len(doms), doms)  # fmt: skip
    p = SelectionProblem.from_stats(df, 3, surrogate="ensemble", logits=lg)
    r = MinGapSolver().solve(p)
    assert r.backend == "enum" and r.objectives["gap"] == pytest.approx(_enumerated(p)["gap"])
    with pytest.raises(SelectionError, match="black-box"):
        MinGapSolver(backend="highs").solve(p)
