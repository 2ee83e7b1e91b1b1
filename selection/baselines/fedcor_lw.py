"""``fedcor-lw:W``: fedsel's earlier FedCor — the authors' greedy step on a Ledoit–Wolf
covariance of a flat window of loss changes, probing every client every round.

The results committed before FedCor ran as published (``fedcor:5`` in ``results/study-baselines``,
``results/map``, ``results/study-fair-fight*``) came from this rule: ``fedcor-lw:5`` runs it as
the fair-fight studies did (1/K), ``fedcor-lw:5@agg=samples`` as the earlier ones (sample
weights, before each rule aggregated as its authors). It keeps FedCor's selection (:func:`~selection.baselines.fedcor.greedy_posterior`: greedily,
K times, argmax_k β_k (Σ_i p_i Σ_ik)/√Σ_kk over the clients not yet picked, then Σ conditioned on
k*) but not its model of Σ:

* Σ is the Ledoit–Wolf shrunk covariance (scikit-learn) of the last 20 rounds' vectors of every
  client's loss change, each round's under fedsel's own picks (the authors fit a GP on client
  embeddings to random-selection rounds only: :mod:`selection.baselines.fedcor`);
* every client's loss is read every round (``reads = probe``, charged a probe pass of every
  client each round); the first W rounds (W loss changes) select uniformly at random;
* β_k × 0.9 per pick, β reset to 1 every 10 rounds.

Aggregation as FedCor's authors: 1/K each (``fedcor-lw:W@agg=samples``: sample weights).
"""

from __future__ import annotations

import math

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.fedcor import greedy_posterior
from selection.baselines.reads import Reads
from selection.errors import SelectionError

WINDOW = 20  # loss-change vectors the covariance is estimated from
DISCOUNT = 0.9  # β_k ← 0.9 β_k when k is picked
RESET = 10  # rounds between resets of β to 1


@register
class FedCorLW(Baseline):
    name = "fedcor-lw"
    summary = (
        "fedsel's earlier FedCor: greedy posterior loss decrease under a Ledoit-Wolf "
        "covariance of the last 20 rounds' loss changes, every client probed every round"
    )
    arg = "W"
    arg_example = "5"
    integer = True
    minimum = 2
    order = 86
    reads = Reads.PROBE
    aggregation = "uniform"

    def __init__(self, spec: str, value: float | None = None) -> None:
        super().__init__(spec, value)
        if value is None or int(value) < 2:
            raise SelectionError(f"{spec}: W={value!r}: at least 2 warm-up rounds")
        self.warmup = int(value)
        self.round = 0
        self.ids: list[str] | None = None
        self.last: np.ndarray | None = None  # the losses at the previous round's model
        self.changes: list[np.ndarray] = []
        self.beta: np.ndarray | None = None

    def pick(self, problem, rng):
        ids = [str(c) for c in problem.ids]
        if self.ids is None:
            self.ids, self.beta = ids, np.ones(len(ids))
        elif ids != self.ids:
            raise SelectionError(f"{self.spec}: the clients changed between rounds")
        loss = self.losses(problem, range(problem.n))
        if self.last is not None:
            self.changes = [*self.changes, loss - self.last][-WINDOW:]
        self.last = loss
        if self.round % RESET == 0:
            self.beta = np.ones(len(ids))
        self.round += 1
        k = problem.k
        if len(self.changes) < self.warmup:
            return np.sort(rng.choice(len(ids), k, replace=False)).astype(np.int64)
        sigma = self.covariance()
        p = problem.n_samples / problem.n_samples.sum()
        picked = greedy_posterior(sigma, p, self.beta, k)
        self.beta[picked] *= DISCOUNT
        return picked

    def covariance(self) -> np.ndarray:
        """Ledoit–Wolf shrunk covariance of the kept loss-change vectors (N, N)."""
        from sklearn.covariance import ledoit_wolf  # here: the CLI starts without sklearn

        x = np.vstack(self.changes)
        sigma, _ = ledoit_wolf(x, assume_centered=False)
        scale = float(np.trace(sigma)) / len(sigma)
        return sigma + 1e-9 * (scale if scale > 0 and math.isfinite(scale) else 1.0) * np.eye(
            len(sigma)
        )
