"""``mean``: U_d(S) = mean_{i∈S} U_{i,d}, the problem statement's definition (linear at fixed K)."""

from __future__ import annotations

import numpy as np

from selection.surrogates.base import Structure, Surrogate, register


@register
class MeanSurrogate(Surrogate):
    """The unweighted mean of the selected clients' single-update utilities."""

    name = "mean"
    structure = Structure.LINEAR
    summary = "mean of the selected clients' U_{i,d} (the problem statement's definition; linear)"
    order = 10

    def block(self, problem, idx, *, need_ud=True):
        k = idx.shape[1]
        U = problem.U[idx].sum(axis=1) / k
        if not need_ud:
            return U, None
        Ud = problem.Ud[idx[:, 0]].copy()
        for j in range(1, k):  # K gathers of (M, D) beat one (M, K, D) gather
            Ud += problem.Ud[idx[:, j]]
        Ud /= k
        return U, Ud

    def matrix(self, problem, X):
        X = np.asarray(X, dtype=float)
        return X @ problem.U / X.sum(axis=1), (X @ problem.Ud) / X.sum(axis=1, keepdims=True)
