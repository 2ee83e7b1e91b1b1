"""fedsel's problem and K-preserving operators as public pymoo objects, under other algorithms."""

from __future__ import annotations

import numpy as np
import pytest
from pymoo.algorithms.moo.nsga3 import NSGA3
from pymoo.algorithms.moo.sms import SMSEMOA
from pymoo.optimize import minimize
from pymoo.util.ref_dirs import get_reference_directions

from selection.indicators import hypervolume_ratio
from selection.solvers.exhaustive import exact_front
from selection.solvers.nsga2 import (
    KSubsetCrossover,
    KSubsetSampling,
    RowHashDuplicates,
    SelectionMOP,
    SwapMutation,
)

OPS = dict(
    sampling=KSubsetSampling(),
    crossover=KSubsetCrossover(),
    mutation=SwapMutation(),
    eliminate_duplicates=RowHashDuplicates(),
)


@pytest.mark.parametrize("algo", ["sms-emoa", "nsga3"])
def test_any_pymoo_algorithm_keeps_k_and_finds_the_front(make_problem, algo):
    p = make_problem(14, 4, seed=2)
    mop = SelectionMOP(p, ["utility", "gap"])
    if algo == "sms-emoa":
        alg = SMSEMOA(pop_size=40, **OPS)
    else:
        alg = NSGA3(ref_dirs=get_reference_directions("das-dennis", 2, n_partitions=20), **OPS)
    res = minimize(mop, alg, ("n_gen", 60), seed=1)
    X = np.atleast_2d(res.X).astype(bool)
    assert (X.sum(axis=1) == p.k).all()  # the operators never leave the K-subsets
    pts = np.column_stack([-res.F[:, 0], res.F[:, 1]])  # back to (max U, min gap)
    exact = exact_front(p)[["utility", "gap"]].to_numpy()
    assert hypervolume_ratio(pts, exact, ("utility", "gap")) > 0.95


def test_selection_mop_signs_follow_the_objective_table(make_problem):
    p = make_problem(10, 3, seed=0)
    mop = SelectionMOP(p, ["utility", "gap", "worst"])
    x = np.zeros((1, p.n), dtype=bool)
    x[0, :3] = True
    F = mop.evaluate(x.astype(float), return_values_of=["F"])[0]
    from selection.objectives import evaluate

    obj = evaluate(p, [0, 1, 2])
    np.testing.assert_allclose(F, [-obj["utility"], obj["gap"], -obj["worst"]])


@pytest.mark.parametrize("extra", [0, 1])
def test_a_sample_no_larger_than_the_seeded_rows_is_those_rows(make_problem, extra):
    """A population of D + 1 (one row per key: U, then each domain's U) once crashed on its
    random restarts (numpy's integers(low, high) with low == high)."""
    p = make_problem(12, 3, seed=4)
    mop = SelectionMOP(p, ["utility", "gap"])
    keys = 1 + p.Ud.shape[1]
    X = KSubsetSampling()._do(mop, keys + extra, random_state=np.random.default_rng(0))
    assert X.shape == (keys + extra, p.n) and (X.sum(axis=1) == p.k).all()
    top_u = np.zeros(p.n, dtype=bool)
    top_u[np.argsort(-p.U, kind="stable")[: p.k]] = True
    assert (X[0] == top_u).all()  # the first seeded row: the K largest U
