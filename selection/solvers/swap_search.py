"""Swap local search for the smallest gap: the incumbent of :mod:`.min_gap`.

A selection S is held as sums over its clients: the weighted domain rows Σ w_i U_id, Σ w_i U_i,
Σ w_i (w_i = 1 under a ``linear`` surrogate, the client weights of a ``linear-fractional`` one)
and, where they are constrained, Σ F_z and Σ B. One swap (i out, j in) changes each sum by one
subtraction and one addition, so all K·(N − K) swaps are scored at once, domain by domain, in
arrays of K·(N − K) floats.

Selections are ranked by the key enumeration uses for the smallest-gap question: the smaller
gap, then the higher U, both rounded to 9 decimals (percentage points). The search is a
best-improvement descent, then a fixed number of kicks: ``kick`` random swaps applied to the
best selection so far (from a generator seeded by ``seed``), each followed by a descent. The
same seed gives the same selection; every step only improves the rounded key, so a descent ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SwapData", "swap_search"]

_R = 9  # decimals of the ranking key, as enumeration rounds (exhaustive._R)


@dataclass(frozen=True)
class SwapData:
    """The per-client values a selection's sums are made of.

    Attributes:
        A: weighted domain rows w_i U_id, shape (N, D).
        a: weighted utilities w_i U_i, shape (N,).
        w: weights w_i > 0, shape (N,).
        F_z, f_min: Σ F_z >= f_min on every selection (None: no such row).
        B, b_max: Σ B <= b_max on every selection (None: no such row).
    """

    A: np.ndarray
    a: np.ndarray
    w: np.ndarray
    F_z: np.ndarray | None = None
    f_min: float | None = None
    B: np.ndarray | None = None
    b_max: float | None = None

    def key(self, mask: np.ndarray) -> tuple[float, float]:
        """(gap, −U) of the selection ``mask`` (bool, shape (N,)), rounded: smaller is better."""
        T = float(self.w[mask].sum())
        rows = self.A[mask].sum(axis=0)
        return round(float(np.ptp(rows)) / T, _R), -round(float(self.a[mask].sum()) / T, _R)

    def feasible(self, mask: np.ndarray) -> bool:
        """Whether ``mask`` meets the Σ F_z and Σ B rows (within 1e-9, as enumeration)."""
        if self.f_min is not None and float(self.F_z[mask].sum()) < self.f_min - 1e-9:
            return False
        return self.b_max is None or float(self.B[mask].sum()) <= self.b_max + 1e-9


def _best_swap(data: SwapData, mask: np.ndarray) -> tuple[tuple[float, float], int, int]:
    """The best key any one swap reaches from ``mask``, and the swap (out, in)."""
    inside, outside = np.flatnonzero(mask), np.flatnonzero(~mask)
    T = data.w[mask].sum() - data.w[inside][:, None] + data.w[outside][None, :]
    rows = data.A[mask].sum(axis=0)
    hi = np.full(T.shape, -np.inf)
    lo = np.full(T.shape, np.inf)
    for d in range(data.A.shape[1]):
        v = rows[d] - data.A[inside, d][:, None] + data.A[outside, d][None, :]
        np.maximum(hi, v, out=hi)
        np.minimum(lo, v, out=lo)
    gap = np.round((hi - lo) / T, _R)
    U = np.round((data.a[mask].sum() - data.a[inside][:, None] + data.a[outside][None, :]) / T, _R)
    for col, bound, sign in ((data.F_z, data.f_min, -1.0), (data.B, data.b_max, 1.0)):
        if bound is not None:  # a swap that breaks a row is no move
            s = col[mask].sum() - col[inside][:, None] + col[outside][None, :]
            gap[sign * (s - bound) > 1e-9] = np.inf
    g = gap.min()
    U = np.where(gap == g, U, -np.inf)
    i, j = np.unravel_index(int(np.argmax(U)), U.shape)
    return (float(g), -float(U[i, j])), int(inside[i]), int(outside[j])


def _descend(data: SwapData, mask: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Best-improvement swaps from ``mask`` (a copy) until no swap improves the key."""
    mask = mask.copy()
    key = data.key(mask)
    while True:
        new, i, j = _best_swap(data, mask)
        if not new < key:
            return mask, key
        mask[i], mask[j] = False, True
        key = new


def swap_search(
    data: SwapData, start: np.ndarray, *, iterations: int, seed: int = 0, kick: int = 2
) -> tuple[np.ndarray, tuple[float, float]]:
    """The best selection found from ``start`` (bool, shape (N,), feasible) and its key.

    Args:
        data: the clients' values.
        start: the first selection (a feasible mask with K entries).
        iterations: kicks after the first descent (0: the descent alone).
        seed: seeds the kicks.
        kick: swaps per kick (at most min(K, N − K)).

    Returns:
        (mask, (gap, −U)) of the best selection, key rounded to 9 decimals.
    """
    rng = np.random.default_rng(seed)
    best, key = _descend(data, np.asarray(start, dtype=bool))
    k = int(best.sum())
    m = min(kick, k, len(best) - k)
    for _ in range(iterations if m > 0 else 0):
        trial = best.copy()
        trial[rng.choice(np.flatnonzero(best), m, replace=False)] = False
        trial[rng.choice(np.flatnonzero(~best), m, replace=False)] = True
        if not data.feasible(trial):
            continue
        trial, new = _descend(data, trial)
        if new < key:
            best, key = trial, new
    return best, key
