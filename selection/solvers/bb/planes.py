"""The two planes the bi-objective search takes and their Lagrangian bounds.

Both planes maximize U·x (sum units: K·U(S)) against a second objective g(S) to minimize,
S = Ud^T x the vector of the D domain sums (K·U_d(S)):

* ``gap``:   g(S) = max_d S_d − min_d S_d (K·gap(S));
* ``worst``: g(S) = −min_d S_d (−K·worst(S); the (U, worst) plane with worst negated).

For a direction c in the plane's dual cone, v = U − Ud·c and s(c) >= 0 bound U over every
selection with g(S) <= t:  U·x <= v·x + s(c)·t.

* ``gap``: Σ_d c_d = 0 and s = Σ_d max(c_d, 0): c·S <= s·max S − s·min S = s·g(S).
* ``worst``: c <= 0 and s = −Σ_d c_d: c·S <= −t·Σ_d c_d = s·t when every S_d >= −t.

The bound holds for any c of the cone, so a direction taken from an LP's duals only has to
be projected onto the cone (:meth:`Plane.project`); its quality, never its validity, depends
on the LP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PLANES", "Plane"]


@dataclass(frozen=True)
class Plane:
    """One (U, second objective) plane.

    Attributes:
        name: ``gap`` or ``worst``.
        column: the front table's column of the second objective.
        sign: the column's value is ``sign · g / K`` (worst = −g/K).
    """

    name: str
    column: str
    sign: float

    def g(self, S: np.ndarray) -> float:
        """The second objective (sum units, minimized) of the domain sums S, shape (D,)."""
        if self.name == "gap":
            return float(S.max() - S.min())
        return float(-S.min())

    def g_floor(self, Ud: np.ndarray, k: int) -> float:
        """No K-selection's g lies below this (sum units): 0 for the gap; for −min_d S_d,
        −min_d of the K largest Ud[:, d] summed (min_d S_d is at most any domain's best)."""
        if self.name == "gap":
            return 0.0
        top = -np.sort(-np.asarray(Ud, dtype=float), axis=0)[:k].sum(axis=0)
        return float(-top.min())

    def project(self, c: np.ndarray) -> np.ndarray:
        """c moved onto the plane's dual cone (the bound is valid for every c there)."""
        if self.name == "gap":
            return c - c.mean()
        return np.minimum(c, 0.0)

    def slope(self, c: np.ndarray) -> float:
        """s(c): how much the bound on U grows per unit of the threshold t."""
        if self.name == "gap":
            return float(np.maximum(c, 0.0).sum())
        return float(-c.sum())


PLANES = {"gap": Plane("gap", "gap", 1.0), "worst": Plane("worst", "worst", -1.0)}
