"""CBC backend through PuLP (the cross-check route).

PuLP keeps the model between sweep points; a bound change rewrites one constraint's sense and
right-hand side (``changeRHS``). Each solve writes an MPS file and runs the bundled CBC binary
with ``gapRel = 0``, ``gapAbs`` from the stage's value grid (``LexBackend.stop_gap``), its cut
generators off (:attr:`CbcBackend.OPTIONS`) and integer/primal tolerances of 1e-9 (at CBC's
default 1e-7 a selection just outside an ε row was accepted by the feasibility pump and then
rejected, and CBC 2.10 reported the model infeasible). PuLP reports ``Optimal`` when CBC stops on its time
limit with a solution, so the status is read from ``prob.sol_status``: 1 proven optimal,
2 integer-feasible (limit reached), 0 nothing found, -1 infeasible.

Only ``PULP_CBC_CMD`` is used: PuLP's HiGHS interfaces would load a second HiGHS build.

Before each stage the exact reduced-cost fixing of :mod:`.fixing` fixes the binaries no
near-optimal selection can flip (by variable bounds, restored after the solve). Its LP
relaxation and first incumbent come from a HiGHS twin of the model (highspy, the one HiGHS
build in the process; CBC itself runs as a subprocess), so CBC only has to prove optimality
on the few binaries left free (results/benchmarks/solvers.md, N = 5000: ε point median 2.3 s
against HiGHS's 8.5 s with the same fixing). This is the ``auto`` MILP route
(:data:`.portfolio.AUTO_MILP`).

CBC runs as a process of our own (:func:`_run_cbc`, PuLP's command line and solution
reader), so that a race can end it: where the LP fixing runs, each question of the gap
descent is also put to the HiGHS twin in a thread, and a "no" from HiGHS answers it
(:meth:`CbcBackend._optimize`).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from selection.solvers.milp.answer import Answer
from selection.solvers.milp.highs import HighsBackend
from selection.solvers.milp.model import LexBackend
from selection.solvers.milp.registry import register_backend
from selection.solvers.result import Status

__all__ = ["CbcBackend"]

_FREE = 1e30  # CBC reads |bound| >= 1e30 as infinite
# seconds between two looks at the race's signal while CBC runs
RACE_POLL = 0.02
# CBC's closing lines of a stopped maximization: "Upper bound:   16431.580"
_BOUND_LINE = re.compile(r"^Upper bound:\s+(\S+)", re.MULTILINE)


def _log_bound(log: Path) -> float:
    """The proven upper bound CBC prints when it stops early (NaN when it printed none).

    CBC prints it rounded to its shown decimals (``%.3f``): half a unit of the last one is
    added, so the value stays an upper bound."""
    try:
        m = _BOUND_LINE.search(log.read_text(errors="replace"))
    except OSError:
        return float("nan")
    if not m:
        return float("nan")
    text = m.group(1)
    try:
        value = float(text)
    except ValueError:
        return float("nan")
    decimals = len(text.partition(".")[2]) if "." in text else 0
    return value + 0.5 * 10.0**-decimals


@register_backend("cbc")
class CbcBackend(LexBackend):
    """The lexicographic MILP in CBC (PuLP)."""

    order = 20

    use_core = True
    # the ε model's second stage as a gap descent (GapDescent._descend): with its cuts off,
    # CBC's search answers the descent's max-U questions more easily than it minimizes the gap
    descends = True
    # CBC's own options on every solve: its cut generators off (they cost more than they
    # prune on these models), and its primal heuristics off too while the descent asks
    # whether a better gap exists (the answer is usually no, which only the search proves)
    OPTIONS = ("cuts off",)
    QUESTION_OPTIONS = ("heuristics off",)
    # the descent's questions race the HiGHS twin (:meth:`_optimize`): which of the two
    # proves a question's "no" first depends on the instance, so either one's "no" ends it
    RACE_QUESTIONS = True
    race_wins = 0  # questions HiGHS answered first (on this model)

    def _build(self) -> None:
        import pulp

        spec = self.spec
        self._pulp = pulp
        prob = pulp.LpProblem("fedsel", pulp.LpMaximize)
        xs = [prob.add_variable(f"x{i}", 0, 1, cat=pulp.LpBinary) for i in range(spec.n_x)]
        aux = [
            prob.add_variable(
                f"a{j}",
                lowBound=None if math.isinf(lo) else float(lo),
                upBound=None if math.isinf(up) else float(up),
                cat=pulp.LpInteger if integer else pulp.LpContinuous,
            )
            for j, (lo, up, integer) in enumerate(
                zip(
                    spec.col_lo[spec.n_x :],
                    spec.col_up[spec.n_x :],
                    spec.integer[spec.n_x :],
                    strict=True,
                )
            )
        ]
        self._vars = xs + aux
        # the LP relaxation and the first incumbent of the reduced-cost fixing come from a
        # HiGHS twin of the model (highspy, in process; CBC runs as a subprocess)
        self._twin = HighsBackend(spec, seed=self.seed, threads=self.threads)
        self._cons = []
        A = spec.A
        for r in range(A.shape[0]):
            cols = A.indices[A.indptr[r] : A.indptr[r + 1]]
            vals = A.data[A.indptr[r] : A.indptr[r + 1]]
            expr = pulp.LpAffineExpression(
                [(self._vars[c], float(v)) for c, v in zip(cols, vals, strict=True)]
            )
            con = pulp.LpConstraint(expr, pulp.LpConstraintGE, name=f"r{r}", rhs=-_FREE)
            prob += con
            self._cons.append(con)
            self._set_row_bounds(r, float(spec.row_lo[r]), float(spec.row_up[r]))
        self._prob = prob

    def _set_col_bounds(self, cols, lo, up) -> None:
        for j, a, b in zip(np.asarray(cols), lo, up, strict=True):
            var = self._vars[int(j)]
            var.lowBound, var.upBound = float(a), float(b)
        self._twin._set_col_bounds(cols, lo, up)

    def _relax(self, c, time_limit):
        return self._twin._relax(c, time_limit)

    def _incumbent(self, c, time_limit):
        return self._twin._incumbent(c, time_limit)

    def _set_row_bounds(self, row: int, lo: float, up: float) -> None:
        if hasattr(self, "_twin"):
            self._twin._set_row_bounds(row, lo, up)
        pulp = self._pulp
        con = self._cons[row]
        if lo == up:
            con.sense, rhs = pulp.LpConstraintEQ, lo
        elif math.isinf(up):
            con.sense, rhs = pulp.LpConstraintGE, (lo if not math.isinf(lo) else -_FREE)
        elif math.isinf(lo):
            con.sense, rhs = pulp.LpConstraintLE, up
        else:
            raise ValueError(f"CBC backend: row {row} has two finite bounds {lo}..{up}")
        con.changeRHS(float(rhs))

    def _priorities(self, folder: Path) -> Path:
        """CBC's ``priorityIn`` file: count columns 1 (branched first), binaries 1000.

        PuLP writes the MPS file with names ``X%07d`` in the sorted order of
        ``prob.variables()``; the file names the columns the same way.
        """
        spec = self.spec
        rank = {v.name: i for i, v in enumerate(self._prob.variables())}
        lines = ["name,priority"]
        for j in np.flatnonzero(spec.integer):
            pri = 1 if spec.priority[j] > 0 else 1000
            lines.append(f"X{rank[self._vars[j].name]:07d},{pri}")
        path = folder / "priorities.csv"
        path.write_text("\n".join(lines) + "\n")
        return path

    def _races(self) -> bool:
        """Whether this solve races the HiGHS twin beside CBC (:meth:`_optimize`): only a
        descent question, only where the LP fixing runs (the twin holds the same fixings),
        only single-threaded solvers on a machine with a second core."""
        return (
            self.RACE_QUESTIONS
            and self._asking
            and self._lp is not None
            and (self.threads or 1) == 1
            and (os.cpu_count() or 1) >= 2
        )

    def _optimize(self, c, time_limit, hint) -> Answer:
        if not self._races():
            return self._cbc(c, time_limit, hint)
        # a descent question: HiGHS (in a thread; its run releases the GIL) races CBC (a
        # subprocess); a "no" from HiGHS ends CBC. Any other answer is CBC's, so the
        # selections returned do not depend on which search was quicker.
        highs_no, cbc_done = threading.Event(), threading.Event()
        twin = self._twin

        def race() -> None:
            twin._stage = self._stage
            try:
                status = twin._optimize(c, time_limit, None, stop=cbc_done).status
            except Exception:  # noqa: BLE001 -- CBC's answer stands alone then
                return
            if status == Status.INFEASIBLE:
                highs_no.set()

        thread = threading.Thread(target=race, name="fedsel-highs-race", daemon=True)
        thread.start()
        try:
            out = self._cbc(c, time_limit, hint, stop=highs_no)
        finally:
            cbc_done.set()
            thread.join()
        if out is None:  # HiGHS proved it first
            self.race_wins += 1
            return Answer(Status.INFEASIBLE, None, float("nan"))
        return out

    def _cbc(self, c, time_limit, hint, stop: threading.Event | None = None) -> Answer | None:
        """One CBC run; None when ``stop`` was set before CBC finished (CBC is killed)."""
        pulp = self._pulp
        prob = self._prob
        c = np.asarray(c, dtype=float)
        nz = np.flatnonzero(c)
        prob.setObjective(pulp.LpAffineExpression([(self._vars[i], float(c[i])) for i in nz]))
        prob.sense = pulp.LpMaximize
        if hint is not None and not np.array_equal(c, self.spec.objectives[0]):
            # CBC 2.10 (PuLP's binary) returned a wrong "optimal" second stage from a MIP
            # start: on near_tied_stats(50), K=5, ε=7.932−1e-6 it kept the start's gap 7.446
            # while 6.968 was attainable at the same U (enumeration, HiGHS and CP-SAT agree;
            # without the start CBC finds it too). Later stages start cold.
            hint = None
        if hint is not None:  # binaries rounded, auxiliaries clipped into their bounds
            hint = np.array(hint, dtype=float)
            hint[: self.spec.n_x] = np.round(hint[: self.spec.n_x])
            for var, val in zip(self._vars, hint, strict=True):
                lo = -math.inf if var.lowBound is None else var.lowBound
                up = math.inf if var.upBound is None else var.upBound
                var.setInitialValue(float(min(max(val, lo), up)))
        options = ["integerTolerance 1e-9", "primalTolerance 1e-9", *self.OPTIONS]
        if self._asking:
            options.extend(self.QUESTION_OPTIONS)
        with tempfile.TemporaryDirectory(prefix="fedsel-cbc-") as tmp:
            if self.spec.n_counts:
                options.append(f"priorityIn {self._priorities(Path(tmp))}")
            with warnings.catch_warnings():  # PuLP 3.3 flags PULP_CBC_CMD for its 4.0 API
                warnings.simplefilter("ignore", DeprecationWarning)
                cmd = pulp.PULP_CBC_CMD(
                    msg=False,
                    gapRel=self.mip_gap,
                    gapAbs=self.stop_gap(),
                    timeLimit=None if time_limit is None else max(float(time_limit), 0.01),
                    threads=self.threads,
                    warmStart=hint is not None,
                    options=options,
                )
            try:
                if not _run_cbc(cmd, prob, Path(tmp), warm=hint is not None, stop=stop):
                    return None
            except pulp.PulpSolverError as exc:
                msg = f"CBC failed: {str(exc).splitlines()[0]}"
                return Answer(Status.ERROR, None, float("nan"), msg)
            self.last_bound = _log_bound(Path(tmp) / "cbc.log")
        sol = prob.sol_status
        values = None
        if sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
            values = np.array([v.varValue or 0.0 for v in self._vars], dtype=float)
        obj = float(values @ c) if values is not None else float("nan")
        if sol == pulp.LpSolutionOptimal:
            return Answer(Status.OPTIMAL, values, obj)
        if sol == pulp.LpSolutionInfeasible or prob.status == pulp.LpStatusInfeasible:
            return Answer(Status.INFEASIBLE, None, obj)
        if sol == pulp.LpSolutionIntegerFeasible or (
            sol == pulp.LpSolutionNoSolutionFound and time_limit
        ):
            return Answer(Status.TIME_LIMIT, values, obj)
        msg = f"CBC status {pulp.LpStatus.get(prob.status, prob.status)}"
        return Answer(Status.ERROR, None, obj, msg)


def _with_parent(args: list[str]) -> list[str]:
    """``args`` run so that the process dies with the thread that starts it: util-linux's
    ``setpriv --pdeathsig KILL`` (Linux), where it is installed. Without it a Python process
    killed mid-solve (a study's worker under SIGKILL or SIGTERM) left CBC running alone for as
    long as its search took. The thread that starts CBC waits for it or kills it, so the
    signal only ever comes after the Python process itself is gone."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *args] if setpriv else args


def _run_cbc(cmd, prob, folder: Path, *, warm: bool, stop: threading.Event | None) -> bool:
    """PuLP's ``PULP_CBC_CMD.solve_CBC`` for a maximization, with a CBC process of our own:
    its files and log (``cbc.log``) in ``folder``, and killed once ``stop`` is set.

    Returns False when stopped (nothing assigned), True when CBC's solution was read into
    ``prob`` (values and status, as ``prob.solve(cmd)`` does). Raises
    ``pulp.PulpSolverError`` when CBC fails or writes no solution.
    """
    import pulp

    mps, sol, mst = (str(folder / f"model.{ext}") for ext in ("mps", "sol", "mst"))
    was_none, dummy = prob.fixObjective()
    try:
        vs, var_names, con_names, _ = prob.writeMPS(mps, rename=1)
        args = [cmd.path, mps, "-max"]
        if warm:
            cmd.writesol(mst, prob, vs, var_names, con_names)
            args += ["-mips", mst]
        if cmd.timeLimit is not None:
            args += ["-sec", str(cmd.timeLimit)]
        for option in [*cmd.options, *cmd.getOptions()]:
            args += f"-{option}".split()
        args += ["-solve", "-printingOptions", "all", "-solution", sol]
        with open(folder / "cbc.log", "w") as log:
            try:
                proc = subprocess.Popen(
                    _with_parent(args), stdout=log, stderr=log, stdin=subprocess.DEVNULL
                )
            except OSError as exc:
                raise pulp.PulpSolverError(f"cannot run CBC ({cmd.path}): {exc}") from exc
            try:
                while True:
                    if stop is not None and stop.is_set():
                        return False
                    try:
                        code = proc.wait(timeout=None if stop is None else RACE_POLL)
                        break
                    except subprocess.TimeoutExpired:
                        pass
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        if code != 0 or not os.path.exists(sol):
            raise pulp.PulpSolverError(f"CBC exited with code {code} ({cmd.path})")
        status, values, _, _, _, sol_status = cmd.readsol_MPS(sol, prob, vs, var_names, con_names)
        prob.assignVarsVals(values)
        prob.assignStatus(status, sol_status)
        return True
    finally:
        prob.restoreObjective(was_none, dummy)
