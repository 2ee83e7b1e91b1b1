"""``weighted``: U_d(S) = Σ_{i∈S} p_i U_{i,d}, p_i = n_i / Σ_{j∈S} n_j (linear-fractional).

The sample weights of the aggregate training commits, applied to the single-update
utilities: a large client counts for what it weighs in w_t + Σ p_i Δ_i. Asked under another
rule (:meth:`~selection.surrogates.base.Surrogate.under`), p_i are that rule's weights: 1/K
makes it the mean (linear), domain-balanced weights a black box.
"""

from __future__ import annotations

import numpy as np

from selection.aggregation import Aggregation
from selection.surrogates.base import Structure, Surrogate, register


@register
class WeightedSurrogate(Surrogate):
    """The sample-weighted mean of the selected clients' single-update utilities."""

    name = "weighted"
    structure = Structure.LINEAR_FRACTIONAL
    summary = "Σ p_i U_{i,d}, p_i = n_i / Σ_S n_j, FedAvg's weights (linear-fractional)"
    order = 20
    aggregation = Aggregation.SAMPLES

    def block(self, problem, idx, *, need_ud=True):
        p = self.pick_weights(problem, idx)
        U = (p * problem.U[idx]).sum(axis=1)
        if not need_ud:
            return U, None
        Ud = np.einsum("mk,mkd->md", p, problem.Ud[idx])
        return U, Ud

    def matrix(self, problem, X):
        w = self.ratio_weights(problem)
        if w is None:  # domain-balanced weights: rows as index blocks
            return super().matrix(problem, X)
        W = np.asarray(X, dtype=float) * w
        T = W.sum(axis=1)
        return W @ problem.U / T, (W @ problem.Ud) / T[:, None]
