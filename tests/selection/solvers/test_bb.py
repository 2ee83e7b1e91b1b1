"""The bi-objective branch-and-bound (``bb``) returns the exact front: enumeration decides."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions
from selection.solvers.bb import bb_front
from selection.solvers.bb import search as bb_search_mod
from selection.solvers.bb.staircase import Proven, Staircase
from selection.solvers.exhaustive import exact_front
from selection.solvers.sweeps import sweep_eps
from selection.synthetic import FAMILIES

PLANES = [("utility", "gap"), ("utility", "worst")]


def _problem(seed: int, *, n: int, k: int, d: int, kind: str) -> SelectionProblem:
    """Random rows: ``float`` (no value grid), ``cents`` (2 decimals, U not the mean of the
    rows), ``ties`` (multiples of 5: many equal selections), ``equal`` (every row equal)."""
    rng = np.random.default_rng(seed)
    ud = rng.uniform(30, 90, (n, d))
    U = ud.mean(axis=1)
    if kind == "cents":
        ud = np.round(ud, 2)
        U = np.round(ud.mean(axis=1) + rng.normal(0, 2, n), 2)
    elif kind == "ties":
        ud = np.round(ud / 5) * 5
        U = np.round(ud.mean(axis=1) / 2.5) * 2.5
    elif kind == "equal":
        ud = np.full((n, d), 50.0)
        U = np.full(n, 50.0)
    df = pd.DataFrame(
        {
            "round": 0,
            "client_id": [f"c{i}" for i in range(n)],
            "domain": [f"d{i % d}" for i in range(n)],
            "n_samples": rng.integers(5, 50, n),
            "U": U,
            "F": 1.0 + rng.random(n),
            "B": 0.1,
            "cos_g": 0.2,
            **{f"U_d{j}": ud[:, j] for j in range(d)},
        }
    )
    return SelectionProblem.from_stats(df, k)


def _points(front: pd.DataFrame, objectives) -> np.ndarray:
    P = np.round(front[list(objectives)].to_numpy(dtype=float), 6)
    return P[np.lexsort(P.T[::-1])]


CASES = [(seed, kind) for seed in range(12) for kind in ("float", "cents", "ties")] + [(0, "equal")]


@pytest.mark.parametrize("seed,kind", CASES)
@pytest.mark.parametrize("objectives", PLANES)
def test_front_equals_enumeration(seed, kind, objectives):
    rng = np.random.default_rng(100 + seed)
    n, k, d = int(rng.integers(8, 17)), int(rng.integers(2, 7)), int(rng.integers(2, 5))
    p = _problem(seed, n=n, k=k, d=d, kind=kind)
    got = bb_front(p, objectives)
    want = exact_front(p, objectives)
    assert got.attrs["complete"] and got.attrs["exact"]
    np.testing.assert_allclose(_points(got, objectives), _points(want, objectives), atol=1e-6)
    assert (got["backend"] == "bb").all() and (got["status"] == "optimal").all()


@pytest.mark.parametrize("objectives", PLANES)
def test_boxes_handed_to_the_mip_stay_exact(monkeypatch, objectives):
    """No LP budget sends every box to the box solver (the ε MILP on the gap plane, HiGHS's
    MIP on the worst plane): the front is the same."""
    monkeypatch.setattr(bb_search_mod, "BOX_LPS", 0)
    for seed in range(4):
        p = _problem(seed, n=14, k=4, d=3, kind="cents" if seed % 2 else "ties")
        got = bb_front(p, objectives)
        assert got.attrs["mips"] > 0
        want = exact_front(p, objectives)
        np.testing.assert_allclose(_points(got, objectives), _points(want, objectives), atol=1e-6)


def test_complete_sweep_with_backend_bb_is_the_exact_front():
    p = _problem(3, n=14, k=4, d=3, kind="cents")
    got = sweep_eps(p, complete=True, options=SweepOptions(backend="bb"))
    want = exact_front(p)
    np.testing.assert_allclose(_points(got, ("utility", "gap")), _points(want, ("utility", "gap")))
    assert got.attrs["exact"] and (got["method"] == "eps").all()
    assert got["param"].iloc[0] == "eps=inf"
    # each next ε lies below the last gap, above the next point's
    eps = got["param"].iloc[1:].str.slice(4).astype(float).to_numpy()
    assert (eps < got["gap"].to_numpy()[:-1]).all() and (eps >= got["gap"].to_numpy()[1:]).all()


def test_bb_refuses_what_it_does_not_cover():
    p = _problem(1, n=10, k=3, d=2, kind="cents")
    with pytest.raises(ValueError, match="complete"):
        sweep_eps(p, [1.0], options=SweepOptions(backend="bb"))
    with pytest.raises(ValueError, match="f_min"):
        sweep_eps(p, complete=True, options=SweepOptions(backend="bb", f_min=0.0))
    with pytest.raises(SelectionError, match="linear"):
        bb_front(p.with_surrogate("weighted"))
    with pytest.raises(SelectionError, match="objectives"):
        bb_front(p, ("utility", "sum_B"))


def test_a_stopped_search_says_so():
    p = _problem(2, n=60, k=8, d=4, kind="cents")
    got = bb_front(p, time_limit=1e-9)  # stops at its first check
    assert not got.attrs["complete"] and not got.attrs["exact"]
    assert len(got) >= 1 and (got["status"] == "feasible").all()


def test_staircase_keeps_the_nondominated_points_and_their_boxes():
    s = Staircase(0.5, 0.5, 0.99, 0.99)
    assert s.insert(10.0, 50.0, (0,))
    assert s.insert(5.0, 40.0, (1,))
    assert not s.insert(6.0, 40.0, (2,))  # dominated by (5, 40)
    assert not s.insert(10.0, 50.0, (3,))  # the same point
    assert s.insert(4.0, 45.0, (4,))  # dominates (5, 40)
    assert s.g == [4.0, 10.0] and s.u == [45.0, 50.0]
    assert s.best_u(9.0) == 45.0 and s.best_u(3.0) == -np.inf
    assert s.boxes() == [(np.inf, 50.99), (10.0 - 0.99, 45.99), (4.0 - 0.99, -np.inf)]
    pr = Proven()
    pr.add(9.0, 46.0)
    assert pr.covers(8.0, 47.0) and not pr.covers(9.5, 47.0) and not pr.covers(8.0, 45.0)
    pr.add(9.5, 45.0)  # covers the first
    assert pr.covers(9.0, 45.0) and pr._t == [9.5]


def _linear_surrogates() -> list[str]:
    from selection.surrogates import surrogates

    return [name for name, s in surrogates().items() if s.structure == "linear"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("objectives", PLANES)
@pytest.mark.parametrize("surrogate", _linear_surrogates())
def test_every_family_and_linear_surrogate_equals_enumeration(family, objectives, surrogate):
    """The instance families of the benchmarks (hetero6's six domains included), each linear
    surrogate of the registry: the one tree finds the enumerated front."""
    for seed in range(2):
        p = SelectionProblem.from_stats(FAMILIES[family](18, seed=seed), 4)
        p = p.with_surrogate(surrogate)
        got = bb_front(p, objectives)
        want = exact_front(p, objectives)
        assert got.attrs["complete"] and got.attrs["exact"]
        np.testing.assert_allclose(_points(got, objectives), _points(want, objectives), atol=1e-6)
