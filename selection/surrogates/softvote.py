"""``softvote``: U_d(S) = Σ_{i∈S} p_i s_{i,d}, p_i = n_i / Σ_{j∈S} n_j (linear-fractional).

s_{i,d} is client i's **soft vote** on domain d: the mean, over d's validation samples, of the
probability the candidate model w_t + Δ_i gives the true label (softmax of its validation
logits, %), and s_i the same over every validation sample. The sample-weighted mean of these
probabilities over a selection is the true-label probability of the probability-averaged
ensemble of the selected candidates: a smooth stand-in for the logit ensemble's accuracy
(``ensemble``, black-box) that keeps the ``weighted`` structure, so every exact route answers
it (ratio rows multiplied by Σ n_i x_i, Dinkelbach on ratio objectives; :mod:`.fractional`).
Probabilities run below accuracies (a correct vote rarely carries probability 1): the scale
is the soft vote's own, the ranking of selections is what the formulations use.
"""

from __future__ import annotations

import weakref

import numpy as np

from selection.aggregation import Aggregation
from selection.errors import SelectionError
from selection.surrogates.base import Structure, Surrogate, register

_values: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def soft_votes(problem) -> tuple[np.ndarray, np.ndarray]:
    """(s (N,), s_d (N, D)), %, from the problem's validation logits (cached per logits: the
    problems of one round under several weightings share them)."""
    lg = SoftVoteSurrogate().logits_of(problem)
    if lg in _values:
        return _values[lg]
    z = lg.z.astype(np.float32)
    z = z - z.max(axis=2, keepdims=True)
    e = np.exp(z)
    pt = e[:, np.arange(len(lg.y)), lg.y] / e.sum(axis=2)  # (N, S) true-label probability
    D = len(lg.domains)
    onehot = np.zeros((len(lg.y), D))
    onehot[np.arange(len(lg.y)), lg.domain] = 1.0
    sizes = onehot.sum(axis=0)
    if np.any(sizes == 0):
        raise SelectionError(
            f"the softvote surrogate: domain {lg.domains[int(np.argmin(sizes))]!r} has no validation samples"
        )
    s_d = 100.0 * (pt.astype(np.float64) @ onehot) / sizes
    s = 100.0 * pt.astype(np.float64).mean(axis=1)
    _values[lg] = (s, s_d)
    return s, s_d


@register
class SoftVoteSurrogate(Surrogate):
    """The sample-weighted mean of the selected candidates' true-label probabilities."""

    name = "softvote"
    structure = Structure.LINEAR_FRACTIONAL
    needs_logits = True
    summary = "Σ p_i s_{i,d}: FedAvg-weighted true-label probability of the candidates (linear-fractional)"
    order = 40
    aggregation = Aggregation.SAMPLES

    def client_values(self, problem):
        return soft_votes(problem)

    def block(self, problem, idx, *, need_ud=True):
        s, s_d = soft_votes(problem)
        p = self.pick_weights(problem, idx)
        U = (p * s[idx]).sum(axis=1)
        if not need_ud:
            return U, None
        return U, np.einsum("mk,mkd->md", p, s_d[idx])

    def matrix(self, problem, X):
        w = self.ratio_weights(problem)
        if w is None:  # domain-balanced weights: rows as index blocks
            return super().matrix(problem, X)
        s, s_d = soft_votes(problem)
        W = np.asarray(X, dtype=float) * w
        T = W.sum(axis=1)
        return W @ s / T, (W @ s_d) / T[:, None]
