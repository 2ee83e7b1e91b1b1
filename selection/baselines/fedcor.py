"""``fedcor:W``: correlation-based active client selection as published (Tang et al., CVPR '22,
"FedCor"), following the authors' code (github.com/Yoruko-Tang/FedCor, ``src/``).

FedCor models one round's loss changes of all clients, ΔL_i = L_i(w_{t+1}) − L_i(w_t), as a
Gaussian process over clients (:mod:`selection.baselines.fedcor_gp`: the authors' kernel on
learned client embeddings, trained by marginal likelihood), and picks the clients whose training
lowers the expected total loss most. Its rounds, as ``federated_main.py`` runs them:

* **warm-up**, rounds t ≤ W (``fedcor:W``; lines 180, 203-205: the GP selects only once
  ``epoch > args.warmup``): K clients uniformly at random; every client's loss change is kept
  (line 283), and the GP is trained once, 1000 Adam steps, when the warm-up's last change is
  known (lines 287-289, the published commands' ``--update_mean``);
* **GP rounds**: greedily, K times, the client k* = argmax_k β_k (Σ_i p_i Σ_ik) / √Σ_kk over the
  clients not yet picked, then Σ ← Σ − Σ_{:,k*} Σ_{k*,:} / Σ_{k*k*} (``GPR.Select_Clients``,
  ``GPR.py`` lines 187-223: the posterior covariance once k*'s loss change were known, which
  needs no value, so these rounds read nothing of the clients); p_i = n_i / n (``utils.py``
  line 124), and each pick's β_k is multiplied by β = 0.95 (``Update_Discount``, line 302);
* **GP-update rounds**, every Δt = 10 rounds after the warm-up (lines 291-299): β reset to 1,
  a random selection of K clients, every client's loss change under it kept (the oldest rounds
  past M = 100 dropped, older ones discounted by γ = 0.95 in the likelihood and the mean), and
  the GP trained 100 Adam steps (``--GPR_Epoch``, ``options.py`` line 56).

The constants are those of the authors' published FedCor command for FMNIST (``README.md``
line 30: ``--GPR_interval=10 --group_size=100 --GPR_gamma=0.95 --update_mean --warmup=15
--discount=0.95 --poly_norm=0``); ``options.py`` (lines 46-67) supplies the rest (the Poly
kernel, D = 15, MML, no ε-greedy). ``fedcor:15`` is the published warm-up.

What it reads, per round (``probed_by``): every client's loss at w_t on the rounds that begin or
end a kept loss change — the warm-up's rounds 0..W+1, each GP-update round u and u + 1 — and
nothing on the other rounds. The authors evaluate every client's training loss (their
``federated_test_idx``); fedsel reads the loss of each client's probe batch, charged as a probe
pass of each client it reads.

What fedsel changes: the authors' GP-update round is an *extra* round — after the GP's picks
are committed, K random clients train from w_{t+1} and the aggregate they would give is
evaluated on every client (``train_federated_learning``, ``update.py`` lines 145-178), never
committed; fedsel's loop commits what a rule picks, so a GP-update round here commits its
random selection instead of the GP's picks (the same K trainings and 2N loss evaluations per
update, one round in Δt uniform instead of one extra round of training). The greedy step
breaks ties towards the lower index, as ``torch.max`` does on CPU.

Aggregation as the authors run it: the picks are averaged equally (``federated_main.py`` line
230: ``average_weights(local_weights[idxs_users], omega=None)``; ``utils.py`` lines 134-141
divide the sum by the number of picks). ``fedcor:W@agg=samples`` runs it with sample weights
(an ablation). ``fedcor-lw:W`` is fedsel's earlier rule (:mod:`selection.baselines.fedcor_lw`).
"""

from __future__ import annotations

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.fedcor_gp import LossChangeGP
from selection.baselines.reads import Reads
from selection.errors import SelectionError

INTERVAL = 10  # Δt, rounds between GP updates (README.md line 30, --GPR_interval=10)
HISTORY = 100  # M, rounds a loss-change vector is kept (README.md line 30, --group_size=100)
GAMMA = 0.95  # γ, the likelihood's discount of older rounds (README.md line 30, --GPR_gamma)
DISCOUNT = 0.95  # β: a pick's β_k ← β·β_k (README.md line 30, --discount=0.95)
WARMUP_STEPS = 1000  # Adam steps at the warm-up's end (federated_main.py line 289)
UPDATE_STEPS = 100  # Adam steps per GP update (options.py line 56, --GPR_Epoch)


def greedy_posterior(sigma: np.ndarray, p: np.ndarray, beta: np.ndarray, k: int) -> np.ndarray:
    """FedCor's greedy selection on covariance ``sigma`` (sorted indices; ties to the lower
    index): the sums run over the clients not yet picked, as the authors' ``Select_Clients``.

    Examples:
        Clients 0 and 1 correlated, 2 alone: the first pick is 0 (1.9/3 against 1/3), and once
        it is known, 1 has little left to tell (Σ_11 = 0.19), so the second pick is 2.

        >>> import numpy as np
        >>> sigma = np.array([[1, 0.9, 0], [0.9, 1, 0], [0, 0, 1.0]])
        >>> greedy_posterior(sigma, np.full(3, 1 / 3), np.ones(3), 2).tolist()
        [0, 2]
    """
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
        "FedCor as published: a GP over client embeddings of the clients' loss changes, "
        "greedy posterior loss decrease; rounds 0..W and every 10th after uniform, every "
        "client's loss read then"
    )
    arg = "W"
    arg_example = "15"
    integer = True
    minimum = 1
    order = 85
    reads = Reads.PROBE  # on the rounds of ``probes_at`` only (``probed_by``)
    aggregation = "uniform"

    def __init__(self, spec: str, value: float | None = None) -> None:
        super().__init__(spec, value)
        if value is None or int(value) < 1:
            raise SelectionError(f"{spec}: W={value!r}: at least 1 warm-up round")
        self.warmup = int(value)
        self.round = 0
        self.ids: list[str] | None = None
        self.gp: LossChangeGP | None = None
        self.last: np.ndarray | None = None  # every client's loss at the start of a kept round
        self.beta: np.ndarray | None = None

    def collects(self, t: int) -> bool:
        """Whether round ``t`` is a random round whose every loss change the GP keeps: a
        warm-up round (t ≤ W) or a GP-update round (every Δt-th after)."""
        return t <= self.warmup or t % INTERVAL == 0

    def probes_at(self, t: int) -> bool:
        """Whether round ``t`` reads every client's loss at w_t: it begins a kept loss change
        or ends one (the previous round's)."""
        return self.collects(t) or (t > 0 and self.collects(t - 1))

    def probed_by(self, n: int, picked: np.ndarray) -> np.ndarray:
        """Every client on the rounds of :meth:`probes_at`, none on the others."""
        return self.probed

    def pick(self, problem, rng):
        ids = [str(c) for c in problem.ids]
        if self.ids is None:
            self.ids, self.beta = ids, np.ones(len(ids))
            self.gp = LossChangeGP(len(ids), history=HISTORY, gamma=GAMMA, rng=rng)
        elif ids != self.ids:
            raise SelectionError(f"{self.spec}: the clients changed between rounds")
        t, n, k = self.round, problem.n, problem.k
        self.round += 1
        self.probed = np.arange(n) if self.probes_at(t) else np.empty(0, dtype=np.int64)
        if len(self.probed):
            self._observe(t, self.losses(problem, range(n)))
        if self.collects(t):
            if t > self.warmup:
                self.beta = np.ones(n)  # federated_main.py line 292, Reset_Discount
            return np.sort(rng.choice(n, k, replace=False)).astype(np.int64)
        p = problem.n_samples / problem.n_samples.sum()
        picked = greedy_posterior(self.gp.covariance(), p, self.beta, k)
        self.beta[picked] *= DISCOUNT
        return picked

    def _observe(self, t: int, loss: np.ndarray) -> None:
        """Round t's losses at w_t: they end the previous round's kept change (the GP is then
        trained, at the warm-up's end and on each update) and begin this round's."""
        if self.last is not None:
            self.gp.add(t - 1, loss - self.last)
            if t - 1 == self.warmup:
                self.gp.train(WARMUP_STEPS)
            elif t - 1 > self.warmup:
                self.gp.train(UPDATE_STEPS)
        self.last = loss if self.collects(t) else None
