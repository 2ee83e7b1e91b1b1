"""Local training: mu = 0 is FedAvg's plain SGD; the proximal gradient vanishes at w_t."""

import torch
import torch.nn.functional as F

from fl_oracle.sim.local import SampleStream, plan_steps, train_group
from fl_oracle.sim.model import ARCHS, Arch, forward, init_params, unflatten
from fl_oracle.sim.stats import loss_stacked

ARCH = ARCHS["cnn-small"]


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


def _clients(M=2, n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(n, 3, 32, 32, generator=g) for _ in range(M)]
    ys = [torch.randint(0, 10, (n,), generator=g) for _ in range(M)]
    return xs, ys


def _train(w, xs, ys, *, mu, gamma=0.0, steps=4, batch=5, lr=0.1, check=1):
    streams = [SampleStream(len(y), 100 + i, torch.device("cpu")) for i, y in enumerate(ys)]
    px, py = torch.stack([x[:6] for x in xs]), torch.stack([y[:6] for y in ys])
    g0 = torch.stack([_grad(w, x[:6], y[:6]) for x, y in zip(xs, ys, strict=True)]).norm(dim=1)
    return train_group(
        ARCH,
        w,
        xs,
        ys,
        streams,
        batch=batch,
        steps=steps,
        lr=lr,
        mu=mu,
        gamma=gamma,
        probe_x=px,
        probe_y=py,
        g0_norm=g0,
        check_every=check,
    )


def _grad(w, x, y):
    p = w.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(F.cross_entropy(forward(ARCH, unflatten(ARCH, p), x), y), p)
    return g


def test_mu_zero_equals_plain_sgd():
    w = init_params(ARCH, torch.Generator().manual_seed(0))
    xs, ys = _clients()
    res = _train(w, xs, ys, mu=0.0)
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        p = torch.nn.Parameter(w.clone())
        opt = torch.optim.SGD([p], lr=0.1)
        stream = SampleStream(len(y), 100 + i, torch.device("cpu"))
        for _ in range(4):
            idx = stream.take(5)
            opt.zero_grad()
            F.cross_entropy(forward(ARCH, unflatten(ARCH, p), x[idx]), y[idx]).backward()
            opt.step()
        torch.testing.assert_close(res.delta[i], p.detach() - w, atol=1e-6, rtol=1e-5)
    assert res.steps.tolist() == [4, 4]


def test_proximal_gradient_vanishes_at_anchor_and_is_mu_times_offset():
    w = init_params(ARCH, torch.Generator().manual_seed(0))
    xs, ys = _clients(M=1)
    x, y = xs[0][None], ys[0][None]

    def grad_at(W, mu):
        W = W.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(local_objective(ARCH, W, w, x, y, mu).sum(), W)
        return g

    W0 = w[None]
    torch.testing.assert_close(grad_at(W0, 5.0), grad_at(W0, 0.0))
    W1 = W0 + 0.01 * torch.randn_like(W0)
    torch.testing.assert_close(
        grad_at(W1, 5.0) - grad_at(W1, 0.0), 5.0 * (W1 - W0), atol=1e-5, rtol=1e-4
    )


def test_fedprox_pulls_towards_anchor():
    w = init_params(ARCH, torch.Generator().manual_seed(0))
    xs, ys = _clients()
    free = _train(w, xs, ys, mu=0.0, steps=6)
    prox = _train(w, xs, ys, mu=5.0, steps=6)
    assert (prox.delta.norm(dim=1) < free.delta.norm(dim=1)).all()


def test_gamma_inexact_stops_early_and_reports_ratio():
    w = init_params(ARCH, torch.Generator().manual_seed(0))
    xs, ys = _clients()
    full = _train(w, xs, ys, mu=0.0, steps=8, gamma=0.0)
    loose = _train(w, xs, ys, mu=0.0, steps=8, gamma=10.0)  # met after the first check
    assert full.steps.tolist() == [8, 8]
    assert loose.steps.tolist() == [1, 1]
    assert (loose.gamma_achieved <= 10.0).all() and (full.gamma_achieved > 0).all()


def test_plan_steps():
    assert plan_steps(600, 32, 1.0) == (32, 19)
    assert plan_steps(72, 32, 1.0) == (32, 3)
    assert plan_steps(10, 32, 1.0) == (10, 1)
    assert plan_steps(600, 32, 0.5) == (32, 10)
    assert plan_steps(20, 8, 0.01) == (8, 1)
