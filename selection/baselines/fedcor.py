"""``fedcor:W``: correlation-based active client selection (Tang et al., CVPR '22, "FedCor").

FedCor models the clients' loss changes ΔL_i(t) = L_i(w_{t+1}) − L_i(w_t) as a Gaussian process
whose covariance Σ carries how clients' losses move together, and picks the clients whose
training is expected to lower the total loss most (the paper's greedy selection, as the
authors' ``GPR.Select_Clients`` computes it): greedily, K times, the client

    k* = argmax_k  β_k · (Σ_i p_i Σ_ik) / sqrt(Σ_kk),    p_i = n_i / n,

(i and k over the clients not yet picked), then Σ ← Σ − Σ_{:,k*} Σ_{k*,:} / Σ_{k*k*} (the posterior covariance once k*'s loss change is
known). β_k is the paper's discount: a pick multiplies it by 0.9, every 10 rounds it resets to 1
(so one client is not picked every round while Σ is unchanged).

What it reads, as the paper: every client's loss at the current model every round (the paper
evaluates each client's training loss; fedsel the loss of its probe batch, charged as a probe
pass of every client, ``reads = probe``). The first W rounds (``fedcor:W``, the paper's warm-up)
select uniformly at random while the loss changes accumulate.

What fedsel changes: Σ is the Ledoit–Wolf shrunk covariance (scikit-learn) of the last 20
rounds' loss-change vectors — the estimate the data give, where the paper fits a kernel over
learned client embeddings by marginal likelihood, and fedsel has no training rounds to spare
for the paper's extra random-selection round per GP update (it would double that round's
compute). No ε-greedy (the paper's default is off).

Aggregation as the authors run it: the picks are averaged equally (``src/federated_main.py``:
``global_weights = average_weights(local_weights[idxs_users], omega=None)``; ``src/utils.py``'s
``average_weights`` divides the sum by the number of picks when ``omega`` is None).
``fedcor:W@agg=samples`` runs it with sample weights (an ablation).
"""

from __future__ import annotations

import math

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.reads import Reads
from selection.errors import SelectionError

WINDOW = 20  # loss-change vectors the covariance is estimated from
DISCOUNT = 0.9  # β_k ← 0.9 β_k when k is picked
RESET = 10  # rounds between resets of β to 1


def greedy_posterior(sigma: np.ndarray, p: np.ndarray, beta: np.ndarray, k: int) -> np.ndarray:
    """FedCor's greedy selection on covariance ``sigma`` (sorted indices; ties to the lower
    index): the sums run over the clients not yet picked, as the authors' code does."""
    s = np.array(sigma, dtype=float)
    free = np.ones(len(p), dtype=bool)
    picked: list[int] = []
    for _ in range(k):
        diag = np.clip(np.diag(s), 1e-300, None)
        score = np.where(free, beta * (np.where(free, p, 0.0) @ s) / np.sqrt(diag), -np.inf)
        j = int(np.argmax(score))
        picked.append(j)
        free[j] = False
        s = s - np.outer(s[:, j], s[j, :]) / diag[j]
    return np.array(sorted(picked), dtype=np.int64)


@register
class FedCor(Baseline):
    name = "fedcor"
    summary = (
        "FedCor: greedy posterior loss decrease under the covariance of the clients' loss "
        "changes (W warm-up rounds uniform)"
    )
    arg = "W"
    arg_example = "5"
    integer = True
    minimum = 2
    order = 85
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
