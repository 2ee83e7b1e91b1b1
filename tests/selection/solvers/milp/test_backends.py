"""MILP backends: agreement, the persistent model, status mapping, time limits, stdout."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from selection.solvers.eps import EpsSolver
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.milp.answer import Answer
from selection.solvers.milp.formulations import eps_spec, model_data
from selection.solvers.milp.model import LexBackend, MilpSpec
from selection.solvers.result import Status

BACKENDS = ("highs", "cbc", "cpsat", "enum")


@pytest.mark.parametrize("kind", ["synthetic", "random"])
def test_backends_agree_on_objectives(make_problem, kind):
    p = make_problem(16, 4, seed=21, kind=kind, decimals=3)
    for e in (None, 20.0, 10.0, 5.0, 2.0):
        rows = [EpsSolver(eps=e, backend=b).solve(p) for b in BACKENDS]
        assert len({r.status for r in rows}) == 1, [r.status for r in rows]
        for r in rows[1:]:
            for key in ("utility", "gap", "worst"):
                assert r.objectives.get(key) == pytest.approx(rows[0].objectives.get(key), abs=1e-6)
    for d in (0.0, 1.0, 4.0):
        rows = [MaxminSolver(delta=d, backend=b).solve(p) for b in BACKENDS]
        for r in rows[1:]:
            for key in ("utility", "gap", "worst"):
                assert r.objectives[key] == pytest.approx(rows[0].objectives[key], abs=1e-6)


def test_highs_model_builds_fast_at_n5000(make_problem):
    p = make_problem(5000, 500, seed=0)
    m = EpsSolver(backend="highs").model(p)
    assert m.build_seconds < 1.0  # milliseconds when the machine is idle
    # card, hi/lo per domain, gap, the 4·3 pairwise ε rows, obj0
    assert m._h.getNumCol() == 5002 and m._h.getNumRow() == 1 + 2 * 4 + 1 + 12 + 1
    nz_max = 5000 + 2 * 4 * 5001 + 2 + 12 * 5000 + 5000  # zeros are not stored
    assert 45_000 <= m._h.getNumNz() <= nz_max


def test_eps_row_bounds_change_in_place(make_problem):
    p = make_problem(12, 3, seed=2)
    s = EpsSolver(backend="highs")
    m = s.model(p)
    s.with_param(7.5).solve(p)
    lp = m._h.getLp()
    pairs = [r for name, r in m.spec.row_index.items() if name.startswith("pair")]
    assert len(pairs) == 4 * 3  # HiGHS carries ε on the pairwise rows, "gap" stays free
    assert all(lp.row_upper_[r] == pytest.approx(3 * 7.5) for r in pairs)
    assert lp.row_upper_[m.spec.row_index["gap"]] > 1e20
    assert lp.row_lower_[m.spec.row_index["obj0"]] < -1e20  # stage row freed again
    # the reduced-cost fixing of the solve is undone: every binary is free again
    assert list(lp.col_lower_[: p.n]) == [0.0] * p.n and list(lp.col_upper_[: p.n]) == [1.0] * p.n


def test_highs_banner_stays_off_stdout():
    code = (
        "from selection.solvers.milp.highs import new_highs\n"
        "h = new_highs(); h.run(); new_highs()\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "clean\n"


class _Scripted(LexBackend):
    """A backend whose stage outcomes are scripted, to test the lexicographic loop."""

    name = "scripted"

    def __init__(self, spec, outcomes):
        self.outcomes = list(outcomes)
        self.bounds = {}
        super().__init__(spec)

    def _build(self):
        pass

    def _set_row_bounds(self, row, lo, up):
        self.bounds[row] = (lo, up)

    def _optimize(self, c, time_limit, hint):
        return Answer(*self.outcomes.pop(0))


@pytest.fixture
def spec(make_problem):
    p = make_problem(6, 2, seed=1)
    return eps_spec(model_data(p, "highs", 1000), 2, None, None)


def _vec(spec: MilpSpec, sel):
    v = np.zeros(spec.n_col)
    v[list(sel)] = 1.0
    return v


def test_lex_loop_limit_in_stage_two_keeps_stage_one(spec):
    b = _Scripted(
        spec, [(Status.OPTIMAL, _vec(spec, (1, 4)), 100.0), (Status.TIME_LIMIT, None, np.nan)]
    )
    out = b.solve(time_limit=5.0)
    assert out.status == Status.TIME_LIMIT and out.selected == (1, 4)
    assert "incumbent" in out.message
    assert b.bounds[spec.row_index["obj0"]][0] == -np.inf  # freed after the solve


def test_lex_loop_statuses(spec):
    assert _Scripted(spec, [(Status.INFEASIBLE, None, np.nan)]).solve().status == Status.INFEASIBLE
    out = _Scripted(spec, [(Status.TIME_LIMIT, None, np.nan)]).solve(1.0)
    assert out.status == Status.TIME_LIMIT and out.selected == ()
    out = _Scripted(spec, [(Status.ERROR, None, np.nan, "boom")]).solve()
    assert out.status == Status.ERROR and out.message == "boom"
    two = [(Status.OPTIMAL, _vec(spec, (0, 2)), 1.0), (Status.OPTIMAL, _vec(spec, (0, 3)), -1.0)]
    out = _Scripted(spec, two).solve()
    assert out.status == Status.OPTIMAL and out.selected == (0, 3)
    bad = [(Status.OPTIMAL, _vec(spec, (0,)), 1.0), (Status.OPTIMAL, _vec(spec, (0,)), 1.0)]
    assert _Scripted(spec, bad).solve().status == Status.ERROR


def test_lex_loop_fixes_stage_one_at_the_exact_value(spec):
    b = _Scripted(
        spec, [(Status.OPTIMAL, _vec(spec, (1, 4)), 123.0), (Status.OPTIMAL, _vec(spec, (1, 4)), 0)]
    )
    seen = []
    orig = b._set_row_bounds

    def record(row, lo, up):
        seen.append((row, lo, up))
        orig(row, lo, up)

    b._set_row_bounds = record
    b.solve()
    U = spec.objectives[0][: spec.n_x]
    row, lo, _ = seen[0]
    assert row == spec.row_index["obj0"]
    exact = U[1] + U[4]
    assert lo == pytest.approx(exact - 1e-6 - 1e-9 * exact, abs=1e-12)  # not the reported 123


def test_cbc_reports_time_limit_when_pulp_says_optimal(make_problem, monkeypatch):
    import pulp

    p = make_problem(8, 2, seed=3)
    s = EpsSolver(backend="cbc", time_limit=5.0)
    m = s.model(p)

    def fake_run(cmd, prob, folder, *, warm, stop):
        for i, v in enumerate(m._vars):
            v.varValue = 1.0 if i in (0, 5) else 0.0
        prob.status = pulp.LpStatusOptimal  # what PuLP reports on a limit with a solution
        prob.sol_status = pulp.LpSolutionIntegerFeasible
        return True

    monkeypatch.setattr("selection.solvers.milp.cbc._run_cbc", fake_run)
    r = s.solve(p)
    assert r.status == "time_limit" and r.selected == (0, 5)


def test_real_time_limit_returns_a_valid_status(make_problem):
    p = make_problem(400, 40, seed=1)
    r = EpsSolver(eps=2.0, backend="highs", time_limit=0.05).solve(p)
    assert r.status in ("time_limit", "optimal", "infeasible")
    assert len(r.selected) in (0, 40)
    assert r.seconds < 5.0


def test_highs_thread_count_can_change_between_solvers(make_problem):
    p = make_problem(20, 4, seed=6)
    runs = [EpsSolver(eps=8.0, backend="highs", threads=t).solve(p) for t in (1, 2, 1)]
    assert [r.status for r in runs] == ["optimal"] * 3
    assert len({r.selected for r in runs}) == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_core_bound_is_valid_and_fixing_keeps_every_near_optimal_selection(make_problem, seed):
    """The Lagrangian bound of milp.fixing over-estimates every feasible selection, and the
    columns it fixes agree with every selection within the tie tolerance of the optimum
    (checked against all C(16, 4) selections)."""
    from itertools import combinations

    from selection.solvers.milp.fixing import best_bound, fixable, preferred
    from selection.solvers.milp.model import INF, make_backend

    p = make_problem(16, 4, seed=seed, kind="random")
    spec = eps_spec(model_data(p, "highs", 1000), p.k, None, None, pairwise=True)
    m = make_backend("highs", spec)
    sels = np.array(list(combinations(range(p.n), p.k)))
    sums = p.Ud[sels].sum(axis=1)
    gaps = sums.max(axis=1) - sums.min(axis=1)
    eps = float(np.quantile(gaps, 0.3)) / p.k
    for name in spec.row_index:
        if name.startswith("pair"):
            m.set_row_bounds(name, -INF, p.k * eps)
    c = spec.objectives[0]
    status, y = m._relax(c, None)
    assert status == Status.OPTIMAL
    bound, d = best_bound(spec, c, y, m._row_lo, m._row_up)
    values = p.U[sels].sum(axis=1)
    ok = gaps <= p.k * eps
    assert ok.any() and bound >= values[ok].max() - 1e-9
    z = float(values[ok].max())
    tol = m._tol(z)
    mask = fixable(bound, d, spec.n_x, z, tol)
    pref = preferred(d, spec.n_x)
    x = np.zeros((len(sels), p.n))
    np.put_along_axis(x, sels, 1.0, axis=1)
    assert mask.sum() > 0  # the fixing does something here
    near = ok & (values >= z - tol)
    assert (x[near][:, mask] == pref[mask]).all()
    # and the solve through the fixing agrees with enumeration
    out = m.solve()
    assert p.U[list(out.selected)].sum() == pytest.approx(z, abs=1e-6)


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_stage_two_fixing_survives_rounded_solution_values(make_problem, backend):
    """CBC reports hi/lo with ~8 digits; the second stage's fixing once took the value of
    that report, fixed the stage-1 selection's own client out and made stage 2 infeasible
    (status time_limit). The exact stage value is used now."""
    from selection.solvers.exhaustive import ExhaustiveSolver

    p = make_problem(18, 5, seed=0)
    r = EpsSolver(eps=14.58543958, backend=backend).solve(p)
    e = ExhaustiveSolver(eps=14.58543958).solve(p)
    assert r.status == Status.OPTIMAL, r.message
    for key in ("utility", "gap"):
        assert r.objectives[key] == pytest.approx(e.objectives[key], abs=1e-9)


@pytest.mark.parametrize("backend", ["cbc", "highs", "cpsat"])
def test_second_stage_is_lexicographic_on_near_tied_rows(backend):
    """Regression: CBC warm-started in stage 2 kept the start's gap (7.446) and called it
    optimal; at the same U = 57.814 enumeration finds gap 6.968."""
    from selection.problem import SelectionProblem
    from selection.synthetic import near_tied_stats

    problem = SelectionProblem.from_stats(near_tied_stats(50), 5)
    eps = 7.932 - 1e-6
    exact = EpsSolver(eps=eps, backend="enum", enum_limit=3_000_000).solve(problem)
    got = EpsSolver(eps=eps, backend=backend).solve(problem)
    assert got.status == Status.OPTIMAL
    assert got.objectives["utility"] == pytest.approx(exact.objectives["utility"], abs=1e-6)
    assert got.objectives["gap"] == pytest.approx(exact.objectives["gap"], abs=1e-6)
    assert exact.objectives["gap"] == pytest.approx(6.968, abs=1e-9)


@pytest.mark.parametrize("backend", ["cbc", "highs"])
def test_reduced_cost_fixing_keeps_the_exact_answer_on_small_problems(backend, monkeypatch):
    """The fixing only runs from core_min_n binaries on; forced on a small problem it must
    still give enumeration's answers (ε points across the range)."""
    from selection.problem import SelectionProblem
    from selection.solvers.milp.model import LexBackend
    from selection.synthetic import synthetic_stats

    monkeypatch.setattr(LexBackend, "core_min_n", 0)
    problem = SelectionProblem.from_stats(synthetic_stats(40, seed=3), 4)
    for eps in (np.inf, 8.0, 4.0, 2.0, 1.0):
        exact = EpsSolver(eps=eps, backend="enum").solve(problem)
        got = EpsSolver(eps=eps, backend=backend).solve(problem)
        assert got.status == exact.status
        if exact.ok:
            for key in ("utility", "gap"):
                assert got.objectives[key] == pytest.approx(exact.objectives[key], abs=1e-6)


def test_highs_persistent_model_stops_each_run_at_its_own_allowance():
    """HiGHS 1.16 compares ``time_limit`` with the current run's time; a limit given as the
    accumulated time plus the allowance let the n-th run of a persistent model go on for all
    earlier runs' time too (a 60 s point ran 78 s). Four 0.4 s runs of a hard model: the
    last is as short as the first."""
    import time

    from selection.solvers.milp.highs import HighsBackend

    rng = np.random.default_rng(0)
    n, k = 300, 75
    rows = [("card", np.ones(n), float(k), float(k))]
    rows += [
        (f"w{r}", rng.integers(1, 1000, n).astype(float), -np.inf, 470.0 * k) for r in range(8)
    ]
    c = rng.integers(1, 1000, n).astype(float)
    m = HighsBackend(MilpSpec.build(n, k, [], rows, [c]))
    took = []
    for _ in range(4):
        t0 = time.perf_counter()
        status = m._optimize(c, 0.4, None).status
        took.append(time.perf_counter() - t0)
        assert status in (Status.TIME_LIMIT, Status.OPTIMAL)
    assert status == Status.TIME_LIMIT  # hard enough that the allowance decides
    assert took[-1] < 0.4 + 1.0


def test_cpsat_refuses_data_its_integers_cannot_hold():
    """The weighted surrogate's rows carry n_samples: at 10^15 samples a client they pass
    2^53 after scaling (where the floats they are computed in stop being exact integers);
    CP-SAT says so in one line instead of a pybind11 cast error."""
    from selection.errors import SelectionError
    from selection.problem import SelectionProblem
    from selection.solvers.eps import EpsSolver
    from selection.synthetic import synthetic_stats

    t = synthetic_stats(12, seed=1)
    t["n_samples"] = 10**15
    p = SelectionProblem.from_stats(t, 3, surrogate="weighted")
    with pytest.raises(SelectionError, match="beyond the 9.01e\\+15 up to which its integers"):
        EpsSolver(eps=50, backend="cpsat", enum_limit=0).solve(p)
    t["n_samples"] = 10**4  # well inside: solved, and equal to enumeration's answer
    p = SelectionProblem.from_stats(t, 3, surrogate="weighted")
    got = EpsSolver(eps=50, backend="cpsat", enum_limit=0).solve(p)
    ref = EpsSolver(eps=50, backend="auto", enum_limit=10**6).solve(p)
    assert got.status == "optimal" and got.objectives["utility"] == pytest.approx(
        ref.objectives["utility"], abs=1e-6
    )
