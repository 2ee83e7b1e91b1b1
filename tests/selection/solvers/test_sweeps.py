"""Sweeps and front tables; weighted sums miss unsupported points, the ε sweep finds them."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from selection.problem import SelectionProblem
from selection.solvers import make_solver
from selection.solvers.base import SweepOptions
from selection.solvers.exhaustive import exact_front
from selection.solvers.sweeps import (
    FRONT_COLUMNS,
    results_to_frame,
    sweep_delta,
    sweep_eps,
    sweep_weighted,
)


def _unsupported_instance() -> SelectionProblem:
    """K = 1 and three clients a, b, c with (U_d1, U_d2) = (70, 50), (57.5, 42.5), (40, 40).

    In (U, gap) they are a = (60, 20), b = (50, 15), c = (40, 0): all non-dominated, but b
    lies above the segment a–c (gap 10 at U = 50), so no weighted sum (1−λ)·U − λ·gap reaches
    it: b beats a only for λ > 2/3 and beats c only for λ < 0.4. F, B and cos_g are equal for
    every client, so the weighted solver sees only z(U) = (1.22, 0, −1.22) and
    z(R) = (1.37, −0.39, −0.98) (R = utility on the worst domain d2): b never scores highest
    under non-negative weights.
    """
    ud = np.array([[70.0, 50.0], [57.5, 42.5], [40.0, 40.0]])
    df = pd.DataFrame(
        {
            "round": 0,
            "client_id": ["a", "b", "c"],
            "domain": ["d1", "d2", "d1"],
            "n_samples": 10,
            "U": ud.mean(axis=1),
            "F": 5.0,
            "B": 0.1,
            "cos_g": 0.2,
            "U_d1": ud[:, 0],
            "U_d2": ud[:, 1],
        }
    )
    return SelectionProblem.from_stats(df, 1)


def test_weighted_sum_misses_an_unsupported_point_that_eps_finds():
    p = _unsupported_instance()
    front = exact_front(p)
    assert front.selected.tolist() == ["a", "b", "c"]
    pts = front[["utility", "gap"]].to_numpy()
    # b is strictly above the hull segment a–c
    lam = (pts[0, 0] - pts[1, 0]) / (pts[0, 0] - pts[2, 0])
    hull_gap = (1 - lam) * pts[0, 1] + lam * pts[2, 1]
    assert pts[1, 1] > hull_gap + 1
    # no scalarization (1−λ)U − λ·gap on a fine grid selects b
    for lam in np.linspace(0, 1, 2001):
        score = (1 - lam) * pts[:, 0] - lam * pts[:, 1]
        assert np.argmax(score) != 1
    # nor does the weighted solver for any non-negative weight vector of a grid
    fine = [(u, r) for u, r in itertools.product(np.linspace(0, 1, 31), repeat=2) if u or r]
    coarse = [w for w in itertools.product((0, 0.5, 1), repeat=5) if any(w)]
    grid = fine + coarse
    reached = set(sweep_weighted(p, grid).selected)
    assert "b" not in reached and reached <= {"a", "c"}
    # the complete ε sweep finds it, on every route
    for backend in ("enum", "highs", "cbc", "cpsat"):
        sweep = sweep_eps(p, complete=True, options=SweepOptions(backend=backend))
        assert "b" in set(sweep.selected), backend
        assert sweep.selected.tolist()[:3] == ["a", "b", "c"]


def test_results_to_frame_columns_and_rows(make_problem):
    p = make_problem(10, 3, seed=1)
    rs = [make_solver("eps", eps=e).solve(p) for e in (None, 0.0)]
    df = results_to_frame(p, rs)
    assert list(df.columns[: len(FRONT_COLUMNS)]) == list(FRONT_COLUMNS)
    assert [f"U_{d}" for d in p.domains] == [c for c in df.columns if c.startswith("U_")]
    ok, bad = df.iloc[0], df.iloc[1]
    assert ok.selected == ";".join(rs[0].ids) and ok.status == "optimal"
    assert ok.utility == pytest.approx(rs[0].objectives["utility"])
    assert ok[f"U_{p.domains[0]}"] == pytest.approx(rs[0].objectives[f"U_{p.domains[0]}"])
    assert bad.selected == "" and bad.status == "infeasible" and np.isnan(bad.utility)
    assert results_to_frame(p, []).columns.tolist() == df.columns.tolist()


def test_grid_sweep_with_infeasible_rows(make_problem):
    p = make_problem(12, 3, seed=2)
    df = sweep_eps(p, [0, 5, 10, 1000], options=SweepOptions(backend="highs"))
    assert df.param.tolist() == ["eps=0", "eps=5", "eps=10", "eps=1000"]
    assert df.status.iloc[0] == "infeasible"
    feas = df[df.status == "optimal"]
    assert (feas.gap <= feas.param.str[4:].astype(float) + 1e-6).all()
    assert feas.utility.is_monotonic_increasing


def test_parallel_grid_equals_sequential(make_problem):
    p = make_problem(14, 4, seed=3)
    grid = [30, 20, 15, 10, 8, 6]
    a = sweep_eps(p, grid, options=SweepOptions(backend="highs", n_jobs=1))
    b = sweep_eps(p, grid, options=SweepOptions(backend="highs", n_jobs=2))
    cols = ["param", "status", "selected", "utility", "gap"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_complete_sweep_rows(make_problem):
    p = make_problem(10, 3, seed=4)
    calls = []
    df = sweep_eps(p, complete=True, options=SweepOptions(progress=lambda *a: calls.append(a)))
    assert df.param.iloc[0] == "eps=inf"
    # progress is reported through the callback: one call per solved point, total unknown
    assert calls == [(i + 1, None, "complete ε sweep") for i in range(len(df))]
    ok = df[df.status == "optimal"]
    assert ok.gap.is_monotonic_decreasing and ok.utility.is_monotonic_decreasing
    assert len(ok) == len(exact_front(p))


def test_sweep_delta_rows(make_problem):
    p = make_problem(12, 3, seed=5)
    df = sweep_delta(p, [0, 1, 2, 5], backend="cpsat")
    assert df.param.tolist() == ["delta=0", "delta=1", "delta=2", "delta=5"]
    assert df.worst.is_monotonic_increasing and (df.status == "optimal").all()


def test_sweep_weighted_rows(make_problem):
    p = make_problem(12, 3, seed=6)
    df = sweep_weighted(p, [(1,), (1, 1), (0, 1)])
    assert df.param.tolist() == ["w=1", "w=1,1", "w=0,1"]
    comp = sweep_weighted(p, [(1, 0, 0), (0, 1, 0)], composite=True)
    assert comp.param.tolist() == ["S=1,0,0", "S=0,1,0"]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda p: sweep_eps(p), "complete"),
        (lambda p: sweep_eps(p, [1.0], complete=True), "not both"),
        (lambda p: sweep_eps(p, []), "empty"),
        (lambda p: sweep_eps(p, [-1.0]), "eps=-1"),
        (lambda p: sweep_eps(p, [1.0], options=SweepOptions(n_jobs=0)), "n_jobs"),
        (lambda p: sweep_eps(p, [1.0], options=SweepOptions(backend="nope")), "nope"),
        (lambda p: sweep_delta(p, [-2.0]), "delta"),
        (lambda p: sweep_weighted(p, []), "empty"),
    ],
)
def test_sweep_arguments(make_problem, call, match):
    with pytest.raises(ValueError, match=match):
        call(make_problem(8, 2))


def test_complete_sweep_labels_points_stopped_by_the_budget(monkeypatch):
    """A complete sweep has a per-point budget by default; a point it stops is labelled
    time_limit and the front is not called exact."""
    import selection.solvers.sweeps as sw
    from selection.problem import SelectionProblem
    from selection.synthetic import near_tied_stats

    seen = []
    real = sw.make_solver

    def spy(*args, **kwargs):
        seen.append(kwargs["options"].time_limit)
        return real(*args, **kwargs)

    monkeypatch.setattr(sw, "make_solver", spy)
    problem = SelectionProblem.from_stats(near_tied_stats(100), 10)
    front = sw.sweep_eps(
        problem, complete=True, max_seconds=8, options=SweepOptions(backend="cbc", time_limit=0.3)
    )
    assert seen == [0.3]
    stopped = front["status"] == "time_limit"
    assert stopped.any()  # the tight ε points of this family take CBC far longer than 0.3 s
    assert front.attrs["unproven"] == int(stopped.sum())
    assert front.attrs["exact"] is False
    seen.clear()
    small = SelectionProblem.from_stats(near_tied_stats(20), 2)
    front = sw.sweep_eps(small, complete=True)
    assert seen == [sw.COMPLETE_POINT_BUDGET]
    assert front.attrs["exact"] is True and front.attrs["unproven"] == 0
    seen.clear()
    sw.sweep_eps(small, complete=True, options=SweepOptions(time_limit=float("inf")))
    assert seen == [None]


@pytest.mark.parametrize("backend", ["cbc", "highs"])
@pytest.mark.parametrize("n, k, seed", [(40, 4, 2), (36, 4, 0)])
def test_complete_milp_sweep_is_the_exact_front_on_near_tied_rows(backend, n, k, seed):
    """One MILP stage per point plus dropping the points the next ε ties on U gives the
    front enumeration gives (2-decimal near-tied data: many equal U, many near-equal gaps)."""
    from selection.problem import SelectionProblem
    from selection.synthetic import near_tied_stats

    p = SelectionProblem.from_stats(near_tied_stats(n, seed=seed), k)
    calls = []
    df = sweep_eps(
        p, complete=True, options=SweepOptions(backend=backend, progress=lambda *a: calls.append(a))
    )
    assert df.attrs["exact"]
    ok = df[df.status == "optimal"]
    got = np.round(ok[["utility", "gap"]].to_numpy(), 6)
    want = np.round(exact_front(p)[["utility", "gap"]].to_numpy(), 6)
    assert sorted(map(tuple, got)) == sorted(map(tuple, want))
    assert len(calls) >= len(df)  # ties replaced points: never more rows than solves


def test_complete_sweep_drops_points_the_next_eps_ties_on_utility(monkeypatch):
    """A first stage that breaks U ties the worst way (largest gap) still yields the exact
    front: the point is replaced when the next, tighter ε reaches the same U."""
    import itertools

    import selection.solvers.sweeps as sw
    from selection.objectives import evaluate
    from selection.problem import SelectionProblem
    from selection.solvers.result import SolveResult, Status
    from selection.synthetic import near_tied_stats

    table = near_tied_stats(8, seed=1)
    table["U"] = [70.0, 50.0, 50.0, 50.0, 20.0, 20.0, 10.0, 10.0]  # many equal-U pairs
    p = SelectionProblem.from_stats(table, 2)
    every = [(s, evaluate(p, s)) for s in itertools.combinations(range(p.n), 2)]

    class WorstTieFirstStage:
        first_stage_only = False

        def __init__(self, eps=None):
            self.eps = eps

        def with_param(self, eps):
            return WorstTieFirstStage(eps)

        def model_gap(self, problem, selected):
            return evaluate(problem, selected)["gap"]

        def quantum(self, problem):
            return 0.0  # no value grid: the sweep steps by DEFAULT_STEP

        def solve(self, problem):
            eps = np.inf if self.eps is None else self.eps
            ok = [(s, o) for s, o in every if o["gap"] <= eps + 1e-12]
            if not ok:
                return SolveResult("eps", Status.INFEASIBLE, (), (), {}, 0.0, "", "fake")
            s, o = max(ok, key=lambda so: (round(so[1]["utility"], 9), so[1]["gap"]))
            return SolveResult("eps", Status.OPTIMAL, s, tuple(p.ids_of(s)), o, 0.0, "", "fake")

    monkeypatch.setattr(sw, "make_solver", lambda *a, **kw: WorstTieFirstStage())
    calls = []
    df = sw.sweep_eps(p, complete=True, options=SweepOptions(progress=lambda *a: calls.append(a)))
    ok = df[df.status == "optimal"]
    got = sorted(map(tuple, np.round(ok[["utility", "gap"]].to_numpy(), 6)))
    want = sorted(map(tuple, np.round(exact_front(p)[["utility", "gap"]].to_numpy(), 6)))
    assert got == want
    assert len(calls) > len(df)  # some points were replaced by their tie


def test_complete_sweep_budget_bounds_the_last_point_too():
    import time

    from selection.problem import SelectionProblem
    from selection.synthetic import near_tied_stats

    p = SelectionProblem.from_stats(near_tied_stats(100), 10)
    t0 = time.perf_counter()
    df = sweep_eps(p, complete=True, max_seconds=2.0, options=SweepOptions(backend="cbc"))
    assert time.perf_counter() - t0 < 30.0  # not the 60 s per-point default: the budget binds
    assert not df.attrs["complete"] and not df.attrs["exact"]
