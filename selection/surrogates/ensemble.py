"""``ensemble``: U_d(S) = accuracy on d of argmax_c Σ_{i∈S} p_i z_{i,c} (black-box).

z_i are the validation logits of the candidate model w_t + Δ_i (the oracle computes them to
count U_{i,d}; :mod:`selection.logits`), p_i = n_i / Σ_{j∈S} n_j. The sample-weighted logit
ensemble of the selected candidates is a first-order model of the aggregate w_t + Σ p_i Δ_i
(both are the same point to first order in the updates) that also sees how clients combine.

Cost is kept down without changing a value: a validation sample on which every client's
model predicts the same class c is predicted c by every ensemble with positive weights
(z_{i,c} ≥ z_{i,c'} for all i gives Σ p_i z_{i,c} ≥ Σ p_i z_{i,c'}), so only the samples on
which the N models disagree are evaluated per selection, in chunks of selections.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from selection.surrogates.base import Surrogate, register

CHUNK_ELEMENTS = 1 << 23  # selections × disagreeing samples × classes per chunk (float32)


@dataclass(frozen=True)
class _Prepared:
    zc: np.ndarray  # (N, C·S') float32: class-major logits of the disagreeing samples
    zy: np.ndarray  # (N, S') float32: each disagreeing sample's label logit
    n_classes: int
    onehot: np.ndarray  # (S', D) float: sample -> its domain
    const_hits: np.ndarray  # (D,) hits on the samples every model agrees on
    sizes: np.ndarray  # (D,) validation samples per domain


_prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _prepare(problem) -> _Prepared:
    if problem in _prepared:
        return _prepared[problem]
    lg = EnsembleSurrogate().logits_of(problem)
    z = lg.z.astype(np.float32)
    pred = z.argmax(axis=2)  # (N, S)
    agree = (pred == pred[:1]).all(axis=0)
    D = len(lg.domains)
    onehot = np.zeros((len(lg.y), D))
    onehot[np.arange(len(lg.y)), lg.domain] = 1.0
    const = ((pred[0] == lg.y) & agree).astype(float) @ onehot
    dis = np.flatnonzero(~agree)
    zd = z[:, dis]  # (N, S', C)
    out = _Prepared(
        zc=np.ascontiguousarray(zd.transpose(0, 2, 1)).reshape(len(z), -1),
        zy=np.ascontiguousarray(zd[:, np.arange(len(dis)), lg.y[dis]]),
        n_classes=int(z.shape[2]),
        onehot=onehot[dis],
        const_hits=const,
        sizes=onehot.sum(axis=0),
    )
    _prepared[problem] = out
    return out


@register
class EnsembleSurrogate(Surrogate):
    """Accuracy of the sample-weighted ensemble of the selected candidates' logits.

    A sample counts as correct when its label's ensemble logit is the largest (a tie with
    another class, which float logits make vanishingly rare, counts as correct).
    """

    name = "ensemble"
    structure = "black-box"
    needs_logits = True
    summary = "accuracy of argmax Σ p_i z_i, the sample-weighted logit ensemble (black-box)"
    order = 30

    def block(self, problem, idx, *, need_ud=True):
        pr = _prepare(problem)
        M, K = idx.shape
        n = problem.n_samples.astype(np.float32)[idx]
        p = n / n.sum(axis=1, keepdims=True)
        S, C = pr.zy.shape[1], pr.n_classes
        hits = np.zeros((M, pr.onehot.shape[1]))
        step = max(1, CHUNK_ELEMENTS // max(1, S * C))
        for a in range(0, M if S else 0, step):
            b = min(M, a + step)
            P = np.zeros((b - a, problem.n), dtype=np.float32)
            np.put_along_axis(P, idx[a:b], p[a:b], axis=1)  # (m, N) ensemble weights
            L = (P @ pr.zc).reshape(b - a, C, S)  # every class's ensemble logit
            top = L.max(axis=1)
            hit = (P @ pr.zy) >= top  # the label's logit is the largest
            hits[a:b] = hit.astype(float) @ pr.onehot
        hits += pr.const_hits
        Ud = 100.0 * hits / pr.sizes
        U = 100.0 * hits.sum(axis=1) / pr.sizes.sum()
        return U, (Ud if need_ud else None)
