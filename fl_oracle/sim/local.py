"""Local training of a group of clients at once: FedAvg / FedProx with gamma-inexact stops.

Each client minimizes h_k(w; w_t) = F_k(w) + mu/2 ||w - w_t||^2 (the anchor w_t is a detached
copy; mu = 0 is FedAvg exactly) by SGD on mini-batches drawn from its own seeded stream
(consecutive chunks of fresh permutations of its samples). Clients that share a batch size and
a step budget are trained together: their parameters are stacked ``(M, P)`` and one grouped
forward/backward pass gives every client its own gradient.

gamma-inexact: every ``check_every`` steps a client compares ||grad h_k(w)|| with
gamma ||grad h_k(w_t)|| (both on its probe set) and stops once below; ``gamma = 0`` never stops
early. The achieved ratio is measured at the end for every client.

Per step the Python side is kept to one gather and one grouped forward/backward: the images
are pre-pooled once per group (:func:`~fl_oracle.sim.model.prepool`), every client's batch
indices for all steps are drawn up front from its stream (the same indices, in the same
order, as drawing them step by step), and the parameters are held as one ``(M, *shape)``
tensor per layer, so the backward pass writes each layer's gradient directly instead of
scattering slices of a flat vector into zero-filled copies.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fl_oracle.sim.model import Arch, forward_stacked, prepool, unflatten

#: clients trained, and candidate models evaluated, in one stacked pass at most: memory grows
#: with this, not with the federation (the default federation's 20 clients fit one pass)
MODEL_CHUNK = 32

__all__ = [
    "LocalResult",
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


def _grad_h(
    arch: Arch,
    W: dict[str, torch.Tensor],
    anchor: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    mu: float,
) -> dict[str, torch.Tensor]:
    """Per-layer gradients of sum_k h_k for layer-wise stacked parameters ``(M, *shape)``.

    The same objective as the flat-vector h_k(w) = mean cross-entropy + mu/2 ||w - w_t||^2
    (the test suite's reference form; this one takes it apart per
    layer: cross-entropy plus mu/2 ||w - anchor||^2, so the proximal gradient mu (w - anchor)
    is computed element by element exactly as there)."""
    leaves = {k: v.detach().requires_grad_(True) for k, v in W.items()}
    logits = forward_stacked(arch, leaves, x)
    M, N = y.shape
    h = (
        torch.nn.functional.cross_entropy(
            logits.reshape(M * N, -1), y.reshape(-1), reduction="none"
        )
        .view(M, N)
        .mean(1)
    )
    if mu:
        h = h + 0.5 * mu * sum(((leaves[k] - anchor[k]) ** 2).flatten(1).sum(1) for k in leaves)
    grads = torch.autograd.grad(h.sum(), list(leaves.values()))
    return dict(zip(leaves, grads, strict=True))


def _norm(g: dict[str, torch.Tensor]) -> torch.Tensor:
    """(M,) Euclidean norms of the flat per-model vectors of layer-wise stacked tensors."""
    return torch.cat([v.flatten(1) for v in g.values()], 1).norm(dim=1)


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
    dev = w_t.device
    anchor = unflatten(arch, w_t.detach().clone().unsqueeze(0))  # (1, *shape) per layer
    W = {k: v.repeat(M, *([1] * (v.dim() - 1))) for k, v in anchor.items()}
    # all clients' images in one tensor; batch indices of every step as offsets into it
    pool_x = prepool(arch, torch.cat(list(xs)))
    pool_y = torch.cat(list(ys))
    offsets = torch.tensor([0] + [len(y) for y in ys][:-1], device=dev).cumsum(0)
    index = torch.stack([st.take(batch * steps).view(steps, batch) for st in streams], 1)
    index = index + offsets.view(1, M, 1)  # (steps, M, batch)
    probe_x = prepool(arch, probe_x)
    active = torch.ones(M, dtype=torch.bool, device=dev)
    taken = torch.zeros(M, dtype=torch.int64, device=dev)
    for s in range(steps):
        g = _grad_h(arch, W, anchor, pool_x[index[s]], pool_y[index[s]], mu)
        rate = lr * active.to(w_t.dtype)
        W = {k: v - rate.view(M, *([1] * (v.dim() - 1))) * g[k] for k, v in W.items()}
        taken += active.to(torch.int64)
        if on_step is not None:
            on_step()
        if gamma > 0 and (s + 1) % check_every == 0 and s + 1 < steps:
            gn = _norm(_grad_h(arch, W, anchor, probe_x, probe_y, mu))
            active &= ~(gn <= gamma * g0_norm)
            if not active.any():
                break
    gn = _norm(_grad_h(arch, W, anchor, probe_x, probe_y, mu))
    ratio = torch.where(g0_norm > 0, gn / g0_norm.clamp_min(1e-30), torch.zeros_like(gn))
    delta = torch.cat([(W[k] - anchor[k]).flatten(1) for k in W], 1)
    return LocalResult(delta.detach(), taken.cpu(), ratio.detach().cpu())


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
    # a large generic model: fewer at once; any model: at most MODEL_CHUNK (memory)
    limit = min(getattr(arch, "group_limit", None) or MODEL_CHUNK, MODEL_CHUNK)
    if any(len(part) > limit for part in groups.values()):
        groups = {
            (*key, j): part[j : j + limit]
            for key, part in groups.items()
            for j in range(0, len(part), limit)
        }
    total = sum(len(m) * key[1] for key, m in groups.items())
    done = 0
    out: dict[int, tuple[torch.Tensor, int, float]] = {}
    for (b, steps, check, *_), part in groups.items():

        def tick(m: int = len(part)) -> None:
            nonlocal done
            done += m
            if callback is not None:
                callback(done, total)

        x_part = [xs[i] for i in part]  # decoded once (compact client images)
        res = train_group(
            arch,
            w_t,
            x_part,
            [ys[i] for i in part],
            [SampleStream(len(ys[i]), seeds[i], w_t.device) for i in part],
            batch=b,
            steps=steps,
            lr=lr,
            mu=mu,
            gamma=gamma,
            probe_x=torch.stack([x[probes[i]] for x, i in zip(x_part, part, strict=True)]),
            probe_y=torch.stack([ys[i][probes[i]] for i in part]),
            g0_norm=g0_norm[part],
            check_every=check,
            on_step=tick,
        )
        for j, i in enumerate(part):
            out[i] = (res.delta[j], int(res.steps[j]), float(res.gamma_achieved[j]))
    return out
