"""The gap descent's own LP, the restricted MILP's growing core, and the HiGHS race on CBC.

All three change how fast a point is proven, never its answer: each is checked against
enumeration of every selection."""

from __future__ import annotations

import threading
from dataclasses import replace
from itertools import combinations

import numpy as np
import pytest

from selection.problem import SelectionProblem
from selection.solvers.eps import EpsSolver
from selection.solvers.exhaustive import best_eps
from selection.solvers.milp import model as milp_model
from selection.solvers.milp.answer import Answer
from selection.solvers.milp.cbc import CbcBackend, _run_cbc
from selection.solvers.milp.formulations import eps_spec, model_data
from selection.solvers.milp.model import INF, make_backend
from selection.solvers.result import Status
from selection.synthetic import near_tied_stats


def _all(p):
    sels = np.array(list(combinations(range(p.n), p.k)))
    x = np.zeros((len(sels), p.n))
    np.put_along_axis(x, sels, 1.0, axis=1)
    sums = x @ p.Ud
    return x, x @ p.U, sums.max(axis=1) - sums.min(axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_question_lp_answers_and_fixes_only_what_enumeration_allows(make_problem, seed):
    """Set a question's rows by hand (U >= the best U under ε, gap <= a target below, at
    and above the optimum's): a "no" from the LP means no selection qualifies, and every
    binary it fixes takes its fixed value in every selection that does."""
    p = make_problem(14, 4, seed=seed, kind="random")
    spec = eps_spec(model_data(p, "cbc", 1000), p.k, None, None)
    x, values, gaps = _all(p)
    eps_sum = float(np.quantile(gaps, 0.4))
    ok = gaps <= eps_sum
    z = float(values[ok].max())
    answers = set()
    g_opt = float(gaps[ok & (values >= z - 1e-6)].min())  # the lexicographic optimum's gap
    for target in (0.0, 0.5 * g_opt, g_opt - 1e-7, g_opt + 1e-7, eps_sum):
        m = make_backend("cbc", spec)
        m.set_row_bounds("gap", -INF, eps_sum)
        m.set_row_bounds("obj0", z - m._tol(z), INF)
        m.set_row_bounds("gap", -INF, float(target))
        no, cols = m._question_lp(None)
        qualify = ok & (values >= z - m._tol(z)) & (gaps <= target)
        if no:
            assert not qualify.any()
        else:
            assert (x[qualify][:, cols] == m._x_lo[cols]).all()
            assert (m._x_lo[cols] == m._x_up[cols]).all()
        answers.add((no, len(cols) > 0))
    assert len(answers) >= 2  # the targets exercise more than one kind of answer


def test_restricted_milp_core_grows_until_it_admits_a_selection(make_problem, monkeypatch):
    """With one free binary the restricted MILP of the first incumbent admits no selection
    on a tight ε; the core grows (1, 4, 16 binaries) and the point is still the optimum."""
    p = make_problem(20, 4, seed=5, kind="random")
    monkeypatch.setattr(CbcBackend, "core_min_n", 0)
    monkeypatch.setattr(milp_model, "core_size", lambda n_x: 1)
    calls = []
    real = CbcBackend._incumbent

    def spy(self, c, time_limit):
        out = real(self, c, time_limit)
        calls.append(out.status)
        return out

    monkeypatch.setattr(CbcBackend, "_incumbent", spy)
    _, values, gaps = _all(p)
    eps = float(np.quantile(gaps, 0.05)) / p.k
    got = EpsSolver(eps=eps, backend="cbc", enum_limit=0).solve(p)
    want = best_eps(p, eps)
    assert calls[0] == Status.INFEASIBLE and len(calls) >= 2
    assert got.status == "optimal"
    assert got.objectives["utility"] == pytest.approx(p.U[list(want)].mean(), abs=1e-9)


@pytest.mark.parametrize("backend", ["cbc", "scip"])
def test_descent_with_the_lp_fixing_matches_enumeration(make_problem, monkeypatch, backend):
    """Flat U (every selection U-optimal: the descent asks), the LP fixing on from the first
    binary: the question's LP runs and the lexicographic optimum is enumeration's."""
    from selection.solvers.milp.model import milp_backend_class

    cls = milp_backend_class(backend)
    monkeypatch.setattr(cls, "core_min_n", 0)
    asked = []
    real = cls._question_lp

    def spy(self, time_limit):
        out = real(self, time_limit)
        asked.append(out)
        return out

    monkeypatch.setattr(cls, "_question_lp", spy)
    base = SelectionProblem.from_stats(near_tied_stats(14, seed=4), 4)  # rows on a 0.01 grid
    p = replace(base, U=np.full(base.n, 50.0))
    for eps in (8.0, 30.0):
        got = EpsSolver(eps=eps, backend=backend, enum_limit=0).solve(p)
        want = best_eps(p, eps)
        xw = np.zeros(p.n)
        xw[list(want)] = 1.0
        assert got.status == "optimal"
        assert got.objectives["gap"] == pytest.approx(float(np.ptp(xw @ p.Ud)) / p.k, abs=1e-9)
    assert asked


class _FakeTwin:
    """A HiGHS twin whose answer is fixed, to drive the race's two outcomes."""

    def __init__(self, real, status):
        self._real, self._status = real, status
        self._stage = 0

    def _optimize(self, c, time_limit, hint, stop=None):
        return Answer(self._status, None, float("nan"))

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.mark.parametrize("status", [Status.INFEASIBLE, Status.TIME_LIMIT])
def test_race_takes_only_a_no_from_highs(make_problem, monkeypatch, status):
    """A descent question races the HiGHS twin: its "no" ends CBC and answers; any other
    answer of HiGHS is ignored and CBC's stands."""
    p = make_problem(12, 3, seed=1)
    spec = eps_spec(model_data(p, "cbc", 1000), p.k, None, None)
    m = make_backend("cbc", spec)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    m._lp = (0.0, np.zeros(spec.n_col), False)  # as after the LP fixing
    m._twin = _FakeTwin(m._twin, status)
    m._asking = True
    if status == Status.INFEASIBLE:  # a CBC run that only a stop ends (as a long search would)
        monkeypatch.setattr(
            "selection.solvers.milp.cbc._run_cbc",
            lambda cmd, prob, folder, *, warm, stop: not stop.wait(30.0),
        )
    assert m._races()
    out = m._optimize(spec.objectives[0], 30.0, None)
    if status == Status.INFEASIBLE:
        assert out.status == Status.INFEASIBLE and m.race_wins == 1
    else:  # CBC's own answer: the unconstrained max U is feasible
        assert out.status == Status.OPTIMAL and m.race_wins == 0
        assert out[1][: p.n].sum() == pytest.approx(p.k)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_run_cbc_stops_and_kills_cbc(make_problem, tmp_path):
    """A set stop ends the CBC process and reports that nothing was read."""
    import pulp

    p = make_problem(12, 3, seed=1)
    m = make_backend("cbc", eps_spec(model_data(p, "cbc", 1000), p.k, None, None))
    prob = m._prob
    prob.setObjective(pulp.lpSum(m._vars[: p.n]))
    stop = threading.Event()
    stop.set()
    cmd = pulp.PULP_CBC_CMD(msg=False)
    assert _run_cbc(cmd, prob, tmp_path, warm=False, stop=stop) is False
    assert _run_cbc(cmd, prob, tmp_path, warm=False, stop=None) is True
    assert prob.sol_status == pulp.LpSolutionOptimal
