"""fisher-fair: max Σ F_z s.t. worst >= worst* − δ, then max U; checked against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from selection.selectors import make_selector
from selection.solvers.registry import make_solver

ROUTES = ("enum", "highs", "cbc", "cpsat")


def brute(p, delta):
    """The answer by itertools over every K-subset, independent of the solver's code."""
    best, key = None, None
    sets = list(itertools.combinations(range(p.n), p.k))
    worst = {s: p.Ud[list(s)].mean(axis=0).min() for s in sets}
    floor = max(worst.values()) - delta
    for s in sets:
        if worst[s] < floor - 1e-9:
            continue
        k = (round(float(p.F_z[list(s)].sum()), 9), round(float(p.U[list(s)].mean()), 9))
        if key is None or k > key:
            best, key = s, k
    return best, key


@pytest.mark.parametrize("kind", ["synthetic", "random"])
@pytest.mark.parametrize("delta", [0.0, 0.7, 3.0, 10.0, math.inf])
def test_every_route_gives_the_brute_force_answer(make_problem, kind, delta):
    p = make_problem(12, 4, seed=5, kind=kind, decimals=3)
    want, (f, u) = brute(p, delta)
    for route in ROUTES:
        r = make_solver("fisher-fair", delta=delta, backend=route).solve(p)
        assert r.ok, (route, r.status)
        assert r.objectives["sum_Fz"] == pytest.approx(f, abs=1e-6), route
        assert r.objectives["utility"] == pytest.approx(u, abs=1e-6), route
        worst_star = max(
            p.Ud[list(s)].mean(axis=0).min() for s in itertools.combinations(range(p.n), p.k)
        )
        assert r.objectives["worst"] >= worst_star - delta - 1e-6, route
    assert tuple(make_solver("fisher-fair", delta=delta, backend="enum").solve(p).selected) == want


def test_the_ends_are_max_min_and_fisher_topk(make_problem):
    p = make_problem(14, 4, seed=8)
    zero = make_solver("fisher-fair", delta=0.0).solve(p)
    mm = make_solver("maxmin", delta=math.inf).solve(p)  # max worst, no average floor
    assert zero.objectives["worst"] == pytest.approx(mm.objectives["worst"], abs=1e-9)
    top = make_solver("fisher-fair", delta=math.inf).solve(p)
    assert sorted(top.selected) == sorted(np.argsort(-p.F)[: p.k].tolist())


def test_fisher_grows_and_worst_falls_with_delta(make_problem):
    p = make_problem(16, 5, seed=2)
    rs = [make_solver("fisher-fair", delta=d).solve(p) for d in (0, 1, 2, 4, 8, math.inf)]
    f = [r.objectives["sum_Fz"] for r in rs]
    assert np.all(np.diff(f) >= -1e-9)
    assert rs[0].objectives["worst"] >= rs[-1].objectives["worst"] - 1e-9


def test_selector_spec_and_bad_delta(make_stats):
    table = make_stats(12, seed=1)
    sel = make_selector("fisher-fair:1", seed=0)
    ids = sel(table, 4)
    assert len(ids) == 4 and sel.last.param == "delta=1"
    assert make_selector("fisher-fair:inf")(table, 4)
    with pytest.raises(ValueError, match="delta"):
        make_solver("fisher-fair", delta=-1.0)


def test_a_delta_sweep_solves_the_max_min_problem_once(make_problem, monkeypatch):
    from selection.solvers.maxmin import MaxminSolver

    p = make_problem(14, 4, seed=3)
    calls = []
    solve = MaxminSolver.solve
    monkeypatch.setattr(MaxminSolver, "solve", lambda self, q: calls.append(1) or solve(self, q))
    base = make_solver("fisher-fair", delta=0.0, backend="highs")
    rs = [base.with_param(d).solve(p) for d in (0.0, 1.0, 2.0, 4.0)]
    assert len(calls) == 1 and all(r.ok for r in rs)
    for d, r in zip((0.0, 1.0, 2.0, 4.0), rs, strict=True):  # same answers as fresh solvers
        fresh = make_solver("fisher-fair", delta=d, backend="enum").solve(p)
        assert r.objectives["sum_Fz"] == pytest.approx(fresh.objectives["sum_Fz"], abs=1e-6)


@pytest.mark.parametrize("backend", ["enum", "highs"])
def test_fedsel_sweep_solves_worst_star_once_per_round(backend, tmp_path, monkeypatch, capsys):
    """A δ sweep through the command line finds worst* once, not once per point."""
    import math as _math

    import selection.solvers.exhaustive as ex
    from fl_oracle.cli import main
    from selection.solvers.maxmin import MaxminSolver

    calls = []
    real_delta, real_solve = ex.best_delta, MaxminSolver.solve

    def counting_delta(problem, delta, **kw):
        if _math.isinf(delta):
            calls.append("enum")
        return real_delta(problem, delta, **kw)

    def counting_solve(self, problem):
        if _math.isinf(self.delta):
            calls.append("milp")
        return real_solve(self, problem)

    monkeypatch.setattr(ex, "best_delta", counting_delta)
    monkeypatch.setattr(MaxminSolver, "solve", counting_solve)
    out = tmp_path / "ff"
    main(["sweep", "--stats", "results/examples/stats.csv", "--k", "5", "--method",
          "fisher-fair", "--delta", "0,1,2,5", "--backend", backend, "--out", str(out)])  # fmt: skip
    front = pd.read_csv(out / "front.csv")
    assert len(front) == 4 and front["status"].eq("optimal").all()
    assert len(calls) == 1, calls
