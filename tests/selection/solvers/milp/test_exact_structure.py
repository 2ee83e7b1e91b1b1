"""Count columns, the SCIP backend, proven bounds and the portfolio on the exact routes."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions
from selection.solvers.eps import EpsSolver
from selection.solvers.exhaustive import best_eps
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.milp.cbc import _log_bound
from selection.solvers.milp.formulations import count_groups, eps_spec
from selection.solvers.milp.model import milp_backends
from selection.solvers.milp.portfolio import (
    aligned,
    domain_share,
    fixing_from,
    grid_step,
    portfolio,
    tolerance_gap,
)
from selection.solvers.sweeps import max_off, sweep_eps
from selection.synthetic import FAMILIES, cross_penalty_stats, synthetic_stats


def _problem(family: str, n: int, k: int, seed: int = 0) -> SelectionProblem:
    return SelectionProblem.from_stats(FAMILIES[family](n, seed=seed), k)


def test_count_columns_keep_the_feasible_set():
    p = _problem("cross-penalty", 16, 4)
    data = {"U": p.U, "Ud": p.Ud, "F_z": p.F_z, "B": p.B}
    g = count_groups(p)
    spec = eps_spec(data, p.k, None, None, groups=g)
    assert spec.n_counts == len(np.unique(p.client_domains))
    cols = spec.count_cols
    assert spec.integer[cols].all() and (spec.priority[cols] > 0).all()
    assert not spec.integer[p.n : cols[0]].any()  # hi, lo stay continuous
    # a selection's count row is satisfied by its own per-domain counts
    x = np.zeros(spec.n_col)
    sel = [0, 3, 5, 9]
    x[sel] = 1.0
    labels = np.unique(g)
    x[cols] = [np.sum(g[sel] == lab) for lab in labels]
    for j in range(spec.n_counts):
        r = spec.row_index[f"cnt{j}"]
        assert spec.A[r] @ x == pytest.approx(0.0)
    assert spec.col_up[cols].tolist() == [float(min(p.k, int(np.sum(g == lab)))) for lab in labels]


def test_count_groups_skip_useless_cases():
    p = SelectionProblem.from_stats(synthetic_stats(12, seed=1), 3)
    assert count_groups(p).tolist() == [np.unique(p.client_domains).tolist().index(d)
                                        for d in p.client_domains]  # fmt: skip
    one = replace(p, client_domains=np.array(["mnist"] * 12))
    assert count_groups(one) is None
    each = replace(p, client_domains=np.array([f"d{i}" for i in range(12)]))
    assert count_groups(each) is None  # one client per group: a binary again


@pytest.mark.parametrize("backend", milp_backends())
@pytest.mark.parametrize("counts", ["off", "on"])
@pytest.mark.parametrize("family", ["cross-penalty", "near-tied"])
def test_counts_on_and_off_match_enumeration(backend, counts, family):
    p = _problem(family, 14, 4, seed=3)
    for eps in (np.inf, 6.0, 2.0):
        want = best_eps(p, eps)
        got = EpsSolver(eps=eps, backend=backend, counts=counts).solve(p)
        if not want:
            assert str(got.status) == "infeasible"
            continue
        assert str(got.status) == "optimal", got.message
        assert got.objectives["utility"] == pytest.approx(
            float(np.mean(p.U[list(want)])), abs=2e-3 if backend == "cpsat" else 1e-9
        )
        # a proven optimum bounds itself
        u = got.objectives["utility"]
        assert u - 1e-9 <= got.bound <= u + 1e-6


def test_maxmin_with_counts_matches_without():
    p = _problem("cross-penalty", 40, 6, seed=2)
    for backend in ("cbc", "scip", "highs"):
        a = MaxminSolver(delta=1.0, backend=backend, counts="on", enum_limit=0).solve(p)
        b = MaxminSolver(delta=1.0, backend=backend, counts="off", enum_limit=0).solve(p)
        assert a.objectives["worst"] == pytest.approx(b.objectives["worst"], abs=1e-9)
        assert a.objectives["utility"] == pytest.approx(b.objectives["utility"], abs=1e-6)


def _hard() -> tuple[SelectionProblem, float]:
    """A cross-penalty round whose tight ε point no route proves in a fraction of a second."""
    p = SelectionProblem.from_stats(cross_penalty_stats(400, seed=0), 40)
    top = tuple(np.argsort(-p.U, kind="stable")[: p.k])
    return p, float(np.ptp(p.Ud[list(top)].mean(axis=0))) * 0.1


@pytest.mark.parametrize("backend", ["cbc", "highs", "cpsat", "scip"])
def test_a_stopped_point_carries_a_valid_bound(backend):
    p, eps = _hard()
    exact = EpsSolver(eps=eps, backend="cbc", counts="on").solve(p)
    assert str(exact.status) == "optimal"
    # on a loaded machine a backend may spend a short limit before its first bound (CP-SAT's
    # presolve): the limit grows until the stopped point has one or the point is proven
    for limit in (0.3, 1.0, 3.0):
        stopped = EpsSolver(eps=eps, backend=backend, time_limit=limit, counts="off").solve(p)
        if str(stopped.status) == "optimal":
            pytest.skip(f"{backend} proved the point within {limit} s on this machine")
        assert str(stopped.status) == "time_limit"
        if math.isfinite(stopped.bound):
            break
    assert math.isfinite(stopped.bound), stopped.message
    # the exact optimum lies between the incumbent and the bound
    assert stopped.bound >= exact.objectives["utility"] - 1e-6
    if stopped.ok:
        assert stopped.objectives["utility"] <= exact.objectives["utility"] + 1e-6


def test_cbc_log_bound(tmp_path):
    log = tmp_path / "cbc.log"
    log.write_text(
        "Result - Stopped on time limit\n\nObjective value:                11868.00000000\n"
        "Upper bound:                    16431.580\nGap:                            -0.28\n"
    )
    assert _log_bound(log) == pytest.approx(16431.58)
    log.write_text("Result - Optimal solution found\n\nObjective value:  22423.00000000\n")
    assert math.isnan(_log_bound(log))
    assert math.isnan(_log_bound(tmp_path / "missing.log"))


def test_complete_sweep_certificate():
    p = _problem("near-tied", 40, 4)
    front = sweep_eps(p, complete=True)
    assert front.attrs["exact"]
    assert front.attrs["max_off"] == 0.0
    assert "bound" in front.columns and "route_reason" in front.columns
    # a front with a missing bound is not certified
    front.loc[front.index[0], "bound"] = float("nan")
    assert math.isnan(max_off(front, "utility"))


def test_portfolio_reads_the_shape():
    p = _problem("synthetic", 40, 4)
    assert aligned(p) and portfolio(p)[0] == "cbc"
    small = _problem("cross-penalty", 40, 4)
    assert not aligned(small) and portfolio(small)[0] == "cbc"  # below PORTFOLIO_MIN_N
    big = _problem("cross-penalty", 600, 60)
    route, why = portfolio(big)
    assert route == "cbc" and "not the mean" in why and "LP fixing from 500 " in why
    assert fixing_from(big) == 500 and fixing_from(_problem("synthetic", 600, 60)) == 1000
    assert portfolio(_problem("near-tied", 600, 60))[0] == "cbc"  # 2 decimals: fine
    coarse = SelectionProblem.from_stats(_on_a_grid(synthetic_stats(600, seed=1), 0.5), 60)
    assert grid_step(coarse) == pytest.approx(0.5)
    route, why = portfolio(coarse)  # a coarse grid: CBC stops its stages on it
    assert route == "cbc" and "value grid" in why and "1,000" in why
    r = EpsSolver(eps=5.0).solve(_problem("cross-penalty", 30, 3))
    assert r.backend == "enum" and "enum_limit" in r.route_reason
    # rows set by the client's own domain: SCIP with count columns, below 500 clients too
    tied = _problem("near-tied", 60, 6)
    route, why = portfolio(tied, small_n_scip=True)
    assert route == "scip" and "own domains explain" in why
    assert portfolio(tied)[0] == "cbc"  # max-min and fisher-fair keep CBC there
    assert EpsSolver(eps=1.0).route(tied) == "scip"
    assert MaxminSolver(delta=1.0).route(tied) == "cbc"
    off_grid = replace(tied, Ud=tied.Ud + 1e-4 * np.arange(tied.n)[:, None] / tied.n)
    assert portfolio(off_grid, small_n_scip=True)[0] == "cbc"  # no value grid: no SCIP
    big_floats = replace(big, Ud=big.Ud + 1e-4 * np.arange(big.n)[:, None] / big.n)
    assert portfolio(big_floats)[0] == "cbc"
    # a max-min stage on float rows takes HiGHS at every N (maxmin_routes.md); on a grid, CBC
    route, why = portfolio(off_grid, max_min=True)
    assert route == "highs" and "no value grid" in why
    assert portfolio(big_floats, max_min=True)[0] == "highs"
    assert portfolio(big, max_min=True)[0] == "cbc" and portfolio(tied, max_min=True)[0] == "cbc"
    assert MaxminSolver(delta=1.0).route(off_grid) == "highs"
    assert EpsSolver(eps=1.0).route(big_floats) == "cbc"  # not a max-min stage


def test_the_cross_device_studys_max_min_round_is_proven_on_highs():
    """A round of the cross-device study (N = 200, probe statistics) that CBC did not prove in
    33 minutes: auto takes HiGHS and proves it; CP-SAT and an enumeration-free check agree."""
    from selection.schema import read_stats

    root = Path(__file__).resolve().parents[4]
    p = SelectionProblem.from_stats(read_stats(root / "benchmarks/data/probe_round_n200_1.csv"), 20)
    r = MaxminSolver(delta=2.0).solve(p)
    assert r.status == "optimal" and r.backend == "highs" and "no value grid" in r.route_reason
    other = MaxminSolver(delta=2.0, backend="cpsat").solve(p)
    assert other.objectives["worst"] == pytest.approx(r.objectives["worst"], abs=1e-6)
    assert r.objectives["utility"] >= p.U[np.argsort(-p.U)[:20]].mean() - 2.0 - 1e-9


def test_domain_share():
    assert domain_share(_problem("near-tied", 80, 8)) > 0.9
    assert 0.2 < domain_share(_problem("synthetic", 80, 8)) < 0.7
    p = _problem("synthetic", 40, 4)
    # rows that are a function of the domain alone: all explained; rows that ignore it: none
    g = count_groups(p)
    by_domain = replace(p, Ud=np.stack([g * 3.0 + d for d in range(p.d)], axis=1))
    assert domain_share(by_domain) == pytest.approx(1.0)
    flat_rows = np.tile(np.arange(p.n // len(np.unique(g)), dtype=float), len(np.unique(g)))
    balanced = replace(
        p, Ud=np.tile(flat_rows[np.argsort(np.argsort(g, kind="stable"))][:, None], (1, p.d))
    )
    assert domain_share(balanced) == pytest.approx(0.0, abs=1e-12)
    one = replace(p, client_domains=np.array(["mnist"] * p.n))
    assert domain_share(one) == 0.0


def _on_a_grid(table, step: float):
    """Per-domain accuracies on a grid of ``step`` points, U their mean (the oracle's shape)."""
    cols = [c for c in table.columns if c.startswith("U_")]
    table[cols] = (table[cols] / step).round() * step
    table["U"] = table[cols].mean(axis=1)
    return table


def test_no_bound_from_a_solvers_infinity():
    """SCIP reports 1e20 as its dual bound before the root LP: never a proven bound."""
    p = SelectionProblem.from_stats(cross_penalty_stats(600, seed=0), 60)
    r = EpsSolver(eps=2.0, backend="scip", counts="off", time_limit=0.012).solve(p)
    assert math.isnan(r.bound) or r.bound < 101.0


def test_cpsat_proves_nothing_on_data_it_rounds():
    """Rows that are not multiples of 1/scale: the rounded model may cut off the optimum
    (here client 0, gap 0.0009 <= ε), so CP-SAT's bound is not reported."""
    t = synthetic_stats(4, seed=0)
    cols = [c for c in t.columns if c.startswith("U_")]
    t[cols] = 50.0
    t.loc[0, cols[1]] = 50.0009
    t["U"] = [90.0, 10.0, 10.0, 10.0]
    p = SelectionProblem.from_stats(t, 1)
    r = EpsSolver(eps=0.0009, backend="cpsat").solve(p)
    assert math.isnan(r.bound)
    exact = EpsSolver(eps=0.0009, backend="enum").solve(p)
    assert exact.selected == (0,)
    # on 2-decimal data CP-SAT's model is the true problem: its bound is exact
    q = _problem("cross-penalty", 14, 4, seed=3)
    b = EpsSolver(eps=6.0, backend="cpsat").solve(q)
    assert b.bound == pytest.approx(b.objectives["utility"], abs=1e-9)


def test_the_sweep_keeps_a_callers_wall_budget():
    p = _problem("near-tied", 50, 5)
    front = sweep_eps(p, complete=True, max_seconds=0.2)
    assert "enumeration" not in " ".join(front["route_reason"].astype(str))


def test_the_certificate_says_where_an_unfinished_sweep_stopped():
    import pandas as pd

    from selection.cli.fronts import certificate as _certificate
    from selection.solvers.eps import EpsSolver as Eps

    front = pd.DataFrame(
        {
            "method": ["eps", "eps", "eps"],
            "param": ["eps=inf", "eps=1.5", "eps=0.9"],
            "utility": [60.0, 59.5, float("nan")],
            "bound": [60.0, 59.6, 59.8],
            "selected": ["a;b", "a;c", ""],
            "status": ["optimal", "time_limit", "time_limit"],
        }
    )
    line = _certificate(front, Eps, whole=True)
    assert "down to eps=0.9 (nothing is known below it)" in line
    assert "at most 0.1 pp" in line
    done = front.iloc[:2]
    assert "at any ε the sweep passed" in _certificate(done, Eps, whole=True)
    nobound = done.assign(bound=[60.0, float("nan")])
    assert "not certified" in _certificate(nobound, Eps, whole=True)


@pytest.mark.parametrize("backend", ["cbc", "scip", "highs"])
@pytest.mark.parametrize("family", ["near-tied", "cross-penalty"])
def test_the_complete_sweep_is_the_exact_front_on_every_backend(backend, family):
    from selection.solvers.exhaustive import exact_front

    p = _problem(family, 26, 3, seed=5)
    want = exact_front(p)[["utility", "gap"]].to_numpy()
    front = sweep_eps(p, complete=True, options=SweepOptions(backend=backend))
    got = front[front["selected"] != ""][["utility", "gap"]].to_numpy()
    order = np.lexsort((got[:, 1], -got[:, 0]))
    np.testing.assert_allclose(got[order], want, atol=1e-9)
    assert front.attrs["exact"] and front.attrs["max_off"] == 0.0


def test_the_front_step_follows_the_value_grid():
    from selection.solvers.milp.portfolio import value_quantum
    from selection.solvers.sweeps import DEFAULT_STEP, front_step

    p = _problem("near-tied", 26, 3, seed=5)  # 2 decimals
    assert value_quantum(p.Ud) == pytest.approx(0.01)
    assert front_step(p) == pytest.approx(0.01 / 6)
    floats = replace(p, Ud=p.Ud + np.random.default_rng(0).uniform(0, 1e-3, p.Ud.shape))
    assert value_quantum(floats.Ud) == 0.0 and front_step(floats) == DEFAULT_STEP
    thirds = replace(p, Ud=np.round(p.Ud * 3) / 3)  # accuracies on 300 images
    assert value_quantum(thirds.Ud) == pytest.approx(1 / 3)
    # the instance whose ε = gap − 1e-6 point SCIP misjudged: its front is exact now
    from selection.solvers.exhaustive import exact_front

    want = exact_front(p)[["utility", "gap"]].to_numpy()
    front = sweep_eps(p, complete=True, options=SweepOptions(backend="scip"))
    got = front[front["selected"] != ""][["utility", "gap"]].to_numpy()
    np.testing.assert_allclose(got[np.lexsort((got[:, 1], -got[:, 0]))], want, atol=1e-9)


@pytest.mark.parametrize("counts", ["off", "on"])
def test_an_eps_row_just_below_a_gap_is_kept_off_it(counts):
    # ε 1e-6 pp below the gap of the U = 56.26 selection: SCIP returned 55.2567 (counts off)
    # where 55.8433 is attainable, until ε rows were put half a value-grid step from any gap
    p = _problem("near-tied", 26, 3, seed=5)
    eps = 9.136665667
    want = float(np.mean(p.U[list(best_eps(p, eps))]))
    for backend in ("scip", "cbc", "highs"):
        got = EpsSolver(eps=eps, backend=backend, counts=counts).solve(p)
        assert got.objectives["utility"] == pytest.approx(want, abs=1e-9), backend


def test_scip_keeps_the_optimum_with_count_columns():
    # with SCIP's reduced-cost propagation on, count columns cut the optimum here (57.656)
    from selection.synthetic import near_tied_stats

    p = SelectionProblem.from_stats(near_tied_stats(50, seed=0), 5)
    got = EpsSolver(eps=6.679, backend="scip", counts="on", enum_limit=0).solve(p)
    assert got.objectives["utility"] == pytest.approx(57.71, abs=1e-9)


@pytest.mark.parametrize("backend", ["scip", "cbc", "highs"])
@pytest.mark.parametrize("steps", [8, 1])
def test_the_gap_descent_keeps_the_lexicographic_optimum(backend, steps, monkeypatch):
    """The second stage by gap descent: the smallest gap among the U-optimal selections, as
    enumeration has it, also when the descent stops after ``steps`` yeses and finishes
    directly; forced onto HiGHS, which does not descend by default (SCIP and CBC do)."""
    from selection.solvers.milp import descent
    from selection.solvers.milp.model import LexBackend

    monkeypatch.setattr(LexBackend, "descends", True)
    monkeypatch.setattr(descent, "DESCENT_STEPS", steps)
    calls, yeses = [], []
    real = LexBackend._descend

    def spy(self, *a):
        calls.append(1)
        out = real(self, *a)
        first = self._value(1, list(self._selection(a[0])), a[0])
        yeses.append(out.values is not None and out.value > first + 1e-9)  # a smaller gap
        return out

    monkeypatch.setattr(LexBackend, "_descend", spy)
    checked = 0
    flat = _problem("near-tied", 14, 4, seed=4)
    flat = replace(flat, U=np.full(flat.n, 50.0))  # every selection U-optimal: gaps decide
    for p in [_problem("near-tied", 16, 4, 1), _problem("cross-penalty", 15, 4, 2), flat]:
        k = p.k
        for eps in (np.inf, 8.0, 4.0, 2.0):
            want = best_eps(p, eps)
            got = EpsSolver(eps=eps, backend=backend, enum_limit=0).solve(p)
            if not want:
                assert str(got.status) == "infeasible"
                continue
            x = np.zeros(p.n)
            x[list(want)] = 1.0
            assert str(got.status) == "optimal", got.message
            assert got.objectives["utility"] == pytest.approx(float(p.U @ x) / k, abs=1e-9)
            assert got.objectives["gap"] == pytest.approx(float(np.ptp(x @ p.Ud)) / k, abs=1e-9)
            checked += 1
    assert checked >= 6 and len(calls) >= checked
    assert any(yeses)  # at least one point where stage 1's selection was not the smallest gap


def test_cbc_asks_the_descents_questions_without_heuristics(monkeypatch):
    """CBC runs with its cuts off on every solve and with its heuristics off only on the
    descent's questions; the answer is still the lexicographic optimum."""
    import pulp

    from selection.solvers.milp.cbc import CbcBackend

    seen = []
    real = pulp.PULP_CBC_CMD

    def spy(*a, **kw):
        seen.append(list(kw.get("options") or []))
        return real(*a, **kw)

    monkeypatch.setattr(pulp, "PULP_CBC_CMD", spy)
    assert CbcBackend.descends
    p = _problem("near-tied", 14, 4, seed=4)
    p = replace(p, U=np.full(p.n, 50.0))  # every selection U-optimal: the descent asks
    got = EpsSolver(eps=8.0, backend="cbc", enum_limit=0).solve(p)
    want = best_eps(p, 8.0)
    x = np.zeros(p.n)
    x[list(want)] = 1.0
    assert got.objectives["gap"] == pytest.approx(float(np.ptp(x @ p.Ud)) / p.k, abs=1e-9)
    assert len(seen) >= 2 and all("cuts off" in o for o in seen)
    assert "heuristics off" not in seen[0]  # stage 1
    assert "heuristics off" in seen[1]  # the descent's first question


def test_the_stages_stop_on_the_value_grid():
    from selection.solvers.fisher_fair import FisherFairSolver

    p = _problem("near-tied", 40, 4)
    eps = EpsSolver(eps=5.0, backend="cbc", enum_limit=0)
    m = eps.model(p)
    assert m.spec.quanta == pytest.approx([0.01, 0.01])
    assert m.spec.descent[0] == "gap" and m.spec.descent[1] == pytest.approx(0.01)
    m._stage = 0
    assert m.stop_gap() == pytest.approx(0.0049)
    mm = MaxminSolver(delta=1.0, backend="cbc", enum_limit=0).model(p)
    assert mm.spec.quanta == pytest.approx([0.01, 0.01]) and mm.spec.descent is None
    ff = FisherFairSolver(delta=1.0, backend="cbc", enum_limit=0).model(p)
    assert ff.spec.quanta == pytest.approx([0.0, 0.01])  # Σ F_z: no grid
    ff._stage = 0
    assert ff.stop_gap() == pytest.approx(1e-9)
    # off the grid: no early stop, no descent; a tolerance the user asked for still counts
    floats = replace(p, Ud=p.Ud + 1e-4 * np.arange(p.n)[:, None] / p.n)
    off = EpsSolver(eps=5.0, backend="cbc", enum_limit=0).model(floats)
    assert off.spec.quanta[1] == 0.0 and off.spec.descent is None
    tol = EpsSolver(eps=5.0, backend="cbc", enum_limit=0, tolerance=0.1).model(p)
    tol._stage = 0
    assert tol.stop_gap() == pytest.approx(tolerance_gap(0.1, p.k))
    assert 0.099 * p.k < tolerance_gap(0.1, p.k) < 0.1 * p.k
    # CP-SAT's objectives are integers: it keeps its own exact stop
    assert EpsSolver(eps=5.0, backend="cpsat", enum_limit=0).model(p).spec.quanta == []


@pytest.mark.parametrize("backend", ["cbc", "highs", "scip"])
def test_the_backends_stop_where_stop_gap_says(backend, monkeypatch):
    from selection.solvers.milp.model import LexBackend

    seen = []
    real = LexBackend.stop_gap
    monkeypatch.setattr(LexBackend, "stop_gap", lambda self: seen.append(real(self)) or seen[-1])
    p = _problem("near-tied", 40, 4)
    solver = EpsSolver(eps=5.0, backend=backend, enum_limit=0)
    r = solver.solve(p)
    assert str(r.status) == "optimal"
    assert seen and max(seen) == pytest.approx(0.0049)  # 0.49 of the 0.01 grid, each stage
    model = solver.model(p)
    if backend == "highs":
        assert model._h.getOptionValue("mip_abs_gap")[1] == pytest.approx(0.0049)
    if backend == "scip":
        assert model._m.getParam("limits/absgap") == pytest.approx(0.0049)


def test_a_tolerant_bound_sits_on_the_value_grid():
    p = _problem("near-tied", 40, 4, seed=2)
    for eps in (8.0, 4.0):
        r = EpsSolver(eps=eps, backend="highs", enum_limit=0, tolerance=0.05).solve(p)
        assert str(r.status) == "feasible"
        u = r.objectives["utility"]
        steps = (r.bound - u) * p.k / 0.01  # bound − U in grid steps
        assert steps == pytest.approx(round(steps), abs=1e-6) and r.bound <= u + 0.05


def test_the_descent_restores_what_it_fixed_after_an_exception(monkeypatch):
    from selection.solvers.milp.model import LexBackend

    monkeypatch.setattr(LexBackend, "descends", True)
    monkeypatch.setattr(LexBackend, "core_min_n", 0)
    p = _problem("near-tied", 60, 6, seed=1)
    p = replace(p, U=np.full(p.n, 50.0))  # every selection U-optimal: the descent has yeses
    solver = EpsSolver(eps=8.0, backend="highs", enum_limit=0, counts="off")
    model = solver.model(p)
    real = type(model)._optimize
    asked = []

    def failing(self, c, *a):
        if self._stage == 0 and self._row_up[self.spec.row_index["gap"]] < np.inf:
            asked.append(1)
            if len(asked) == 2:  # the second question: after a yes and its fixing
                raise RuntimeError("backend failed inside the descent")
        return real(self, c, *a)

    monkeypatch.setattr(type(model), "_optimize", failing)
    with pytest.raises(RuntimeError):
        solver.solve(p)
    lp = model._h.getLp()
    assert np.allclose(lp.col_lower_, model.spec.col_lo)
    assert np.allclose(lp.col_upper_, model.spec.col_up)
    assert len(asked) == 2
    monkeypatch.setattr(type(model), "_optimize", real)
    got = solver.solve(p)  # the same model answers the point as a fresh one does
    fresh = EpsSolver(eps=8.0, backend="cbc", enum_limit=0).solve(p)
    assert got.objectives["gap"] == pytest.approx(fresh.objectives["gap"], abs=1e-9)
