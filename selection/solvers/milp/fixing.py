"""Exact LP reduced-cost fixing before the first lexicographic stage (the HiGHS route).

Why: on large models (N = 5000, K = 500) the first stage of an ε point spends most of its
time at the root looking for an incumbent: HiGHS's LP bound comes close to the optimum early,
its heuristics find a good selection much later. Once a good incumbent is known, reduced-cost
fixing leaves only a small share of the binaries free (results/benchmarks/solvers.md has the
N = 5000 times of the routes that fix).

How (all of it exact, no tolerance on the answer):

1. Solve the LP relaxation of stage 1 (``max c·v`` under the current row bounds) and take
   its row multipliers y. For *any* y the Lagrangian bound

       c·v <= B(y) := Σ_r max(y_r·lo_r, y_r·up_r) + Σ_j max(d_j·l_j, d_j·u_j),
       d = c − Aᵀy,

   holds for every v within its row and column bounds (a multiplier with the wrong sign for
   an infinite bound is set to 0), and a binary x_j away from its preferred bound
   (1 if d_j > 0, else 0) lowers the bound by |d_j|. The bound is recomputed here in
   float64 from y, so an inexact LP only loosens it; both signs of HiGHS's dual are tried and
   the smaller bound kept (any y is valid).
2. An incumbent: the same MILP with every binary outside the ``core`` (the ones with the
   smallest |d_j|) fixed at its preferred bound (a restricted, tiny MILP).
3. Fix x_j at its preferred bound whenever B − |d_j| < z_inc − tol − margin: no selection with
   x_j flipped reaches z_inc − tol, so none can be stage-1 optimal, nor within the second
   stage's tolerance tol of the optimum. The lexicographic stages then run on the free
   binaries only, with the incumbent as a start; bounds are restored afterwards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from selection.solvers.milp.spec import MilpSpec

__all__ = [
    "dual_bound",
    "best_bound",
    "fixable",
    "excluded",
    "preferred",
    "core_size",
    "CORE_SIZE",
]

# binaries left free in the incumbent's restricted MILP (smallest |d_j|): at most CORE_SIZE,
# and a tenth of N, so that on a small model the restricted MILP stays small beside the
# whole solve
CORE_SIZE = 60


def core_size(n_x: int) -> int:
    """Free binaries of the incumbent's restricted MILP for N = ``n_x`` clients."""
    return min(CORE_SIZE, max(8, n_x // 10))


def dual_bound(
    spec: MilpSpec,
    c: np.ndarray,
    y: np.ndarray,
    row_lo: np.ndarray,
    row_up: np.ndarray,
    x_bounds: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[float, np.ndarray]:
    """The Lagrangian bound B(y) on ``max c·v`` and the reduced costs d = c − Aᵀy.

    Args:
        spec: the model (matrix and column bounds).
        c: objective, shape (n_col,).
        y: row multipliers, shape (n_row,), any sign.
        row_lo, row_up: the current row bounds, shape (n_row,), ±inf allowed.
        x_bounds: the binaries' current (lo, up), shape (n_x,) each, where some are fixed
            (B then bounds the restricted model); None: the spec's.

    Returns:
        (B, d): B is +inf when y cannot bound the objective (an unbounded auxiliary column).
    """
    y = np.array(y, dtype=float)
    y[(y > 0) & np.isinf(row_up)] = 0.0
    y[(y < 0) & np.isinf(row_lo)] = 0.0
    up = np.where(np.isinf(row_up), 0.0, row_up)
    lo = np.where(np.isinf(row_lo), 0.0, row_lo)
    rows = float(np.sum(np.where(y > 0, y * up, y * lo)))
    d = np.asarray(c, dtype=float) - spec.A.T @ y
    col_lo, col_up = spec.col_lo, spec.col_up
    if x_bounds is not None:
        col_lo, col_up = np.array(col_lo, dtype=float), np.array(col_up, dtype=float)
        col_lo[: spec.n_x], col_up[: spec.n_x] = x_bounds
    hi_col = np.where(d > 0, col_up, np.where(d < 0, col_lo, 0.0))
    if np.any(np.isinf(hi_col) & (d != 0)):
        return float("inf"), d
    cols = float(np.sum(np.where(d != 0, d * hi_col, 0.0)))
    return rows + cols, d


def best_bound(
    spec: MilpSpec,
    c: np.ndarray,
    y: np.ndarray,
    row_lo: np.ndarray,
    row_up: np.ndarray,
    x_bounds: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[float, np.ndarray]:
    """:func:`dual_bound` for y and −y (solvers differ in their dual sign), the smaller."""
    a = dual_bound(spec, c, y, row_lo, row_up, x_bounds)
    b = dual_bound(spec, c, -np.asarray(y, dtype=float), row_lo, row_up, x_bounds)
    return a if a[0] <= b[0] else b


def _margin(bound: float, dx: np.ndarray) -> float:
    """1e-6 + 1e-9·(|B| + Σ|d|): the float64 error of B and of a backend's reported value."""
    return 1e-6 + 1e-9 * (abs(bound) + float(dx.sum()))


def fixable(bound: float, d: np.ndarray, n_x: int, z_inc: float, tol: float) -> np.ndarray:
    """Boolean mask (n_x,): binaries that no selection with value >= z_inc − tol flips.

    The margin of :func:`_margin` absorbs the float64 error of B and of the backend's
    z_inc, so a borderline column stays free.
    """
    dx = np.abs(d[:n_x])
    return bound - dx < z_inc - tol - _margin(bound, dx)


def excluded(bound: float, d: np.ndarray, n_x: int, z: float) -> bool:
    """Whether the bound B proves that no selection reaches value ``z`` (with the margin of
    :func:`fixable`)."""
    return bound < z - _margin(bound, np.abs(d[:n_x]))


def preferred(d: np.ndarray, n_x: int) -> np.ndarray:
    """The bound each binary takes in the LP bound: 1.0 where d_j > 0, else 0.0."""
    return (d[:n_x] > 0).astype(float)
