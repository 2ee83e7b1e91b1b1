"""FedCor's Gaussian process over clients (Tang et al., CVPR '22), as the authors' ``src/GPR.py``
builds and trains it, without torch (``selection`` is torch-free: the gradient of the marginal
likelihood is written out and Adam is torch's update rule, a few lines of numpy).

The GP models one round's loss changes of all N clients, ΔL ~ N(μ, Σ), with the covariance of
``Kernel_GPR`` with ``Poly_Kernel(order=1, Normalize=False)`` (``GPR.py`` lines 260-286 and
341-349; the published commands pass ``--poly_norm=0``): every client has a learned embedding,
a column of X (D × N, D = 15, ``options.py`` line 63), and

    Σ = XᵀX + σ_n² I,    σ_n = 0.01 (``GPR.py`` line 22; a fixed tensor, never trained, line 32).

X starts as standard normal entries over √D (``GPR.py`` line 318). Training (``GPR.Train``,
lines 137-174) maximizes the discounted log marginal likelihood of the kept rounds' vectors
(``Log_Marginal_Likelihood``, lines 73-89; ``--train_method`` MML, ``options.py`` line 65),

    L(X) = − Σ_e γ^(t − e) log N(ΔL_e; μ, Σ),

by a fresh Adam each call (line 147; lr 1e-2, ``federated_main.py`` lines 289, 299), with μ the
γ-discounted mean of each client's kept loss changes recomputed at the start of each call
(``MLE_Mean``, lines 117-135; the published commands pass ``--update_mean``). A round e's vector
is dropped once e + M < t (``Update_Training_Data``, lines 43-52).

With r_e = ΔL_e − μ and w_e = γ^(t − e), ∂L/∂Σ = ½ Σ_e w_e (Σ⁻¹ − Σ⁻¹ r_e r_eᵀ Σ⁻¹) =: G and,
Σ being XᵀX plus a constant, ∂L/∂X = 2 X G.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LossChangeGP", "adam_step"]

DIMENSION = 15  # D, the embeddings' dimension (options.py line 63, --dimension)
NOISE = 0.01  # σ_n (GPR.py line 22, init_noise; not trained)
LR = 1e-2  # Adam's learning rate (federated_main.py lines 289, 299: lr=1e-2)
BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults (GPR.py line 147 passes none)
ADAM_EPS = 1e-8  # torch.optim.Adam's default


def adam_step(x, g, m, v, step: int, lr: float = LR):
    """One step of torch.optim.Adam (weight decay 0, no amsgrad) on ``x`` with gradient ``g``;
    ``m``, ``v`` the moment estimates, ``step`` counting from 1. Returns (x, m, v).

    Examples:
        >>> import numpy as np
        >>> x, m, v = adam_step(np.array([1.0]), np.array([2.0]), np.zeros(1), np.zeros(1), 1)
        >>> round(float(x[0]), 6)  # the first step moves every coordinate by lr against g
        0.99
    """
    b1, b2 = BETAS
    m = b1 * m + (1.0 - b1) * g
    v = b2 * v + (1.0 - b2) * g * g
    m_hat = m / (1.0 - b1**step)
    v_hat = v / (1.0 - b2**step)
    return x - lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS), m, v


class LossChangeGP:
    """The GP of N clients' loss changes: embeddings X (D, N), mean μ (N,), kept rounds.

    Args:
        n: clients N.
        history: M, rounds a loss-change vector is kept for (dropped once e + M < t).
        gamma: γ, the discount of older rounds in the likelihood and the mean.
        rng: draws the initial embeddings.
        dimension: D.
        noise: σ_n.

    Examples:
        Two clients whose loss changes always agree and a third whose changes are
        uncorrelated with theirs: after training, the GP's correlations are those.

        >>> import numpy as np
        >>> gp = LossChangeGP(3, history=100, gamma=1.0, rng=np.random.default_rng(0))
        >>> a = [1.0, -1.0, 0.5, -0.5, 1.5, -1.5]
        >>> b = [0.3, 0.3, -0.3, -0.3, 0.0, 0.0]  # Σ a_e b_e = 0
        >>> for e in range(6):
        ...     gp.add(e, np.array([a[e], a[e], b[e]]))
        >>> _ = gp.train(1000)  # Adam steps on the discounted marginal likelihood
        >>> c = gp.covariance()
        >>> r = c / np.sqrt(np.outer(np.diag(c), np.diag(c)))
        >>> bool(r[0, 1] > 0.99), bool(abs(r[0, 2]) < 0.05)
        (True, True)
    """

    def __init__(
        self,
        n: int,
        *,
        history: int,
        gamma: float,
        rng: np.random.Generator,
        dimension: int = DIMENSION,
        noise: float = NOISE,
    ) -> None:
        self.n = int(n)
        self.history = int(history)
        self.gamma = float(gamma)
        self.noise = float(noise)
        self.X = rng.standard_normal((int(dimension), self.n)) / math.sqrt(dimension)
        self.mu = np.zeros(self.n)
        self.data: dict[int, np.ndarray] = {}  # round e -> (N,) every client's loss change

    def add(self, e: int, change: np.ndarray) -> None:
        """Keep round ``e``'s loss changes of every client; forget rounds older than M."""
        change = np.asarray(change, dtype=float)
        if change.shape != (self.n,) or not np.isfinite(change).all():
            raise ValueError(f"round {e}: loss changes need {self.n} finite values")
        self.data[int(e)] = change
        self.data = {r: d for r, d in self.data.items() if r + self.history >= e}

    def covariance(self) -> np.ndarray:
        """Σ = XᵀX + σ_n² I (N, N)."""
        return self.X.T @ self.X + self.noise**2 * np.eye(self.n)

    def _weights(self) -> dict[int, float]:
        now = max(self.data)
        return {e: self.gamma ** (now - e) for e in self.data}

    def fit_mean(self) -> np.ndarray:
        """μ: each client's γ-discounted mean loss change over the kept rounds."""
        w = self._weights()
        self.mu = sum(w[e] * d for e, d in self.data.items()) / sum(w.values())
        return self.mu

    def loss_and_grad(self) -> tuple[float, np.ndarray]:
        """The discounted negative log marginal likelihood (nats) and its gradient in X."""
        sigma = self.covariance()
        chol = np.linalg.cholesky(sigma)
        inv = np.linalg.inv(chol)
        k_inv = inv.T @ inv
        logdet = 2.0 * float(np.log(np.diag(chol)).sum())
        total, w_sum, scatter = 0.0, 0.0, np.zeros((self.n, self.n))
        for e, w in self._weights().items():
            r = self.data[e] - self.mu
            a = k_inv @ r
            total += w * 0.5 * (float(r @ a) + logdet + self.n * math.log(2.0 * math.pi))
            w_sum += w
            scatter += w * np.outer(a, a)
        g_sigma = 0.5 * (w_sum * k_inv - scatter)
        return total, 2.0 * self.X @ g_sigma

    def train(self, steps: int, lr: float = LR) -> float:
        """``steps`` Adam steps on X from fresh moments, μ refitted first; the last loss."""
        if not self.data:
            raise ValueError("no loss changes to train the GP on")
        self.fit_mean()
        m, v = np.zeros_like(self.X), np.zeros_like(self.X)
        loss = math.nan
        for step in range(1, int(steps) + 1):
            loss, g = self.loss_and_grad()
            self.X, m, v = adam_step(self.X, g, m, v, step, lr)
        return loss
