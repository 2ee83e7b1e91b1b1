"""SCIP backend through PySCIPOpt (its wheels bundle SCIP 10).

One persistent SCIP model: between solves the transformed problem is freed
(``freeTransform``) and only row sides, column bounds and the objective change. Options:
``limits/gap = mip_gap``, ``limits/absgap = 1e-9`` (exact optimum), feasibility tolerance
1e-9 (as on HiGHS and CBC: at SCIP's default 1e-6 a selection just outside an ε row of
sum-unit utilities of ~100 would be accepted), ``randomization/randomseedshift`` from the
solver's seed, ``limits/time`` per stage. SCIP runs on one thread (``threads`` is ignored).

The per-domain count columns of :meth:`.spec.MilpSpec.build` get SCIP branching priority
``100·priority`` (the binaries keep 0), so SCIP branches on n_g before any x_i.

From ``core_min_n`` binaries on, the exact reduced-cost fixing of :mod:`.fixing` runs first,
its LP relaxation and incumbent taken from a HiGHS twin of the model (as the CBC backend
does): on large models SCIP's own root search is slow to find a first selection, which the
fixing needs.

Statuses: ``optimal`` and ``gaplimit`` (the gap reached) are proven answers, ``timelimit``
returns the incumbent with SCIP's dual bound, ``infeasible``/``inforunbd`` no selection.
"""

from __future__ import annotations

import math

import numpy as np

from selection.solvers.milp.answer import Answer
from selection.solvers.milp.highs import HighsBackend
from selection.solvers.milp.model import LexBackend
from selection.solvers.milp.registry import register_backend
from selection.solvers.result import Status

__all__ = ["ScipBackend", "scip_available"]

#: SCIP's statuses (``Model.getStatus()``) in the one vocabulary: ``gaplimit`` is a proven
#: answer within ``mip_gap`` / the absolute gap, the limits keep the incumbent; any other
#: status is an error that names it
_STATUS = {
    "optimal": Status.OPTIMAL,
    "gaplimit": Status.OPTIMAL,
    "infeasible": Status.INFEASIBLE,
    "inforunbd": Status.INFEASIBLE,
    "timelimit": Status.TIME_LIMIT,
    "userinterrupt": Status.TIME_LIMIT,
    "nodelimit": Status.TIME_LIMIT,
    "sollimit": Status.TIME_LIMIT,
    "bestsollimit": Status.TIME_LIMIT,
}


def scip_available() -> bool:
    """Whether PySCIPOpt imports (the ``scip`` backend needs it)."""
    try:
        import pyscipopt  # noqa: F401
    except ImportError:
        return False
    return True


@register_backend("scip")
class ScipBackend(LexBackend):
    """The lexicographic MILP in SCIP."""

    order = 40

    counts_default = True
    descends = True
    use_core = True  # the exact LP fixing of .fixing, its LP and incumbent from a HiGHS twin

    def _build(self) -> None:
        try:
            import pyscipopt
        except ImportError:  # pragma: no cover - a dependency of fedsel
            from selection.errors import SelectionError

            raise SelectionError(
                "the scip backend needs PySCIPOpt (pip install pyscipopt)"
            ) from None
        spec = self.spec
        m = pyscipopt.Model("fedsel")
        m.hideOutput()
        m.setParam("limits/gap", float(self.mip_gap))
        m.setParam("limits/absgap", max(1e-9, self.abs_gap))
        m.setParam("numerics/feastol", 1e-9)
        # reduced-cost propagation off: with the count columns it cut the optimum (near-tied
        # N = 50, K = 5, ε = 6.679: 57.656 where enumeration, CBC, HiGHS and SCIP without it
        # give 57.71; tests/selection/solvers/milp/test_exact_structure.py)
        m.setParam("propagating/redcost/freq", -1)
        m.setParam("randomization/randomseedshift", int(self.seed % 2147483647))
        self._inf = m.infinity()
        vs = []
        for j in range(spec.n_col):
            lo, up = float(spec.col_lo[j]), float(spec.col_up[j])
            kind = "B" if j < spec.n_x else ("I" if spec.integer[j] else "C")
            v = m.addVar(
                name=f"v{j}",
                vtype=kind,
                lb=None if math.isinf(lo) else lo,
                ub=None if math.isinf(up) else up,
            )
            if spec.priority[j] > 0:  # kept by presolve (not aggregated away), branched first
                m.markDoNotMultaggrVar(v)
                m.markDoNotAggrVar(v)
                m.chgVarBranchPriority(v, int(100 * spec.priority[j]))
            vs.append(v)
        self._vars = vs
        A = spec.A
        self._cons = []
        for r in range(A.shape[0]):
            cols = A.indices[A.indptr[r] : A.indptr[r + 1]]
            vals = A.data[A.indptr[r] : A.indptr[r + 1]]
            expr = pyscipopt.quicksum(float(a) * vs[c] for c, a in zip(cols, vals, strict=True))
            lo, up = self._side(spec.row_lo[r]), self._side(spec.row_up[r])
            self._cons.append(m.addCons(pyscipopt.ExprCons(expr, lhs=lo, rhs=up), name=f"r{r}"))
        self._m = m
        self._pyscipopt = pyscipopt
        # the LP relaxation and first incumbent of the reduced-cost fixing (as for CBC)
        self._twin = HighsBackend(spec, seed=self.seed, threads=self.threads)

    def _relax(self, c, time_limit):
        return self._twin._relax(c, time_limit)

    def _incumbent(self, c, time_limit):
        return self._twin._incumbent(c, time_limit)

    def _side(self, v: float) -> float:
        v = float(v)
        return max(min(v, self._inf), -self._inf)

    def _editable(self) -> None:
        if self._m.getStage() != 1:  # SCIP_STAGE_PROBLEM
            self._m.freeTransform()

    def _set_row_bounds(self, row: int, lo: float, up: float) -> None:
        if hasattr(self, "_twin"):
            self._twin._set_row_bounds(row, lo, up)
        self._editable()
        con = self._cons[row]
        self._m.chgLhs(con, self._side(lo))
        self._m.chgRhs(con, self._side(up))

    def _set_col_bounds(self, cols, lo, up) -> None:
        self._twin._set_col_bounds(cols, lo, up)
        self._editable()
        for j, a, b in zip(np.asarray(cols), lo, up, strict=True):
            var = self._vars[int(j)]
            self._m.chgVarLb(var, float(a))
            self._m.chgVarUb(var, float(b))

    def _optimize(self, c, time_limit, hint) -> Answer:
        m, qs = self._m, self._pyscipopt.quicksum
        self._editable()
        c = np.asarray(c, dtype=float)
        nz = np.flatnonzero(c)
        m.setObjective(qs(float(c[i]) * self._vars[i] for i in nz), "maximize")
        m.setParam("limits/time", 1e20 if time_limit is None else max(float(time_limit), 0.01))
        m.setParam("limits/absgap", self.stop_gap())
        if hint is not None:
            sol = m.createPartialSol()
            for i in range(self.spec.n_x):
                m.setSolVal(sol, self._vars[i], float(round(hint[i])))
            m.addSol(sol)
        m.optimize()
        st = m.getStatus()
        status = _STATUS.get(st, Status.ERROR)
        has = m.getNSols() > 0
        values = None
        if has:
            best = m.getBestSol()
            values = np.array([m.getSolVal(best, v) for v in self._vars], dtype=float)
        obj = float(values @ c) if values is not None else float("nan")
        db = float(m.getDualbound()) if status != Status.INFEASIBLE else float("nan")
        self.last_bound = db if abs(db) < m.infinity() else float("nan")  # none before the root
        if status == Status.ERROR:
            return Answer(Status.ERROR, None, obj, f"SCIP status {st}")
        return Answer(status, None if status == Status.INFEASIBLE else values, obj)
