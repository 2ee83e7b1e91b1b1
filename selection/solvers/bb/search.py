"""The bi-objective branch-and-bound: the whole (U, g) front of Σx = K in one search.

**Objective space.** One incumbent front (:class:`.staircase.Staircase`) is shared by the
whole search; every selection the search completes is offered to it, wherever in the plane
it lies. The plane it does not dominate is a union of boxes {g <= t, U >= u}; the search
takes the open box of largest t, proves it empty of selections better than the incumbents,
and records the proof (:class:`.staircase.Proven`). A selection found inside the box splits
it (Pareto branching): the part above it is what the running search still asks for, the part
left of it is a new box. The front is exact when no open box is left.

**Variable space, inside a box.** The LP relaxation at the box's t (:class:`.relax.Relaxation`,
warm-started from the previous solve) gives a direction c whose Lagrangian bound
U·x <= v·x + s(c)·t (:mod:`.planes`) holds for every selection of the box. Sorting the free
clients by v, the best completion of a partial selection is a prefix sum, so the search
enumerates completions in that order and stops a branch as soon as its bound falls below
what the box still asks (the best incumbent U with g <= t plus one value step: values lie on
the value grid where the data do). Where a direction leaves too many completions open
(:data:`BUDGET` nodes), the next branches re-solve the LP with their fixings (the clients
skipped so far out, the chosen ones in): a tighter direction, or an infeasible LP that closes
the branch.

**Within a tolerance τ** (sum units, rounded down onto the value grids) the search asks each
box shifted by τ in both objectives, {g <= t − τ, U >= u + τ}: what lies outside every shifted
box is within τ of an incumbent. **Anytime**: after every box the certificate of
:mod:`.certificate` (how far the true front may lie from the incumbents, in both objectives)
is recorded and handed to ``on_certificate``; a stopped search keeps the last one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from selection.solvers.bb.certificate import Snapshot, certified_gap, worst_corner
from selection.solvers.bb.planes import Plane
from selection.solvers.bb.relax import Relaxation
from selection.solvers.bb.staircase import Proven, Staircase

__all__ = ["BoxSearch", "SearchOutcome", "TOL"]

# same-value tolerance (sum units) where the data lie on no value grid
TOL = 1e-7
# nodes a direction may spend before the next branches (at any depth below SPAWN_DEPTH)
# re-solve the LP with their fixings
BUDGET = 64
SPAWN_DEPTH = 99
_CHECK_EVERY = 1024
# The order of the boxes (BoxSearch._next_box): "sweep", largest t first, is the ε loop's
# order (each box yields the next front point); "anytime" first halves the region that sets
# the certificate until it is within ANYTIME_PP points (or 10 τ), then sweeps. bb_search takes
# "anytime" where a time limit may stop the search: it holds a far smaller certificate early
# at about the same time to finish within a tolerance (results/benchmarks/biobj_tolerance.md,
# both orders); without a time limit nothing stops the search early, so it keeps "sweep"
ANYTIME_PP = 0.5
ORDERS = ("sweep", "anytime")


class _Timeout(Exception):
    pass


class _Handoff(Exception):
    """The box's tree grew past :data:`BOX_LPS`: its MIP finishes it."""


# LPs a box's tree may solve before a HiGHS MIP (cuts, its own search) takes the box over:
# the tails where the LP balances the domains with fractional selections (gap near 0)
# (BOX_NODES: enumeration nodes likewise). The route's times with these settings:
# results/benchmarks/biobj.md
BOX_LPS = 100
BOX_NODES = 5_000


@dataclass(frozen=True)
class SearchOutcome:
    """The search's front and statistics.

    Attributes:
        points: (g, U, selection) per front point, sum units, g ascending.
        complete: whether every box was proven (the front is exact).
        open_u: where not complete, the largest U an open box may still hold (sum units;
            ``inf`` when some open box has no LP bound yet).
        boxes, lps, nodes, mips: boxes searched, LPs solved, enumeration nodes, boxes
            finished by a MIP.
        certified: the certificate c (:func:`.certificate.certified_gap`): every point of the
            true front is within c of ``points`` in both objectives (0: exact).
        history: (seconds, points, c) each time the certificate or the front changed.
    """

    points: list[tuple[float, float, tuple[int, ...]]]
    complete: bool
    open_u: float
    boxes: int
    lps: int
    nodes: int
    mips: int = 0
    certified: float = math.inf
    history: tuple[tuple[float, int, float], ...] = ()


def on_grid(tau: float, q: float) -> float:
    """τ rounded down to a whole number of value-grid steps q (τ itself off the grid)."""
    return q * math.floor(tau / q + 1e-9) if q > 0 else float(tau)


class BoxSearch:
    """The search over one problem's plane.

    Args:
        U: per-client utility, shape (N,); Ud: domain utilities, shape (N, D); k: K.
        plane: the plane (:data:`.planes.PLANES`).
        qu, qg: the value grids of U and of the domain sums (0: none).
        deadline: ``time.perf_counter()`` value to stop at (None: none).
        box_solver: ``(t, floor, seconds) -> selection indices | None | False``: the max-U
            selection with g <= t and U >= floor (None: proven none; False: stopped), for the
            boxes whose tree outgrew its budget; default the HiGHS MIP of
            :meth:`.relax.Relaxation.mip`.
        tolerance: τ, sum units (0: the exact front).
        order: :data:`ORDERS`, the order of the boxes.
        on_certificate: called with a :class:`.certificate.Snapshot` whenever the certificate
            or the front changed.
    """

    def __init__(
        self,
        U: np.ndarray,
        Ud: np.ndarray,
        k: int,
        plane: Plane,
        *,
        qu: float = 0.0,
        qg: float = 0.0,
        deadline: float | None = None,
        box_solver=None,
        tolerance: float = 0.0,
        order: str = "sweep",
        on_certificate: Callable[[Snapshot], None] | None = None,
    ) -> None:
        if order not in ORDERS:
            raise ValueError(f"order={order!r}: one of {', '.join(ORDERS)}")
        self.order = order
        self.U = np.asarray(U, dtype=float)
        self.Ud = np.asarray(Ud, dtype=float)
        self.k, self.plane = int(k), plane
        self.n = self.U.shape[0]
        eg, dg = (0.5 * qg, 0.99 * qg) if qg > 0 else (TOL, TOL)
        eu, du = (0.5 * qu, 0.99 * qu) if qu > 0 else (TOL, TOL)
        self.front = Staircase(eg, eu, dg, du)
        self.proven = Proven()
        self.relax = Relaxation(self.U, self.Ud, self.k, plane)
        self.deadline = deadline
        self.nodes = 0
        self.budget, self.spawn_depth = BUDGET, SPAWN_DEPTH
        self.box_lps, self.box_nodes = BOX_LPS, BOX_NODES
        self.mips = 0
        self.box_solver = box_solver or self._highs_mip
        self.boxes = 0
        # the boxes' shift: τ on each grid, so that a shifted box holds exactly the values
        # more than τ better than its corner's
        self.tg, self.tu = on_grid(tolerance, qg), on_grid(tolerance, qu)
        self.g_floor = plane.g_floor(self.Ud, self.k)
        self.on_certificate = on_certificate
        self._history: list[tuple[float, int, float]] = []
        self._seen: tuple[float, int] | None = None
        self._next_check = _CHECK_EVERY
        # the running box: its t, its u, and what it still asks (best U with g <= t + du,
        # + τ), among the selections with g <= its threshold t − τ
        self._t = self._ts = math.inf
        self._u0 = -math.inf
        self.ureq = -math.inf

    # -- the front -------------------------------------------------------------------------

    def _leaf(self, sel: list[int]) -> None:
        idx = np.fromiter(sel, dtype=np.int64, count=len(sel))
        u = float(self.U[idx].sum())
        g = self.plane.g(self.Ud[idx].sum(axis=0))
        if self.front.insert(g, u, tuple(sorted(sel))):
            self._update_req()

    def _update_req(self) -> None:
        self.ureq = max(self._u0, self.front.best_u(self._t) + self.front.du) + self.tu

    def _certify(self) -> float:
        """The certificate now; recorded (and handed on) when it or the front changed."""
        c = certified_gap(self.front, self.proven, g_floor=self.g_floor)
        if self._seen != (c, self.front.version):
            self._seen = (c, self.front.version)
            now = time.perf_counter() - self._start
            self._history.append((now, len(self.front), c))
            if self.on_certificate is not None:
                pts = tuple(zip(self.front.g, self.front.u, strict=True))
                self.on_certificate(Snapshot(now, pts, c, self.boxes))
        return c

    def _next_box(self) -> tuple[float, float] | None:
        """The box to search next (None: no box is open): the open box of largest t; in the
        ``anytime`` order, while the certificate is above :data:`ANYTIME_PP` (and 10 τ), the
        narrowest open box holding the corner that sets it, cut at the middle of its width in
        g when wide (a proof of that part halves the corner's distance, or an incumbent found
        there does)."""
        boxes = [b for b in self.front.boxes() if self._open(b)]
        if not boxes or self.order == "sweep":
            return boxes[0] if boxes else None
        c, gc, uc = worst_corner(self.front, self.proven, g_floor=self.g_floor)
        if c <= max(10 * max(self.tg, self.tu), ANYTIME_PP * self.k):
            return boxes[0]
        eps = self.front.eg + self.front.eu
        holding = [b for b in boxes if b[0] - self.tg >= gc - eps and b[1] + self.tu <= uc + eps]
        if not holding:
            return boxes[0]
        t, u = min(holding)
        ts = t - self.tg
        if math.isfinite(ts) and ts - gc > 4 * self.front.dg:
            mid = gc + 0.5 * (ts - gc)
            if not self.proven.covers(mid, u + self.tu):
                return mid + self.tg, u
        return t, u

    def _open(self, box: tuple[float, float]) -> bool:
        """Whether no proof covers the box shifted by τ."""
        return not self.proven.covers(box[0] - self.tg, box[1] + self.tu)

    # -- the search --------------------------------------------------------------------------

    def run(self) -> SearchOutcome:
        self._start = time.perf_counter()
        top = np.argsort(-self.U, kind="stable")[: self.k]
        self._leaf(top.tolist())  # max U: the first incumbent
        self._certify()
        complete = True
        try:
            while True:
                box = self._next_box()
                if box is None:
                    break
                self._search_box(*box)
                self._certify()
        except _Timeout:
            complete = False
        certified = self._certify()
        open_u = -math.inf
        if not complete:
            open_u = math.inf if any(self._open(b) for b in self.front.boxes()) else -math.inf
        pts = list(zip(self.front.g, self.front.u, self.front.sel, strict=True))
        return SearchOutcome(
            pts,
            complete,
            open_u,
            self.boxes,
            self.relax.solves,
            self.nodes,
            self.mips,
            certified,
            tuple(self._history),
        )

    def _search_box(self, t: float, u: float) -> None:
        self._t, self._u0, self._ts = t, u, t - self.tg
        self._update_req()
        if self._ts < self.g_floor - self.front.eg:  # shifted past every selection
            self.proven.add(self._ts, -math.inf)
            return
        self.boxes += 1
        self.relax.set_threshold(self._ts)
        self._box_lps = self.relax.solves + self.box_lps
        self._box_nodes = self.nodes + self.box_nodes
        try:
            self._context([], np.arange(self.n), self.k)
        except _Handoff:
            self._mip_box(self._ts)
        # no selection has g <= t − τ and U >= ureq; the part left of the best point found
        # is an open box of the front's own
        self.proven.add(self._ts, self.ureq)

    def _mip_box(self, t: float) -> None:
        """Finish the box by one MIP: max U with g <= t and U >= what the box still asks."""
        self.mips += 1
        left = None if self.deadline is None else self.deadline - time.perf_counter()
        if left is not None and left <= 0:
            raise _Timeout
        sel = self.box_solver(t, self.ureq, left)
        if sel is False:
            raise _Timeout
        if sel is not None:
            self._leaf(list(sel))

    def _highs_mip(self, t: float, floor: float, left: float | None):
        x = self.relax.mip(t, floor, left, abs_gap=self.tu)
        if x is None or x is False:
            return x
        return np.flatnonzero(x > 0.5).tolist()

    def _direction(self, inc: list[int], free: np.ndarray, r: int):
        """The LP at the running threshold with ``inc`` in and only ``free`` open: (v, s·t) of the
        better-signed direction, or None when the branch holds no selection of the box."""
        lo = np.zeros(self.n)
        up = np.zeros(self.n)
        if inc:
            lo[inc] = 1.0
            up[inc] = 1.0
        up[free] = 1.0
        if self.relax.solves >= self._box_lps:
            raise _Handoff
        res = self.relax.solve(lo, up)
        if res is None:
            return None
        lp, c = res
        if lp < self.ureq - 1e-9 * (1.0 + abs(lp)):
            return None
        best = None
        cands = (np.zeros_like(c),) if not math.isfinite(self._ts) else (c, -c)
        for cc in cands:
            cc = self.plane.project(cc)
            v = self.U - self.Ud @ cc
            st = self.plane.slope(cc) * self._ts if math.isfinite(self._ts) else 0.0
            vf = v[free]
            bound = float(v[inc].sum() + np.sort(vf)[::-1][:r].sum() + st) if r else 0.0
            if best is None or bound < best[0]:
                best = (bound, v, st)
        return best

    def _context(self, inc: list[int], free: np.ndarray, r: int) -> None:
        if r == 0:
            self._leaf(inc)
            return
        got = self._direction(inc, free, r)
        if got is None:
            return
        bound, v, st = got
        if bound < self.ureq:
            return
        vf = v[free]
        order = np.argsort(-vf, kind="stable")
        items = free[order].tolist()
        vs = vf[order]
        pre = np.concatenate(([0.0], np.cumsum(vs))).tolist()
        base = float(v[inc].sum()) + st
        start_nodes = self.nodes
        chosen = list(inc)
        self._dfs(items, vs.tolist(), pre, 0, r, base, chosen, 0, start_nodes)

    def _dfs(self, items, vs, pre, start, r, sf, chosen, depth, start_nodes) -> None:
        last = len(items) - r
        for j in range(start, last + 1):
            self.nodes += 1
            if self.nodes >= self._next_check:
                self._next_check = self.nodes + _CHECK_EVERY
                if self.deadline is not None and time.perf_counter() > self.deadline:
                    raise _Timeout
                if self.nodes > self._box_nodes:
                    raise _Handoff
            if sf + pre[j + r] - pre[j] < self.ureq:
                break
            chosen.append(items[j])
            if r == 1:
                self._leaf(chosen)
            elif depth < self.spawn_depth and self.nodes - start_nodes > self.budget:
                self._context(chosen.copy(), np.array(items[j + 1 :], dtype=np.int64), r - 1)
            else:
                self._dfs(items, vs, pre, j + 1, r - 1, sf + vs[j], chosen, depth + 1, start_nodes)
            chosen.pop()
