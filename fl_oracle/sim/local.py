"""Local training of a group of clients at once: FedAvg / FedProx with gamma-inexact stops.

Each client minimizes h_k(w; w_t) = F_k(w) + mu/2 ||w - w_t||^2 (the anchor w_t is a detached
copy; mu = 0 is FedAvg exactly) by SGD on mini-batches drawn from its own seeded stream
(consecutive chunks of fresh permutations of its samples). Clients that share a batch size and
a step budget are trained together: their parameters are stacked ``(M, P)`` and one grouped
forward/backward pass gives every client its own gradient.

gamma-inexact: every ``check_every`` steps a client compares ||grad h_k(w)|| with
gamma ||grad h_k(w_t)|| (both on its probe set) and stops once below; ``gamma = 0`` never stops
early. The achieved ratio is measured at the end for every client.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fl_oracle.sim.model import Arch
from fl_oracle.sim.stats import loss_stacked

__all__ = [
    "LocalResult",
    "local_objective",
    "plan_steps",
    "train_group",
    "train_clients",
    "SampleStream",
]


@dataclass(frozen=True)
class LocalResult:
    """Outcome of local training of ``M`` clients.

    Attributes:
        delta: (M, P) updates w_final - w_t.
        steps: (M,) SGD steps taken.
        gamma_achieved: (M,) ||grad h_k(w_final)|| / ||grad h_k(w_t)|| on the probe set.
    """

    delta: torch.Tensor
    steps: torch.Tensor
    gamma_achieved: torch.Tensor


def plan_steps(n: int, batch_size: int, epochs: float) -> tuple[int, int]:
    """(batch, steps): batch = min(batch_size, n), steps = max(1, ceil(epochs * n / batch))."""
    b = min(batch_size, n)
    return b, max(1, math.ceil(epochs * n / b - 1e-9))


class SampleStream:
    """Mini-batch indices of one client: consecutive chunks of fresh seeded permutations."""

    def __init__(self, n: int, seed: int, device: torch.device) -> None:
        self.n = n
        self.gen = torch.Generator().manual_seed(seed)
        self.buf = torch.empty(0, dtype=torch.int64)
        self.device = device

    def take(self, b: int) -> torch.Tensor:
        """The next ``b`` indices (int64 on the stream's device)."""
        while len(self.buf) < b:
            self.buf = torch.cat([self.buf, torch.randperm(self.n, generator=self.gen)])
        out, self.buf = self.buf[:b], self.buf[b:]
        return out.to(self.device)


def local_objective(
    arch: Arch,
    W: torch.Tensor,
    anchor: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    mu: float,
) -> torch.Tensor:
    """(M,) h_k(w) = mean cross-entropy + mu/2 ||w - anchor||^2 for stacked models.

    Args:
        arch: the architecture.
        W: (M, P) parameters.
        anchor: (P,) the global model w_t (detached here).
        x: (M, N, 3, 32, 32) per-model inputs.
        y: (M, N) labels.
        mu: proximal coefficient.
    """
    h = loss_stacked(arch, W, x, y)
    if mu:
        h = h + 0.5 * mu * ((W - anchor.detach()) ** 2).sum(1)
    return h


def _grad_h(arch, W, anchor, x, y, mu) -> torch.Tensor:
    W = W.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(local_objective(arch, W, anchor, x, y, mu).sum(), W)
    return g


def train_group(
    arch: Arch,
    w_t: torch.Tensor,
    xs: Sequence[torch.Tensor],
    ys: Sequence[torch.Tensor],
    streams: Sequence[SampleStream],
    *,
    batch: int,
    steps: int,
    lr: float,
    mu: float,
    gamma: float,
    probe_x: torch.Tensor,
    probe_y: torch.Tensor,
    g0_norm: torch.Tensor,
    check_every: int,
    on_step: Callable[[], None] | None = None,
) -> LocalResult:
    """SGD on ``M`` clients that share ``batch`` and ``steps``.

    Args:
        arch: the architecture.
        w_t: (P,) global model.
        xs, ys: each client's training images (n_k, 3, 32, 32) and labels (n_k,).
        streams: each client's :class:`SampleStream`.
        batch: mini-batch size of every client.
        steps: step budget of every client.
        lr: SGD step size.
        mu: proximal coefficient.
        gamma: inexactness target (0 disables early stopping).
        probe_x, probe_y: (M, p, 3, 32, 32) and (M, p) probe sets.
        g0_norm: (M,) ||grad F_k(w_t)|| on the probe sets (= ||grad h_k(w_t)||).
        check_every: steps between gamma checks.
        on_step: called after every step (progress).

    Returns:
        :class:`LocalResult`.
    """
    M = len(xs)
    anchor = w_t.detach().clone()
    W = anchor.unsqueeze(0).repeat(M, 1)
    active = torch.ones(M, dtype=torch.bool, device=W.device)
    taken = torch.zeros(M, dtype=torch.int64)
    for s in range(steps):
        idx = [st.take(batch) for st in streams]
        xb = torch.stack([x[i] for x, i in zip(xs, idx, strict=True)])
        yb = torch.stack([y[i] for y, i in zip(ys, idx, strict=True)])
        g = _grad_h(arch, W, anchor, xb, yb, mu)
        W = W - lr * active.unsqueeze(1).to(W.dtype) * g
        taken += active.cpu().to(torch.int64)
        if on_step is not None:
            on_step()
        if gamma > 0 and (s + 1) % check_every == 0 and s + 1 < steps:
            gn = _grad_h(arch, W, anchor, probe_x, probe_y, mu).norm(dim=1)
            active &= ~(gn <= gamma * g0_norm)
            if not active.any():
                break
    gn = _grad_h(arch, W, anchor, probe_x, probe_y, mu).norm(dim=1)
    ratio = torch.where(g0_norm > 0, gn / g0_norm.clamp_min(1e-30), torch.zeros_like(gn))
    return LocalResult((W - anchor).detach(), taken, ratio.detach().cpu())


def train_clients(
    arch: Arch,
    w_t: torch.Tensor,
    clients: Sequence[int],
    *,
    xs: Sequence[torch.Tensor],
    ys: Sequence[torch.Tensor],
    probes: Sequence[torch.Tensor],
    budgets: Sequence[float],
    seeds: Sequence[int],
    batch_size: int,
    lr: float,
    mu: float,
    gamma: float,
    g0_norm: torch.Tensor,
    callback: Callable[[int, int], None] | None = None,
) -> dict[int, tuple[torch.Tensor, int, float]]:
    """Train the given clients, grouping those that share batch size, steps and check interval.

    Args:
        arch: the architecture.
        w_t: (P,) global model.
        clients: indices of the clients to train.
        xs, ys, probes: per-client (all clients) images, labels and probe-set indices.
        budgets: per-client local epoch budgets.
        seeds: per-client mini-batch stream seeds.
        batch_size, lr, mu, gamma: local solver settings.
        g0_norm: (K,) ||grad F_k(w_t)|| on every client's probe set.
        callback: ``callback(done, total)`` in client-steps (progress).

    Returns:
        ``{client: (delta (P,), steps, gamma_achieved)}``. The gamma check runs 4 times per
        local epoch.
    """
    groups: dict[tuple[int, int, int, int], list[int]] = {}
    for i in clients:
        n = len(ys[i])
        b, steps = plan_steps(n, batch_size, budgets[i])
        check = max(1, math.ceil(math.ceil(n / b) / 4))
        groups.setdefault((b, steps, check, len(probes[i])), []).append(i)
    total = sum(len(m) * s for (_, s, _, _), m in groups.items())
    done = 0
    out: dict[int, tuple[torch.Tensor, int, float]] = {}
    for (b, steps, check, _), part in groups.items():

        def tick(m: int = len(part)) -> None:
            nonlocal done
            done += m
            if callback is not None:
                callback(done, total)

        res = train_group(
            arch,
            w_t,
            [xs[i] for i in part],
            [ys[i] for i in part],
            [SampleStream(len(ys[i]), seeds[i], w_t.device) for i in part],
            batch=b,
            steps=steps,
            lr=lr,
            mu=mu,
            gamma=gamma,
            probe_x=torch.stack([xs[i][probes[i]] for i in part]),
            probe_y=torch.stack([ys[i][probes[i]] for i in part]),
            g0_norm=g0_norm[part],
            check_every=check,
            on_step=tick,
        )
        for j, i in enumerate(part):
            out[i] = (res.delta[j], int(res.steps[j]), float(res.gamma_achieved[j]))
    return out
