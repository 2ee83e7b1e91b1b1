"""How far the true front may lie from the incumbent front: the search's anytime certificate.

A certificate c (sum units) says: every selection's (g, U) has an incumbent p with
g_p <= g + c and U_p >= U − c, so every point of the true front is within c of the incumbent
front in both objectives (c / K points of the mean). It is read off two staircases:

* the incumbents (:class:`.staircase.Staircase`), and
* the proven boxes (:class:`.staircase.Proven`), each (t, u) saying no selection has g <= t
  and U >= u, with (inf, U_max + δU) added (no selection beats the max-U incumbent) and
  g >= ``g_floor`` (:meth:`.planes.Plane.g_floor`).

Together the proven boxes bound U by a step function Ubar(g), nondecreasing in g. The
distance d(g, U) = min_p max(U − U_p, g_p − g) grows with U and shrinks with g, so its largest
value under Ubar is at the upper-left corner of a step: the smallest g past the step's left end
(+ δg: the next value on the value grid) at the largest U below the step (− δU). The
certificate is the largest d over those corners: exactly the worst selection could lie where
the data sit on a value grid, within the float tolerance elsewhere. Proofs only add boxes and
incumbents only improve, so the certificate never grows while the search runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from selection.solvers.bb.staircase import Proven, Staircase

__all__ = ["Snapshot", "certified_gap", "worst_corner"]


@dataclass(frozen=True)
class Snapshot:
    """The search at one moment (sum units).

    Attributes:
        seconds: since the search started.
        points: the incumbent front's (g, U), g ascending.
        certified: the certificate c (:func:`certified_gap`).
        boxes: boxes searched so far.
    """

    seconds: float
    points: tuple[tuple[float, float], ...]
    certified: float
    boxes: int


def certified_gap(front: Staircase, proven: Proven, *, g_floor: float) -> float:
    """The certificate c of the incumbent ``front`` given the ``proven`` boxes (sum units).

    Args:
        front: the incumbents, the max-U selection among them.
        proven: the boxes proven to hold no selection better than the incumbents.
        g_floor: no selection has g below it.

    Returns:
        c >= 0 (0: the incumbents are the exact front); ``inf`` with no incumbent.
    """
    return worst_corner(front, proven, g_floor=g_floor)[0]


def worst_corner(front: Staircase, proven: Proven, *, g_floor: float) -> tuple[float, float, float]:
    """(c, g, U): the certificate (:func:`certified_gap`) and the corner that sets it."""
    if not len(front):
        return math.inf, g_floor, math.inf
    g = np.asarray(front.g, dtype=float)
    u = np.asarray(front.u, dtype=float)
    top = float(u[-1]) + front.du  # no selection has U >= top
    ts, us = proven.entries()
    corners_g, corners_u = [], []
    prev = -math.inf
    for t, ub in [*((t, ub) for t, ub in zip(ts, us, strict=True) if ub < top), (math.inf, top)]:
        gc = max(g_floor, prev + front.dg)
        prev = t
        if gc > t or not math.isfinite(ub):  # an empty step, or no selection in it
            continue
        corners_g.append(gc)
        corners_u.append(ub - front.du)
    if not corners_g:
        return 0.0, g_floor, -math.inf
    a = np.asarray(corners_u)
    b = np.asarray(corners_g)
    # max(a − U_p, g_p − b) is smallest where the two terms cross: g_p + U_p >= a + b
    i = np.searchsorted(g + u, a + b)
    lo = np.clip(i - 1, 0, len(g) - 1)
    hi = np.clip(i, 0, len(g) - 1)
    d = np.minimum(np.maximum(a - u[lo], g[lo] - b), np.maximum(a - u[hi], g[hi] - b))
    j = int(np.argmax(d))
    worst = float(d[j])
    return (worst if worst > 1e-9 else 0.0), float(b[j]), float(a[j])
