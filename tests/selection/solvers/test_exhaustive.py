"""Exhaustive enumeration: counts, refusal, the exact front, ties, streaming = cached."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from selection.errors import TooLargeError
from selection.objectives import gap, utility, worst
from selection.problem import SelectionProblem
from selection.solvers import exhaustive as ex
from selection.solvers import make_solver
from selection.solvers.exhaustive import ExhaustiveSolver, exact_front


def _hand_table(ud, u=None):
    ud = np.asarray(ud, dtype=float)
    n, d = ud.shape
    df = pd.DataFrame(
        {
            "round": 0,
            "client_id": [f"c{i}" for i in range(n)],
            "domain": [f"d{i % d}" for i in range(n)],  # domains = the U_<d> columns
            "n_samples": 10,
            "U": ud.mean(axis=1) if u is None else u,
            "F": 1.0 + np.arange(n),
            "B": 0.1,
            "cos_g": 0.0,
        }
    )
    for j in range(d):
        df[f"U_d{j}"] = ud[:, j]
    return df


def _brute_points(p: SelectionProblem):
    """(U, gap, worst, index tuple) of every selection, by plain loops."""
    out = []
    for S in itertools.combinations(range(p.n), p.k):
        x = np.zeros(p.n)
        x[list(S)] = 1
        out.append((utility(p, x)[0], gap(p, x)[0], worst(p, x)[0], S))
    return out


def _brute_front(p, sense_gap=True):
    pts = _brute_points(p)
    front = []
    for u, g, w, _ in pts:
        b = -g if sense_gap else w
        dominated = any(
            (u2 >= u - 1e-12 and b2 >= b - 1e-12) and (u2 > u + 1e-12 or b2 > b + 1e-12)
            for u2, g2, w2, _ in pts
            for b2 in [(-g2 if sense_gap else w2)]
        )
        if not dominated:
            front.append((round(u, 9), round(b, 9)))
    return sorted(set(front))


def test_refuses_above_max_count_with_count_and_limit(make_problem):
    p = make_problem(30, 10)  # C(30,10) = 30,045,015
    with pytest.raises(TooLargeError, match=r"C\(30,10\) = 30,045,015 .*max_count=5,000,000"):
        exact_front(p)
    with pytest.raises(ValueError, match="max_count=100"):
        ExhaustiveSolver(max_count=100).solve(make_problem(10, 3))


def test_front_matches_plain_loops(make_problem):
    p = make_problem(11, 3, seed=4, kind="random")
    fr = exact_front(p)
    got = sorted(set(zip(fr.utility.round(9), (-fr.gap).round(9), strict=True)))
    assert got == _brute_front(p, sense_gap=True)
    assert (fr.status == "optimal").all() and (fr.method == "exhaustive").all()
    assert fr.utility.is_monotonic_decreasing and fr.gap.is_monotonic_decreasing


def test_utility_worst_front(make_problem):
    p = make_problem(10, 4, seed=2, kind="random")
    fr = exact_front(p, ("utility", "worst"))
    got = sorted(set(zip(fr.utility.round(9), fr.worst.round(9), strict=True)))
    assert got == _brute_front(p, sense_gap=False)
    assert fr.param.iloc[0] == "utility,worst"


def test_ties_keep_smallest_index_tuple():
    # clients 0/1 and 2/3 are identical: (0,2), (0,3), (1,2), (1,3) share one vector
    ud = [[80, 40], [80, 40], [50, 50], [50, 50]]
    p = SelectionProblem.from_stats(_hand_table(ud), 2)
    fr = exact_front(p)
    assert fr.selected.tolist() == ["c0;c1", "c0;c2", "c2;c3"]
    np.testing.assert_allclose(fr.utility, [60.0, 55.0, 50.0])
    np.testing.assert_allclose(fr.gap, [40.0, 20.0, 0.0])
    np.testing.assert_allclose(fr.worst, [40.0, 45.0, 50.0])
    assert ExhaustiveSolver(eps=25.0).solve(p).ids == ("c0", "c2")


def test_streaming_equals_cached(monkeypatch, make_problem):
    p = make_problem(12, 4, seed=9, kind="random")
    cached = exact_front(p)
    q = make_problem(12, 4, seed=9, kind="random")
    monkeypatch.setattr(ex, "CACHE_LIMIT", 10)
    monkeypatch.setattr(ex, "CHUNK", 37)
    streamed = exact_front(q)
    pd.testing.assert_frame_equal(
        cached.drop(columns=["seconds"]), streamed.drop(columns=["seconds"])
    )
    for e in (None, 20.0, 8.0):
        a = ExhaustiveSolver(eps=e).solve(q)
        b = make_solver("exhaustive", eps=e).solve(p)
        assert a.selected == b.selected


def test_solver_eps_delta_answer_by_plain_loops(make_problem):
    p = make_problem(9, 3, seed=5, kind="random")
    pts = _brute_points(p)
    ustar = max(u for u, *_ in pts)
    for e in (0.0, 5.0, 12.0, 40.0):
        ok = [t for t in pts if t[1] <= e + 1e-9]
        r = ExhaustiveSolver(eps=e).solve(p)
        if not ok:
            assert r.status == "infeasible" and r.selected == ()
            continue
        best = max(ok, key=lambda t: (round(t[0], 9), -round(t[1], 9)))
        assert r.status == "optimal" and r.param == f"eps={e:g}"
        assert r.objectives["utility"] == pytest.approx(best[0], abs=1e-9)
        assert r.objectives["gap"] == pytest.approx(best[1], abs=1e-9)
    for dl in (0.0, 1.0, 3.0, 100.0):
        ok = [t for t in pts if t[0] >= ustar - dl - 1e-9]
        best = max(ok, key=lambda t: (round(t[2], 9), round(t[0], 9)))
        r = ExhaustiveSolver(delta=dl).solve(p)
        assert r.objectives["worst"] == pytest.approx(best[2], abs=1e-9)
        assert r.objectives["utility"] == pytest.approx(best[0], abs=1e-9)


def test_f_min_and_b_max_constraints(make_problem):
    p = make_problem(10, 3, seed=1, kind="random")
    r = ExhaustiveSolver(f_min=1.0, b_max=1.0).solve(p)
    assert r.objectives["sum_Fz"] >= 1.0 and r.objectives["sum_B"] <= 1.0
    assert ExhaustiveSolver(f_min=100.0).solve(p).status == "infeasible"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"eps": -1.0},
        {"delta": -0.5},
        {"eps": 1.0, "delta": 1.0},
        {"delta": 1.0, "f_min": 0.0},
        {"max_count": 0},
        {"eps": float("nan")},
    ],
)
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        ExhaustiveSolver(**kwargs)


def test_unknown_front_objective(make_problem):
    with pytest.raises(ValueError, match="bogus"):
        exact_front(make_problem(6, 2), ("utility", "bogus"))
