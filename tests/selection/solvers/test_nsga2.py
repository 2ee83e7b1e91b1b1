"""NSGA-II: K-preserving operators, determinism, and closeness to the exact front."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.indicators import hypervolume_ratio
from selection.problem import SelectionProblem
from selection.solvers.exhaustive import exact_front
from selection.solvers.nsga2 import (
    KSubsetCrossover,
    KSubsetSampling,
    NSGA2Solver,
    SelectionMOP,
    SwapMutation,
    knee_index,
)
from selection.solvers.registry import make_solver
from selection.solvers.result import Status
from selection.synthetic import synthetic_stats


def _problem(seed: int = 15, n: int = 20, k: int = 5, uniform: bool = False) -> SelectionProblem:
    df = synthetic_stats(n, seed=seed, rounds=3)
    if uniform:  # per-domain utilities with no structure: a harder front
        rng = np.random.default_rng(seed)
        dcols = [c for c in df.columns if c.startswith("U_")]
        df[dcols] = rng.uniform(20, 90, (len(df), len(dcols)))
        df["U"] = df[dcols].mean(axis=1)
    return SelectionProblem.from_stats(df, k)


def _points(results, objectives=("utility", "gap")) -> np.ndarray:
    return np.array([[r.objectives[o] for o in objectives] for r in results])


@pytest.fixture(scope="module")
def problem() -> SelectionProblem:
    return _problem()


@pytest.fixture(scope="module")
def front(problem):
    return NSGA2Solver(seed=3).front(problem)


def test_every_point_has_k_distinct_clients(problem, front):
    assert front
    for r in front:
        assert len(r.selected) == problem.k == len(set(r.ids))
        assert r.status is Status.FEASIBLE and r.method == "nsga2"


def test_front_points_are_mutually_nondominated(front):
    P = _points(front)
    for u, g in P:
        assert not np.any((P[:, 0] >= u) & (P[:, 1] <= g) & ((P[:, 0] > u) | (P[:, 1] < g)))


@pytest.mark.parametrize("seed,uniform", [(15, False), (0, True), (2, True)])
def test_hypervolume_close_to_the_exact_front(seed, uniform):
    p = _problem(seed, uniform=uniform)
    exact = exact_front(p)[["utility", "gap"]].to_numpy()
    ratio = hypervolume_ratio(_points(NSGA2Solver(seed=seed).front(p)), exact)
    assert 0.98 <= ratio <= 1.0 + 1e-9


def test_other_objectives_worst():
    p = _problem(5)
    objs = ("utility", "worst")
    exact = exact_front(p, objs)[list(objs)].to_numpy()
    got = _points(NSGA2Solver(seed=1, objectives=objs).front(p), objs)
    assert hypervolume_ratio(got, exact, objs) >= 0.98


def test_same_seed_same_front_and_no_global_random_state(problem):
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    a = [r.ids for r in NSGA2Solver(seed=7, polish=False, n_gen=5).front(problem)]
    np.random.seed(999)
    b = [r.ids for r in NSGA2Solver(seed=7, polish=False, n_gen=5).front(problem)]
    assert a == b
    np.random.seed(123)
    NSGA2Solver(seed=7, polish=False, n_gen=5).front(problem)
    assert np.array_equal(np.random.get_state()[1], before)


def test_other_seed_other_search(problem):
    runs = {
        tuple(r.ids for r in NSGA2Solver(seed=s, polish=False, n_gen=2, pop_size=20).front(problem))
        for s in range(4)
    }
    assert len(runs) > 1


def test_pick_selects_the_front_extremes_and_the_knee(problem):
    kw = {"seed": 3, "n_gen": 8, "polish": False}
    P = _points(NSGA2Solver(**kw).front(problem))
    best_u = make_solver("nsga2", pick="max-utility", **kw).solve(problem)
    min_gap = make_solver("nsga2", pick="min-gap", **kw).solve(problem)
    knee = make_solver("nsga2", **kw).solve(problem)
    assert best_u.objectives["utility"] == pytest.approx(P[:, 0].max())
    assert min_gap.objectives["gap"] == pytest.approx(P[:, 1].min())
    assert any(np.allclose([knee.objectives["utility"], knee.objectives["gap"]], q) for q in P)
    assert knee.param == "knee" and best_u.status is Status.FEASIBLE


def test_knee_index_by_hand():
    # minimization form: (1, 0) and (0, 1) are the extremes, (0.2, 0.2) bends most
    F = np.array([[0.0, 1.0], [0.2, 0.2], [0.6, 0.05], [1.0, 0.0]])
    assert knee_index(F) == 1


def test_operators_keep_k_ones(problem):
    rng = np.random.default_rng(0)
    mop = SelectionMOP(problem, ("utility", "gap"))
    X = KSubsetSampling()._do(mop, 30, random_state=rng)
    assert (X.sum(axis=1) == problem.k).all()
    assert set(np.flatnonzero(X[0])) == set(np.argsort(-problem.U)[: problem.k])
    parents = np.stack([X[:15], X[15:]])
    kids = KSubsetCrossover()._do(mop, parents, random_state=rng)
    assert kids.shape == (2, 15, problem.n) and (kids.sum(axis=2) == problem.k).all()
    common, union = parents[0] & parents[1], parents[0] | parents[1]
    for child in kids:
        assert (child >= common).all() and (child <= union).all()
    Y = SwapMutation()._do(mop, X, random_state=rng)
    assert (Y.sum(axis=1) == problem.k).all()
    changed = (Y != X).sum(axis=1)
    assert set(changed.tolist()) <= {2, 4} and changed.min() == 2


def test_k_equal_n_and_k_one():
    p = _problem(1, n=8, k=8)
    (r,) = NSGA2Solver(seed=0, pop_size=8, n_gen=2).front(p)
    assert len(r.selected) == 8
    p1 = _problem(1, n=8, k=1)
    assert all(len(r.selected) == 1 for r in NSGA2Solver(seed=0, pop_size=8, n_gen=5).front(p1))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pick": "middle"},
        {"objectives": ("utility",)},
        {"objectives": ("utility", "nope")},
        {"objectives": ("gap", "gap")},
        {"pop_size": 2},
        {"n_gen": 0},
        {"seed": -1},
        {"seed": 1.5},
    ],
)
def test_invalid_arguments_raise(kwargs):
    with pytest.raises(SelectionError):
        NSGA2Solver(**kwargs)


def test_front_table_through_results_to_frame(problem, front):
    from selection.solvers.result import results_to_frame

    df = results_to_frame(problem, front)
    assert isinstance(df, pd.DataFrame) and len(df) == len(front)
    assert (df["selected"].str.split(";").map(len) == problem.k).all()
    assert df["seconds"].sum() > 0
