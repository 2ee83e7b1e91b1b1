"""HiGHS backend through highspy's array API: one persistent model, bounds change per point.

Columns and the CSR rows are passed in two calls (``addCols``/``addRows``), so building the
model is cheap (results/benchmarks/solvers.md: build_s 0.006 s at N = 5000). Options:
``mip_rel_gap = 0`` and ``mip_abs_gap = 1e-9`` (exact optimum, HiGHS defaults to 1e-4),
feasibility tolerances 1e-9 (at the default 1e-6, x_i = 1 − 1e-6 times utilities of ~100 let a
selection exceed an ε row by ~1e-4 sum units, so the complete sweep met the same point again),
``output_flag = False``, ``random_seed`` from the solver's seed, ``threads`` (default 1:
deterministic), ``time_limit`` per stage from what is left of the solve's limit. Presolve stays
on (with ``presolve = "off"`` HiGHS 1.16 once returned a wrong "optimal" ε point on a 14-client
instance; on the fixed model of ``milp.fixing`` presolve is also what drops the fixed columns).

Large models (N = 5000, K = 500): HiGHS's own search spends most of its time at the root
looking for an incumbent (the LP bound comes early, a good selection much later), so
:meth:`_relax` (LP relaxation with row duals) and :meth:`_incumbent` (the MILP restricted
to the LP core, at most ``INCUMBENT_NODES`` nodes) feed the exact reduced-cost fixing of
:mod:`.fixing`; ε sits on the pairwise rows of ``eps_spec(pairwise=True)``, which HiGHS's dual
simplex prefers to ``hi − lo``. What is left is the proof on the few binaries left free, which
takes HiGHS many nodes on the tight ε points; CBC does that part faster
(results/benchmarks/solvers.md, N = 5000: ε point median 2.3 s by CBC, 8.5 s by HiGHS, both
with the fixing), so the CBC backend borrows this model for its LP and incumbent and ``auto``
uses CBC.

This is the only HiGHS build fedsel loads: PuLP serves CBC only and OR-Tools CP-SAT only.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

from selection.solvers.milp.answer import Answer
from selection.solvers.milp.model import LexBackend
from selection.solvers.milp.registry import register_backend
from selection.solvers.milp.spec import INF
from selection.solvers.result import Status

__all__ = ["HighsBackend", "new_highs"]

# branch-and-bound nodes of the restricted MILP that supplies the first incumbent
INCUMBENT_NODES = 100

_banner_lock = threading.Lock()
_banner_done = False


def new_highs():
    """A silent ``highspy.Highs``; the one-time copyright banner is kept off stdout.

    HiGHS prints its copyright banner on fd 1 when the first instance of a process is created,
    whatever ``output_flag`` says later, which would corrupt ``fedsel solve``'s JSON on stdout
    and repeat on stderr in every command that solves: that one construction writes to
    ``/dev/null`` (nothing else happens during it).
    """
    global _banner_done
    import highspy

    with _banner_lock:
        if _banner_done:
            h = highspy.Highs()
        else:
            sys.stdout.flush()
            saved = os.dup(1)
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, 1)
                h = highspy.Highs()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(null)
            _banner_done = True
    h.setOptionValue("output_flag", False)
    return h


_sched_threads: int | None = None


def _use_threads(n: int) -> None:
    """HiGHS runs on one process-wide scheduler sized by the first ``run``; another thread
    count later makes ``run`` fail (model status "Not Set") unless the scheduler is reset."""
    global _sched_threads
    import highspy

    with _banner_lock:
        if _sched_threads is not None and _sched_threads != n:
            highspy.Highs.resetGlobalScheduler(True)
        _sched_threads = n


@register_backend("highs")
class HighsBackend(LexBackend):
    """The lexicographic MILP in HiGHS."""

    order = 10

    pairwise_eps = True
    use_core = True

    def _build(self) -> None:
        import highspy

        spec = self.spec
        h = new_highs()
        h.setOptionValue("mip_rel_gap", self.mip_gap)
        h.setOptionValue("mip_abs_gap", max(1e-9, self.abs_gap))
        h.setOptionValue("mip_feasibility_tolerance", 1e-9)
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        h.setOptionValue("random_seed", self.seed % 2147483647)
        h.setOptionValue("threads", int(self.threads or 1))
        inf = highspy.kHighsInf
        n = spec.n_col
        lo = np.where(np.isinf(spec.col_lo), -inf, spec.col_lo)
        up = np.where(np.isinf(spec.col_up), inf, spec.col_up)
        empty_i = np.zeros(0, dtype=np.int32)
        h.addCols(n, np.zeros(n), lo, up, 0, empty_i, empty_i, np.zeros(0))
        A = spec.A
        h.addRows(
            A.shape[0],
            self._clip(spec.row_lo),
            self._clip(spec.row_up),
            int(A.nnz),
            A.indptr[:-1].astype(np.int32),
            A.indices.astype(np.int32),
            A.data.astype(float),
        )
        idx = np.flatnonzero(spec.integer).astype(np.int32)  # binaries and count columns
        h.changeColsIntegrality(
            len(idx), idx, np.full(len(idx), int(highspy.HighsVarType.kInteger), dtype=np.uint8)
        )
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self._h = h
        self._hs = highspy
        self._all = np.arange(n, dtype=np.int32)

    @staticmethod
    def _clip(v: np.ndarray) -> np.ndarray:
        import highspy

        return np.clip(np.asarray(v, dtype=float), -highspy.kHighsInf, highspy.kHighsInf)

    def _run(self, time_limit: float | None, stop: threading.Event | None = None) -> None:
        """``run`` for at most ``time_limit`` seconds (None: no limit), or until ``stop`` is
        set (another thread's signal; ``run`` releases the GIL).

        HiGHS's own ``time_limit`` changed meaning between versions: 1.5-1.6 compared it
        with the run time accumulated over every ``run`` of the object (ERGO-Code/HiGHS#1331,
        #1477); 1.16 compares it with the current run's (measured here). The option is set
        to the accumulated time plus the allowance, a limit under either reading (given as the
        limit itself, 1.16 let a second stage run its allowance plus all earlier runs' time,
        well past a point's limit), and an interrupt callback ends the run at the allowance (as
        ``kInterrupt``, read as ``TIME_LIMIT``).
        """
        h = self._h
        if time_limit is None:
            h.setOptionValue("time_limit", INF)
        else:
            h.setOptionValue("time_limit", float(h.getRunTime()) + max(float(time_limit), 0.0))
        if time_limit is None and stop is None:
            h.run()
            return
        deadline = None if time_limit is None else time.perf_counter() + max(time_limit, 0.0)

        def interrupt(event) -> None:
            if (stop is not None and stop.is_set()) or (
                deadline is not None and time.perf_counter() >= deadline
            ):
                event.interrupt()

        h.cbMipInterrupt += interrupt
        h.cbSimplexInterrupt += interrupt
        try:
            h.run()
        finally:
            h.cbMipInterrupt -= interrupt
            h.cbSimplexInterrupt -= interrupt

    def _set_row_bounds(self, row: int, lo: float, up: float) -> None:
        inf = self._hs.kHighsInf
        self._h.changeRowBounds(row, max(lo, -inf), min(up, inf) if up != INF else inf)

    def _set_col_bounds(self, cols, lo, up) -> None:
        idx = np.asarray(cols, dtype=np.int32)
        self._h.changeColsBounds(len(idx), idx, np.asarray(lo, float), np.asarray(up, float))

    def _incumbent(self, c, time_limit):
        # the restricted core MILP only has to supply a good start, not a proof
        self._h.setOptionValue("mip_max_nodes", INCUMBENT_NODES)
        try:
            return self._optimize(c, time_limit, None)
        finally:
            self._h.setOptionValue("mip_max_nodes", 2147483647)

    def _relax(self, c, time_limit):
        h = self._h
        h.changeColsCost(self.spec.n_col, self._all, np.asarray(c, dtype=float))
        _use_threads(int(self.threads or 1))
        h.setOptionValue("solve_relaxation", True)
        try:
            self._run(time_limit)
        finally:
            h.setOptionValue("solve_relaxation", False)
        st = h.getModelStatus()
        if st == self._hs.HighsModelStatus.kInfeasible:
            return Status.INFEASIBLE, None
        if st != self._hs.HighsModelStatus.kOptimal:
            return Status.ERROR, None  # no multipliers (stopped, or another status)
        return Status.OPTIMAL, np.array(h.getSolution().row_dual, dtype=float)

    def _optimize(self, c, time_limit, hint, stop: threading.Event | None = None) -> Answer:
        """As :meth:`LexBackend._optimize`; a set ``stop`` interrupts the search (another
        thread's signal: the run then ends as ``TIME_LIMIT``). ``run`` releases the GIL."""
        hs, h = self._hs, self._h
        h.changeColsCost(self.spec.n_col, self._all, np.asarray(c, dtype=float))
        h.setOptionValue("mip_abs_gap", self.stop_gap())
        if hint is not None:
            sol = hs.HighsSolution()
            sol.col_value = list(np.asarray(hint, dtype=float))
            h.setSolution(sol)
        _use_threads(int(self.threads or 1))
        self._run(time_limit, stop)
        st = h.getModelStatus()
        has_sol = h.getInfo().primal_solution_status == 2  # kSolutionStatusFeasible
        v = np.array(h.getSolution().col_value) if has_sol else None
        obj = float(h.getInfo().objective_function_value) if has_sol else float("nan")
        self.last_bound = float(h.getInfo().mip_dual_bound)  # maximizing: an upper bound
        M = hs.HighsModelStatus
        if st == M.kOptimal:
            return Answer(Status.OPTIMAL, v, obj)
        if st in (M.kInfeasible, M.kUnboundedOrInfeasible):
            return Answer(Status.INFEASIBLE, None, obj)
        if st in (M.kTimeLimit, M.kInterrupt, M.kSolutionLimit, M.kIterationLimit):
            return Answer(Status.TIME_LIMIT, v, obj)
        return Answer(Status.ERROR, None, obj, f"HiGHS model status {h.modelStatusToString(st)}")
