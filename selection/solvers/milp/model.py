"""The lexicographic solve loop over one persistent MILP model: :class:`LexBackend`.

Why one module past 450 lines: much of it is the loop's documentation and examples; the code
is the one loop every backend runs (stages, tolerances, the reduced-cost fixing's incumbent),
whose other jobs already live beside it (listed below).

Lexicographic stages: stage j maximizes ``objectives[j]``; before stage j+1 a dedicated row
``obj<j>`` (same coefficients) gets the lower bound ``opt_j - tol`` so later stages cannot
lose what earlier ones won. ``tol`` is 0 for CP-SAT (integer data) and
``1e-6 + 1e-9·|opt_j|`` in the model's units for HiGHS/CBC (their feasibility tolerances are
1e-7..1e-6). The result is Pareto-optimal in the stage objectives up to that tolerance.
With ``mip_gap > 0`` (relative MIP gap, default 0) or ``abs_gap > 0`` (absolute, model units)
each stage stops within that gap and the status is ``feasible`` rather than ``optimal``; with
``abs_gap`` the stage-1 bound is the backend's dual bound, or where it reports none the
selection's value + ``abs_gap`` (the solvers' stopping rule), so a tolerant point is certified.

Backends with ``use_core`` (HiGHS, CBC), from ``core_min_n`` binaries on, first fix, by column
bounds, every binary that the LP relaxation's reduced costs prove no selection within ``tol``
of the best known value can flip (:mod:`.fixing`; exact, the bounds are restored after each solve).

The package's other jobs live beside this module: the model as arrays (:class:`MilpSpec`,
:mod:`.spec`), the last stage by gap descent (:mod:`.descent`, a mixin of :class:`LexBackend`)
and the backend registry (:mod:`.registry`). Their public names are re-exported here, so
``selection.solvers.milp.model`` stays the one import of the solvers and backends.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from selection.solvers.milp.answer import Answer
from selection.solvers.milp.descent import GapDescent
from selection.solvers.milp.fixing import best_bound, core_size, fixable, preferred
from selection.solvers.milp.registry import (
    integer_data,
    make_backend,
    milp_backend_class,
    milp_backends,
    register_backend,
)
from selection.solvers.milp.spec import INF, MilpSpec
from selection.solvers.result import Status

__all__ = [
    "MilpSpec",
    "LexBackend",
    "LexOutcome",
    "INF",
    "register_backend",
    "integer_data",
    "milp_backends",
    "milp_backend_class",
    "make_backend",
]

# seconds the LP relaxation may take to bound a point the search stopped without a bound
RELAX_SECONDS = 1.0
# the restricted MILP of the first incumbent (:meth:`LexBackend._core_incumbent`): how often
# its core may grow when it admits no selection, and by what factor
CORE_TRIES = 3
CORE_GROWTH = 4


@dataclass(frozen=True)
class LexOutcome:
    """Selected indices (empty if none), normalized status, a message, and the proven upper
    bound on the first stage's objective (model units; NaN when none is known).

    Examples:
        >>> import numpy as np
        >>> from selection.solvers.milp.model import LexOutcome, MilpSpec, make_backend
        >>> U = np.array([3.0, 1.0, 2.0])  # max U·x over x in {0, 1}^3 with x0 + x1 + x2 = 2
        >>> spec = MilpSpec.build(3, 2, [], [("card", np.ones(3), 2.0, 2.0)], [U],
        ...                       stage_values=[lambda x: float(x @ U)])
        >>> outcome = make_backend("highs", spec).solve()
        >>> isinstance(outcome, LexOutcome), outcome.selected, str(outcome.status), outcome.bound
        (True, (0, 2), 'optimal', 5.0)
    """

    selected: tuple[int, ...]
    status: Status
    message: str = ""
    bound: float = float("nan")


class LexBackend(GapDescent, ABC):
    """One persistent model: change row bounds, then :meth:`solve` lexicographically.

    Examples:
        >>> import numpy as np
        >>> from selection.solvers.milp.model import INF, MilpSpec, make_backend
        >>> U = np.array([2.0, 1.0, 1.0])  # K = 2: {0, 1} and {0, 2} tie at U = 3
        >>> spec = MilpSpec.build(
        ...     3, 2, [],
        ...     [("card", np.ones(3), 2.0, 2.0), ("x0", np.array([1.0, 0.0, 0.0]), -INF, INF)],
        ...     [U, np.array([0.0, 0.0, 1.0])],  # max U, then (among the ties) prefer client 2
        ...     stage_values=[lambda x: float(x @ U)],
        ... )
        >>> model = make_backend("highs", spec)
        >>> model.solve().selected
        (0, 2)
        >>> model.set_row_bounds("x0", -INF, 0.0)  # leave client 0 out, same model
        >>> out = model.solve()
        >>> out.selected, out.bound
        ((1, 2), 2.0)
        >>> model.set_row_bounds("x0", 2.0, INF)  # x0 >= 2: no selection
        >>> str(model.solve().status)
        'infeasible'
    """

    name = ""
    exact_tol = False  # True when stage values are integers (no tolerance needed)
    # True when the backend solves integer data: the solvers give it the rows rounded to
    # 1/scale (and ``scale=``), take its bound as proven only where the data are multiples
    # of 1/scale, refuse a tolerance elsewhere and keep ratio rows exact (CP-SAT)
    integer_data = False
    # position in listings (``--backend`` choices, error messages); registration order breaks ties
    order = 100
    # True: the ε model puts ε on the D·(D−1) pairwise rows (``eps_spec(pairwise=True)``)
    # instead of on the hi/lo auxiliaries: HiGHS's dual simplex prefers them
    pairwise_eps = False
    use_core = False  # True: exact LP reduced-cost fixing before stage 1 (milp.fixing)
    # ... from this many binaries on: below it the LP and the restricted MILP cost more than
    # the fixing saves
    core_min_n = 1500
    # whether the ε model's second stage runs as a gap descent (:meth:`_descend`) where the
    # spec allows it: for a backend whose search answers the descent's feasibility questions
    # (max U, a sharp LP bound) more easily than it minimizes the gap directly
    descends = False
    # whether ``counts="auto"`` gives this backend per-domain count columns (measured per
    # backend, counts off and on, in results/benchmarks/exact_families_200_1000.md)
    counts_default = False

    def __init__(
        self,
        spec: MilpSpec,
        *,
        seed: int = 0,
        threads: int | None = None,
        mip_gap: float = 0.0,
        abs_gap: float = 0.0,
    ) -> None:
        self.spec = spec
        self.seed = int(seed)
        self.threads = threads
        self.mip_gap = float(mip_gap)
        # absolute MIP gap per stage, model units (0: proven optimal, the solvers get 1e-9)
        self.abs_gap = float(abs_gap)
        self._lp: tuple[float, np.ndarray, bool] | None = None  # last LP bound (_reduce)
        # the backend's proven upper bound on the objective of its last _optimize (NaN: none)
        self.last_bound = float("nan")
        self._row_lo = np.array(spec.row_lo, dtype=float)
        self._row_up = np.array(spec.row_up, dtype=float)
        # the binaries' current bounds (the fixings of :meth:`_cols`; restored after each solve)
        self._x_lo = np.array(spec.col_lo[: spec.n_x], dtype=float)
        self._x_up = np.array(spec.col_up[: spec.n_x], dtype=float)
        t0 = time.perf_counter()
        self._build()
        self.build_seconds = time.perf_counter() - t0

    # -- primitives each backend writes --------------------------------------------------
    @abstractmethod
    def _build(self) -> None:
        """Create the backend model from ``self.spec``."""

    @abstractmethod
    def _set_row_bounds(self, row: int, lo: float, up: float) -> None:
        """Change the bounds of one row (±inf allowed)."""

    @abstractmethod
    def _optimize(self, c: np.ndarray, time_limit: float | None, hint: np.ndarray | None) -> Answer:
        """Maximize ``c·v``: the backend's native status mapped onto :class:`Status`, the
        full column vector (the incumbent or None where stopped) and its value, an
        :class:`Answer` (or the documented triple :meth:`Answer.of` reads).
        """

    def _relax(self, c: np.ndarray, time_limit: float | None) -> tuple[Status, np.ndarray | None]:
        """Solve the LP relaxation of ``max c·v``: (status, row multipliers). Optional.

        ``OPTIMAL`` (with the multipliers), ``INFEASIBLE`` (the LP, hence the MILP, has no
        solution under the current bounds) or ``ERROR`` (no answer: stopped, or none)."""
        return Status.ERROR, None

    def _set_col_bounds(self, cols: np.ndarray, lo: np.ndarray, up: np.ndarray) -> None:
        """Change the bounds of columns ``cols`` (only needed when ``use_core``)."""
        raise NotImplementedError

    #: the share of an objective's value grid q_j (``spec.quanta``) a stage may stop short
    #: of its bound: below 1/2, so a float error in the bound cannot hide a grid step
    GRID_SHARE = 0.49

    def stop_gap(self) -> float:
        """The absolute gap at which the stage being solved stops (model units).

        The larger of ``abs_gap`` (a tolerance the user asked for), the stage's grid share
        (exact: no selection's value lies strictly between incumbent and bound) and 1e-9.
        """
        j = self._stage
        q = self.spec.quanta[j] if j < len(self.spec.quanta) else 0.0
        return max(1e-9, self.abs_gap, self.GRID_SHARE * q)

    _stage = 0  # the objective the backend is optimizing (solve sets it per call)

    # -- shared loop ------------------------------------------------------------------
    def set_row_bounds(self, name: str, lo: float, up: float) -> None:
        """Set the bounds of a named row of the spec."""
        self._bounds(self.spec.row_index[name], float(lo), float(up))

    def _bounds(self, row: int, lo: float, up: float) -> None:
        self._row_lo[row], self._row_up[row] = lo, up
        self._set_row_bounds(row, lo, up)

    def _cols(self, cols: np.ndarray, lo: np.ndarray, up: np.ndarray) -> None:
        """Set the bounds of binary columns ``cols`` (and remember them)."""
        cols = np.asarray(cols, dtype=np.int64)
        self._x_lo[cols], self._x_up[cols] = lo, up
        self._set_col_bounds(cols, lo, up)

    def _tol(self, value: float) -> float:
        """How far below a stage's optimum the next stage may go (model units)."""
        return 0.0 if self.exact_tol else 1e-6 + 1e-9 * abs(value)

    def _selection(self, v: np.ndarray) -> tuple[int, ...]:
        x = np.asarray(v[: self.spec.n_x])
        return tuple(int(i) for i in np.flatnonzero(x > 0.5))

    def solve(self, time_limit: float | None = None, start=None) -> LexOutcome:
        """Maximize the objectives lexicographically under the current row bounds.

        ``start``: indices of a selection given to stage 1 as its starting solution where it
        satisfies the current bounds (:meth:`MilpSpec.start_columns`; ignored otherwise). The
        answer is the same optimum; only the search may be shorter."""
        t0 = time.perf_counter()
        spec = self.spec
        best: np.ndarray | None = None
        if start is not None:
            start = spec.start_columns(start, self._row_lo, self._row_up, self._x_lo, self._x_up)
        fixed: list[int] = []
        cols = np.zeros(0, dtype=np.int64)
        descent_fixed: list[np.ndarray] = []  # columns the gap descent fixes (restored below)
        core = self.use_core and spec.n_x >= self.core_min_n
        self._bound1 = math.nan  # proven upper bound on stage 1's objective
        try:
            for j, c in enumerate(spec.objectives):
                self._stage = j  # stop_gap reads the stage's value grid
                last = j == len(spec.objectives) - 1
                left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
                if left is not None and left <= 0:
                    return self._limited(best, f"time limit reached before stage {j + 1}")
                if core:
                    new, best = self._reduce(j, best, left, tie_tol=not last)
                    cols = np.union1d(cols, new)
                    if j == 0 and self._lp is not None:  # the LP bound holds for the MILP
                        self._bound1 = float(self._lp[0])
                    left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
                    if left is not None and left <= 0:
                        return self._limited(best, f"time limit reached in stage {j + 1}")
                self.last_bound = math.nan
                if j > 0 and last and self.descends and spec.descent and best is not None:
                    out = self._descend(best, left, descent_fixed)
                else:
                    hint = start if j == 0 and best is None else best
                    out = Answer.of(self._optimize(c, left, hint))
                v, obj = out.values, out.value
                if j == 0 and out.status in (Status.OPTIMAL, Status.TIME_LIMIT):
                    self._tighten(self.last_bound)
                if out.status == Status.INFEASIBLE:
                    if j == 0:
                        return LexOutcome(
                            (), Status.INFEASIBLE, "no selection satisfies the constraints"
                        )
                    return self._limited(best, f"stage {j + 1} reported infeasible; kept stage {j}")
                if out.status == Status.ERROR:
                    return LexOutcome((), Status.ERROR, out.message)
                if out.status == Status.TIME_LIMIT:
                    if j == 0 and not np.isfinite(self._bound1):
                        # no bound from the search: the LP relaxation's, within a short budget
                        self._tighten(self._relaxed_bound(c, RELAX_SECONDS))
                    return self._limited(
                        v if v is not None else best, f"time limit in stage {j + 1}"
                    )
                best = v
                if j == 0 and self.mip_gap == 0:
                    # proven optimal within the absolute gap (1e-9 unless abs_gap is set): the
                    # stage's value plus that gap is a bound, by the solvers' stopping rule
                    value = float(self._value(0, list(self._selection(v)), v))
                    if self.abs_gap <= 0:
                        self._bound1 = value
                    elif not np.isfinite(self._bound1):  # the backend reported no bound
                        self._bound1 = value + self.abs_gap + 1e-7 * (1.0 + abs(value))
                if j < len(spec.objectives) - 1:
                    if j < len(spec.stage_values):
                        x = np.zeros(spec.n_x)
                        x[list(self._selection(v))] = 1.0
                        obj = float(spec.stage_values[j](x))
                    row = spec.row_index[f"obj{j}"]
                    self._bounds(row, obj - self._tol(obj), INF)
                    fixed.append(row)
                    if core:  # the optimum may beat the incumbent: fix more
                        cols = np.union1d(cols, self._refix(obj))
        finally:
            for row in fixed:
                self._bounds(row, -INF, INF)
            if descent_fixed:
                cols = np.union1d(cols, np.concatenate(descent_fixed).astype(np.int64))
            if len(cols):
                self._cols(cols, spec.col_lo[cols], spec.col_up[cols])
        sel = self._selection(best)
        if len(sel) != spec.k:
            return LexOutcome(
                (), Status.ERROR, f"{self.name} returned {len(sel)} clients, k={spec.k}"
            )
        self._bound1 = self._on_grid(self._bound1, best)
        if self.mip_gap > 0 or self.abs_gap > 0:
            msg = (
                f"optimal within relative gap {self.mip_gap:g}"
                if self.mip_gap > 0
                else f"optimal within absolute gap {self.abs_gap:g} (model units)"
            )
            return LexOutcome(sel, Status.FEASIBLE, msg, self._bound1)
        return LexOutcome(sel, Status.OPTIMAL, "", self._bound1)

    def _on_grid(self, bound: float, v: np.ndarray | None) -> float:
        """A stage-1 bound lowered to the value grid (``spec.quanta[0]``) above the
        selection ``v``: the optimum is v's value plus a whole number of steps q, and at most
        ``bound``, so it is at most v's value + q·floor((bound − value)/q). Unchanged off a
        grid, without a selection, or when not finite."""
        q = self.spec.quanta[0] if self.spec.quanta else 0.0
        if q <= 0 or v is None or not np.isfinite(bound) or not self.spec.stage_values:
            return bound
        sel = list(self._selection(v))
        if len(sel) != self.spec.k:
            return bound
        value = self._value(0, sel, v)  # exact: the spec's stage value
        if bound < value:
            return bound
        return min(bound, value + q * math.floor((bound - value) / q + 1e-6))

    def _tighten(self, bound: float) -> None:
        """Keep the smaller of two proven upper bounds on stage 1 (NaN: not a bound).

        Values at a solver's infinity (SCIP's 1e20 before its root LP, COIN's 1e50) are not
        bounds."""
        if bound is not None and np.isfinite(bound) and abs(bound) < 1e19:
            self._bound1 = float(bound) if math.isnan(self._bound1) else min(self._bound1, bound)

    def _relaxed_bound(self, c: np.ndarray, time_limit: float) -> float:
        """The LP relaxation's bound on ``max c·v`` (a proven bound when the MILP gave none)."""
        spec = self.spec
        status, y = self._relax(c, time_limit)
        if status != Status.OPTIMAL or y is None:
            return math.nan
        return float(best_bound(spec, c, y, self._row_lo, self._row_up)[0])

    def _reduce(
        self, j: int, best: np.ndarray | None, time_limit: float | None, tie_tol: bool
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Exact reduced-cost fixing before stage ``j`` (see :mod:`.fixing`).

        The incumbent is ``best`` (the previous stage's answer, feasible for this stage) or,
        before stage 1, the answer of the MILP restricted to the LP's core. Fixes (by column
        bounds, which :meth:`solve` restores) every binary that no selection within
        ``tol`` of the incumbent's value flips (``tol`` = the next stage's tie tolerance when
        ``tie_tol``, else 0). Returns (columns fixed now, incumbent); nothing is fixed when the
        LP or the restricted MILP gives no usable answer.
        """
        spec, none = self.spec, np.zeros(0, dtype=np.int64)
        c = spec.objectives[j]
        self._lp = None
        t0 = time.perf_counter()
        status, y = self._relax(c, time_limit)
        if status != Status.OPTIMAL or y is None:
            return none, best
        if time_limit is not None:
            time_limit -= time.perf_counter() - t0
            if time_limit <= 0:
                return none, best
        bound, d = best_bound(spec, c, y, self._row_lo, self._row_up)
        if not np.isfinite(bound):
            return none, best
        pref = preferred(d, spec.n_x)
        if best is None:
            best = self._core_incumbent(c, d, pref, time_limit)
            if best is None:
                return none, None
        sel = list(self._selection(best))
        if len(sel) != spec.k:
            return none, best
        z = self._value(j, sel, best)
        self._lp = (bound, d, tie_tol)
        return self._refix(z), best

    def _core_incumbent(
        self, c: np.ndarray, d: np.ndarray, pref: np.ndarray, time_limit: float | None
    ) -> np.ndarray | None:
        """A first incumbent: the MILP with every binary outside the LP's core (the smallest
        |d_j|) fixed at its preferred bound. On a tight ε the core of :func:`.fixing.core_size`
        may admit no selection; the core then grows :data:`CORE_GROWTH`-fold, up to
        :data:`CORE_TRIES` restricted MILPs.
        None when none gave a selection."""
        spec, t0 = self.spec, time.perf_counter()
        order = np.argsort(np.abs(d[: spec.n_x]), kind="stable")
        size = core_size(spec.n_x)
        for _ in range(CORE_TRIES):
            rest = order[size:]
            if len(rest):
                self._cols(rest, pref[rest], pref[rest])
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            try:
                status, v = Answer.of(self._incumbent(c, left))[:2]
            finally:
                if len(rest):
                    self._cols(rest, spec.col_lo[rest], spec.col_up[rest])
            found = status in (Status.OPTIMAL, Status.TIME_LIMIT) and v is not None
            if found and len(self._selection(v)) == spec.k:
                return v
            if status != Status.INFEASIBLE or not len(rest):
                return None
            size *= CORE_GROWTH
        return None

    def _value(self, j: int, sel: list[int], v: np.ndarray) -> float:
        """A value of objective ``j`` that the selection ``sel`` certainly attains.

        The exact ``spec.stage_values[j]`` when given; otherwise ``c·v`` less a margin for
        the precision of the reported column values (CBC's solution file keeps ~8 digits).
        """
        spec = self.spec
        if j < len(spec.stage_values):
            x = np.zeros(spec.n_x)
            x[sel] = 1.0
            return float(spec.stage_values[j](x))
        c = np.asarray(spec.objectives[j], dtype=float)
        return float(c @ v) - 1e-6 * (1.0 + float(np.abs(c * v).sum()))

    def _refix(self, z: float) -> np.ndarray:
        """Fix (by bounds) what the last LP bound excludes once value ``z`` is attained."""
        if self._lp is None:
            return np.zeros(0, dtype=np.int64)
        bound, d, tie_tol = self._lp
        tol = self._tol(z) if tie_tol else 0.0
        cols = np.flatnonzero(fixable(bound, d, self.spec.n_x, z, tol))
        if len(cols):
            pref = preferred(d, self.spec.n_x)
            self._cols(cols, pref[cols], pref[cols])
        return cols

    def _incumbent(self, c: np.ndarray, time_limit: float | None) -> Answer:
        """A good (not necessarily proven) answer of ``max c·v``; as :meth:`_optimize`'s."""
        return self._optimize(c, time_limit, None)

    def _limited(self, v: np.ndarray | None, msg: str) -> LexOutcome:
        b = self._on_grid(getattr(self, "_bound1", math.nan), v)
        if v is None:
            return LexOutcome((), Status.TIME_LIMIT, msg + "; no incumbent", b)
        sel = self._selection(v)
        if len(sel) != self.spec.k:
            return LexOutcome((), Status.TIME_LIMIT, msg + "; incumbent unusable", b)
        return LexOutcome(sel, Status.TIME_LIMIT, msg + "; returned the incumbent", b)
