"""``ensemble``: U_d(S) = accuracy on d of argmax_c Σ_{i∈S} p_i z_{i,c} (black-box).

z_i are the validation logits of the candidate model w_t + Δ_i (the oracle computes them to
count U_{i,d}; :mod:`selection.logits`), p_i = n_i / Σ_{j∈S} n_j. The sample-weighted logit
ensemble of the selected candidates is a first-order model of the aggregate w_t + Σ p_i Δ_i
(both are the same point to first order in the updates) that also sees how clients combine.
Asked under another rule (:meth:`~selection.surrogates.base.Surrogate.under`), p_i are that
rule's weights (1/K, domain-balanced).

Cost is kept down without changing a value: a validation sample on which every client's
model predicts the same class c is predicted c by every ensemble with positive weights
(z_{i,c} ≥ z_{i,c'} for all i gives Σ p_i z_{i,c} ≥ Σ p_i z_{i,c'}), so only the samples on
which the N models disagree are evaluated per selection, in chunks of selections.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from selection.aggregation import Aggregation
from selection.surrogates.base import Structure, Surrogate, Swaps, register

CHUNK_ELEMENTS = 1 << 23  # selections × disagreeing samples × classes per chunk (float32)


@dataclass(frozen=True)
class _Prepared:
    zc: np.ndarray  # (N, C·S') float32: class-major logits of the disagreeing samples
    zy: np.ndarray  # (N, S') float32: each disagreeing sample's label logit
    n_classes: int
    label: np.ndarray  # (S',) each disagreeing sample's label
    onehot: np.ndarray  # (S', D) float: sample -> its domain
    const_hits: np.ndarray  # (D,) hits on the samples every model agrees on
    sizes: np.ndarray  # (D,) validation samples per domain


_prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _prepare(problem) -> _Prepared:
    """The round's logits reduced to what every selection's value reads (cached per logits:
    the problems of one round under several weightings share them)."""
    lg = EnsembleSurrogate().logits_of(problem)
    if lg in _prepared:
        return _prepared[lg]
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
        label=lg.y[dis],
        onehot=onehot[dis],
        const_hits=const,
        sizes=onehot.sum(axis=0),
    )
    _prepared[lg] = out
    return out


@register
class EnsembleSurrogate(Surrogate):
    """Accuracy of the sample-weighted ensemble of the selected candidates' logits.

    A sample counts as correct when its label's ensemble logit is the largest (a tie with
    another class, which float logits make vanishingly rare, counts as correct).
    """

    name = "ensemble"
    structure = Structure.BLACK_BOX
    needs_logits = True
    summary = "accuracy of argmax Σ p_i z_i, the sample-weighted logit ensemble (black-box)"
    order = 30
    aggregation = Aggregation.SAMPLES

    def block(self, problem, idx, *, need_ud=True):
        pr = _prepare(problem)
        M, K = idx.shape
        p = self.pick_weights(problem, idx, np.float32)
        S, C = pr.zy.shape[1], pr.n_classes
        hits = np.zeros((M, pr.onehot.shape[1]))
        cols = np.arange(S)
        step = max(1, CHUNK_ELEMENTS // max(1, S * C))
        for a in range(0, M if S else 0, step):
            b = min(M, a + step)
            P = np.zeros((b - a, problem.n), dtype=np.float32)
            np.put_along_axis(P, idx[a:b], p[a:b], axis=1)  # (m, N) ensemble weights
            L = (P @ pr.zc).reshape(b - a, C, S)  # every class's ensemble logit
            # the label's logit read from the same sums as its rivals' (a second product
            # may round it differently: a kernel's order, the machine's BLAS threads)
            Ly = L[:, pr.label, cols].copy()
            L[:, pr.label, cols] = -np.inf
            hit = Ly >= L.max(axis=1)  # the label's logit is the largest (a tie counts)
            hits[a:b] = hit.astype(float) @ pr.onehot
        hits += pr.const_hits
        Ud = 100.0 * hits / pr.sizes
        U = 100.0 * hits.sum(axis=1) / pr.sizes.sum()
        return U, (Ud if need_ud else None)

    def swaps(self, problem, selected):
        if self.ratio_weights(problem) is None:  # a pick's weight depends on the others
            return Swaps(self, problem, selected)
        return _EnsembleSwaps(self, problem, selected)

    def domain_shares(self, problem):
        """The domains' shares of the validation samples: U is the pooled accuracy."""
        pr = _prepare(problem)
        return pr.sizes / pr.sizes.sum()

    def value_bounds(self, problem):
        """Per domain, the share of samples some K-selection could get right (upper) and every
        one gets right (lower).

        The ensemble is right on sample s only if, for every rival class c, the label's
        logit sum beats c's: Σ_{i∈S} n_i (z_{i,y} − z_{i,c}) >= 0 (p_i = n_i / Σ n_j > 0 scales
        it). That needs the K largest terms n_i (z_{i,y} − z_{i,c}) over all N clients to sum
        to >= 0 for every c (a separate test per rival: a relaxation, so a bound); it holds for
        every S when the K smallest do. A member that predicts y is neither needed nor enough
        (logits add: two members may make a third class win), so the share of samples some
        client gets right bounds nothing. Terms within 1e-4 of their magnitude count on the
        generous side (the block's float32 sums). Under 1/K weights the same with n_i = 1; under
        domain-balanced ones (no common scale of the terms) none: None.
        """
        pr = _prepare(problem)
        k, S, C = problem.k, pr.zy.shape[1], pr.n_classes
        if S == 0:
            share = 100.0 * pr.const_hits / pr.sizes
            return share, share
        w = self.ratio_weights(problem)
        if w is None:  # domain-balanced weights: no such relaxation here
            return None
        n = w.astype(np.float32)
        d = n[:, None, None] * (pr.zy[:, None, :] - pr.zc.reshape(len(n), C, S))  # (N, C, S')
        mag = np.abs(d).max(axis=0) * k * 1e-4
        top = np.partition(d, len(n) - k, axis=0)[len(n) - k :].sum(axis=0)  # (C, S')
        bot = np.partition(d, k - 1, axis=0)[:k].sum(axis=0)
        rival = np.ones((C, S), dtype=bool)
        rival[pr.label, np.arange(S)] = False
        possible = np.where(rival, top >= -mag, True).all(axis=0)
        sure = np.where(rival, bot > mag, True).all(axis=0)
        up = 100.0 * (pr.const_hits + possible @ pr.onehot) / pr.sizes
        lo = 100.0 * (pr.const_hits + sure @ pr.onehot) / pr.sizes
        return lo, up


class _EnsembleSwaps(Swaps):
    """One-swap neighbours of a selection, scored incrementally.

    The current selection's unnormalized logit sums L = Σ_{i∈S} n_i z_i are kept (the argmax
    ignores the positive 1/Σ n); a neighbour S − {o} + {j} sums L − n_o z_o + n_j z_j. A sample
    whose label margin over its best rival in L − n_o z_o exceeds what any one client can move
    it (max_j n_j max_c |z_{j,c} − z_{j,y}|) has the same verdict in every neighbour, so only
    the others are evaluated per j (in float32, as :meth:`EnsembleSurrogate.block`).
    """

    def __init__(self, surrogate, problem, selected) -> None:
        pr = _prepare(problem)
        self.pr = pr
        self.n = surrogate.ratio_weights(problem).astype(np.float64)  # p_i ∝ these
        N, C, S = len(self.n), pr.n_classes, pr.zy.shape[1]
        self.z = pr.zc.reshape(N, C, S)  # class-major: a class's row of samples is contiguous
        spread = np.abs(self.z - pr.zy[:, None, :]).max(axis=1) if S else np.zeros((N, 0))
        self.reach = (self.n[:, None] * spread).max(axis=0) * (1 + 1e-5) + 1e-6  # (S',)
        super().__init__(surrogate, problem, selected)

    def move_to(self, selected) -> None:
        super().move_to(selected)
        w = self.n[self.selected]
        self.L = np.tensordot(w, self.z[self.selected].astype(np.float64), axes=1)  # (C, S')
        self.Ly = self.L[self.pr.label, np.arange(self.L.shape[1])]  # the same sums

    def _shares(self, hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hits = hits + self.pr.const_hits
        return 100.0 * hits.sum(axis=-1) / self.pr.sizes.sum(), 100.0 * hits / self.pr.sizes

    def current(self):
        rival = self.L.copy()
        rival[self.pr.label, np.arange(rival.shape[1])] = -np.inf
        hit = (self.Ly >= rival.max(axis=0)).astype(float) if rival.size else np.zeros(0)
        U, Ud = self._shares(hit @ self.pr.onehot)
        return float(U), Ud

    def values(self, out, ins):
        """As :meth:`Swaps.values`; ``score`` sums tanh(margin / reach) over the samples a
        newcomer may change: how far the label leads (or trails) its best rival, in units of
        what one client can move it."""
        pr = self.pr
        N, C, S = self.z.shape
        B = self.L - self.n[out] * self.z[out]
        By = self.Ly - self.n[out] * pr.zy[out]
        rival = B.copy()
        rival[pr.label, np.arange(S)] = -np.inf
        a = By - rival.max(axis=0) if S else np.zeros(0)
        fixed = (a > self.reach).astype(float) @ pr.onehot  # right whoever comes in
        cs = np.flatnonzero(np.abs(a) <= self.reach)  # the verdicts a newcomer may change
        ins = np.asarray(ins, dtype=np.int64)
        hits = np.tile(fixed, (len(ins), 1))
        score = np.zeros(len(ins))
        if len(cs):
            Bc, Byc = B[:, cs].astype(np.float32), By[cs].astype(np.float32)
            onehot, lab, cols = pr.onehot[cs], pr.label[cs], np.arange(len(cs))
            scale = self.reach[cs].astype(np.float32)
            # the newcomers' logits on the contested samples: rows first when they are few
            few = len(ins) * S < N * len(cs)
            z = self.z if few else np.take(self.z, cs, axis=2)
            step = max(1, CHUNK_ELEMENTS // (C * (S if few else len(cs))))
            for r0 in range(0, len(ins), step):
                J = ins[r0 : r0 + step]
                w = self.n[J].astype(np.float32)
                L = np.take(z[J], cs, axis=2) if few else z[J]  # (m, C, contested)
                L *= w[:, None, None]
                L += Bc[None]
                L[:, lab, cols] = -np.inf  # the rivals only
                margin = Byc[None] + w[:, None] * np.take(pr.zy[J], cs, axis=1)
                margin -= L.max(axis=1)
                hits[r0 : r0 + step] += (margin >= 0).astype(float) @ onehot
                score[r0 : r0 + step] = np.tanh(margin / scale).sum(axis=1)
        U, Ud = self._shares(hits)
        return U, Ud, score
