"""The incumbent front of the bi-objective search and its search boxes.

Points (g, U) in sum units (g minimized, U maximized), kept non-dominated and sorted by g
ascending (so U ascending too). Two values are the same when they differ by at most ``eg`` /
``eu`` (half a value-grid step where the data lie on one, else a float tolerance).

The part of the plane no incumbent dominates is the union of the **boxes** {g <= t, U >= u}
of its local upper bounds: (g_1 − δg, −inf), (g_{j+1} − δg, U_j + δU) between neighbours and
(inf, U_m + δU) after the last point, δ the smallest step between two distinct values (0.99
of a grid step, so a box holds exactly the values strictly better than its corner's). The
front is exact when every box is proven to hold no selection.
"""

from __future__ import annotations

import bisect
import math

__all__ = ["Proven", "Staircase"]


class Staircase:
    """A non-dominated set of (g, U) points with one selection each.

    Args:
        eg, eu: same-value tolerances of g and U (sum units).
        dg, du: steps from a point to the next strictly better value (>= eg, eu).
    """

    def __init__(self, eg: float, eu: float, dg: float, du: float) -> None:
        self.eg, self.eu, self.dg, self.du = eg, eu, dg, du
        self.g: list[float] = []
        self.u: list[float] = []
        self.sel: list[tuple[int, ...]] = []
        self.version = 0

    def __len__(self) -> int:
        return len(self.g)

    def dominated(self, g: float, u: float) -> bool:
        """Whether an incumbent is at least as good as (g, U) in both (within tolerances)."""
        i = bisect.bisect_right(self.g, g + self.eg)
        return i > 0 and self.u[i - 1] >= u - self.eu

    def insert(self, g: float, u: float, sel: tuple[int, ...]) -> bool:
        """Add (g, U) unless dominated; drop the incumbents it dominates. Whether it was added."""
        if self.dominated(g, u):
            return False
        i = bisect.bisect_left(self.g, g - self.eg)  # from here on: g_p >= g − eg
        j = i
        while j < len(self.g) and self.u[j] <= u + self.eu:
            j += 1
        self.g[i:j] = [g]
        self.u[i:j] = [u]
        self.sel[i:j] = [sel]
        self.version += 1
        return True

    def best_u(self, t: float) -> float:
        """The largest U of an incumbent with g <= t (−inf if none)."""
        i = bisect.bisect_right(self.g, t)
        return self.u[i - 1] if i else -math.inf

    def boxes(self) -> list[tuple[float, float]]:
        """The local upper bounds (t, u), largest t first."""
        out = [(math.inf, self.u[-1] + self.du)] if self.g else [(math.inf, -math.inf)]
        for j in range(len(self.g) - 1, 0, -1):
            out.append((self.g[j] - self.dg, self.u[j - 1] + self.du))
        if self.g:
            out.append((self.g[0] - self.dg, -math.inf))
        return out


class Proven:
    """Boxes proven to hold no selection better than the incumbents: (t, u) means no selection
    has g <= t and U >= u. A box (t', u') is covered when some (t, u) has t >= t', u <= u'."""

    def __init__(self) -> None:
        self._t: list[float] = []  # ascending
        self._u: list[float] = []

    def add(self, t: float, u: float) -> None:
        if self.covers(t, u):
            return
        # kept: no entry covers another, so u ascends with t; the entries the new one
        # covers (t_e <= t, u_e >= u) are a block just before its place
        i = bisect.bisect_right(self._t, t)
        j = i
        while j > 0 and self._u[j - 1] >= u:
            j -= 1
        self._t[j:i] = [t]
        self._u[j:i] = [u]

    def covers(self, t: float, u: float) -> bool:
        i = bisect.bisect_left(self._t, t)
        return i < len(self._t) and self._u[i] <= u

    def entries(self) -> tuple[list[float], list[float]]:
        """The kept (t, u), t ascending (u ascends with it): copies."""
        return list(self._t), list(self._u)
