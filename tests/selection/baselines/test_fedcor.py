"""FedCor as published (Tang et al., CVPR '22; the authors' ``src/GPR.py`` and
``src/federated_main.py``): the GP's likelihood and its gradient by hand, the greedy step on a
hand-made kernel, the round schedule and what each round reads, the same seed giving the same
picks — and fedsel's earlier rule, kept as ``fedcor-lw``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selection.baselines.fedcor import (
    DISCOUNT,
    INTERVAL,
    UPDATE_STEPS,
    WARMUP_STEPS,
    FedCor,
    greedy_posterior,
)
from selection.baselines.fedcor_gp import LossChangeGP, adam_step
from selection.baselines.fedcor_lw import FedCorLW
from selection.errors import SelectionError
from selection.selectors import make_selector

from helpers.cli import run_fedsel
from helpers.rules import rule_problem


def _gp(n, **kw):
    return LossChangeGP(n, history=kw.pop("history", 100), gamma=kw.pop("gamma", 1.0),
                        rng=np.random.default_rng(kw.pop("seed", 0)), **kw)  # fmt: skip


# the Gaussian process ------------------------------------------------------------------------
def test_one_client_likelihood_and_gradient_by_hand():
    """N = 1, D = 1, x = 2, σ_n = 0.01: Σ = 4.0001. One loss change y = 3 about μ = 0 (no mean
    fitted): L = ½ (y²/Σ + ln Σ + ln 2π) and ∂L/∂x = 2x · ½ (1/Σ − y²/Σ²)."""
    gp = _gp(1)
    gp.X = np.array([[2.0]])
    gp.add(0, np.array([3.0]))
    s = 4.0001
    loss, grad = gp.loss_and_grad()
    assert loss == pytest.approx(0.5 * (9 / s + math.log(s) + math.log(2 * math.pi)), rel=1e-12)
    assert grad[0, 0] == pytest.approx(2 * 2 * 0.5 * (1 / s - 9 / s**2), rel=1e-12)


def test_likelihood_is_the_discounted_gaussian_and_the_gradient_its_derivative():
    from scipy.stats import multivariate_normal

    gp = _gp(4, gamma=0.8, seed=3)
    rng = np.random.default_rng(1)
    for e in (0, 1, 4):
        gp.add(e, rng.normal(size=4))
    gp.fit_mean()
    want = -sum(
        0.8 ** (4 - e) * multivariate_normal(gp.mu, gp.covariance()).logpdf(d)
        for e, d in gp.data.items()
    )
    loss, grad = gp.loss_and_grad()
    assert loss == pytest.approx(want, rel=1e-10)
    h, x0 = 1e-6, gp.X.copy()
    for a, b in [(0, 0), (3, 2), (14, 3)]:
        gp.X = x0.copy()
        gp.X[a, b] += h
        up = gp.loss_and_grad()[0]
        gp.X[a, b] -= 2 * h
        down = gp.loss_and_grad()[0]
        assert grad[a, b] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-7)


def test_mean_and_history_as_the_authors_keep_them():
    """μ is the γ-weighted mean of the kept rounds (MLE_Mean); a round e is dropped once
    e + M < t (Update_Training_Data)."""
    gp = _gp(2, gamma=0.5, history=10)
    gp.add(0, np.array([1.0, 0.0]))
    gp.add(10, np.array([4.0, 3.0]))
    w = 0.5**10 + 1  # round 0 counts 0.5^10 beside round 10
    np.testing.assert_allclose(gp.fit_mean(), [(0.5**10 * 1 + 4) / w, 3 / w])
    gp.add(11, np.array([0.0, 0.0]))
    assert sorted(gp.data) == [10, 11]


def test_adam_is_torchs():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x0, grads = rng.normal(size=5), rng.normal(size=(30, 5))
    p = torch.nn.Parameter(torch.tensor(x0))
    opt = torch.optim.Adam([p], lr=1e-2)
    x, m, v = x0.copy(), np.zeros(5), np.zeros(5)
    for step, g in enumerate(grads, start=1):
        p.grad = torch.tensor(g)
        opt.step()
        x, m, v = adam_step(x, g, m, v, step)
    np.testing.assert_allclose(x, p.detach().numpy(), rtol=1e-12)


def test_training_follows_the_authors_torch_gp():
    """The authors' Kernel_GPR with the Poly kernel (Σ = XᵀX + σ_n² I), MML loss, μ refitted,
    torch autograd and torch's Adam from the same X: the same embeddings after 100 steps."""
    torch = pytest.importorskip("torch")
    from torch.distributions.multivariate_normal import MultivariateNormal

    gp = _gp(6, gamma=0.95, seed=2)
    rng = np.random.default_rng(5)
    for e in range(4):
        gp.add(e, rng.normal(-0.1, 0.3, size=6))
    x = torch.nn.Parameter(torch.tensor(gp.X))
    mu = torch.tensor(gp.fit_mean())
    opt = torch.optim.Adam([x], lr=1e-2)
    for _ in range(100):
        opt.zero_grad()
        cov = x.T @ x + 0.01**2 * torch.eye(6, dtype=torch.float64)
        loss = -sum(
            MultivariateNormal(mu, covariance_matrix=cov).log_prob(torch.tensor(d))
            * 0.95 ** (3 - e)
            for e, d in gp.data.items()
        )
        loss.backward()
        opt.step()
    gp.train(100)
    np.testing.assert_allclose(gp.X, x.detach().numpy(), rtol=1e-8, atol=1e-10)


# the greedy step -----------------------------------------------------------------------------
def test_greedy_step_on_a_hand_made_kernel():
    """Embeddings X = [[1, 1, 0], [0, 0, 1]]: Σ = XᵀX + 1e-4 I, clients 0 and 1 identical, 2
    alone; p uniform, β = 1. Scores (Σ_i p_i Σ_ik)/√Σ_kk: client 0 (2.0001/3)/√1.0001 = 0.6667
    (tied with 1: the lower index), 2 only 0.3333. Conditioned on 0, Σ_11 = 1.0001 − 1/1.0001 =
    2.0e-4 and Σ_21 = 0: client 1 scores 2e-4/3/0.0141 = 0.0047 against client 2's 0.3333."""
    gp = _gp(3)
    gp.X = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    sigma = gp.covariance()
    np.testing.assert_allclose(sigma, [[1.0001, 1, 0], [1, 1.0001, 0], [0, 0, 1.0001]])
    assert greedy_posterior(sigma, np.full(3, 1 / 3), np.ones(3), 2).tolist() == [0, 2]
    # a discounted client 0 (β_0 = 0.95²) yields to its twin
    beta = np.array([DISCOUNT**2, 1.0, 1.0])
    assert greedy_posterior(sigma, np.full(3, 1 / 3), beta, 1).tolist() == [1]
    # p weights the sums: a heavy client 2 is worth more than the pair
    assert greedy_posterior(sigma, np.array([0.1, 0.1, 0.8]), np.ones(3), 1).tolist() == [2]


# the rounds ----------------------------------------------------------------------------------
def _losses(t, rng, n=6):
    """Clients 0-2 move together by a common random step, the others barely move."""
    loss = np.linspace(1, 2, n) - 0.01 * t
    loss[:3] += rng.normal(0, 0.3) + rng.normal(0, 0.01, 3)
    loss[3:] += rng.normal(0, 1e-3, n - 3)
    return loss


def test_schedule_what_each_round_reads_and_when_the_gp_trains(monkeypatch):
    """W = 3, Δt = 10: rounds 0-3 warm up (uniform, every loss read), round 4 reads the losses
    that end round 3's change, trains the GP (1000 steps) and picks by it; rounds 5-9 read
    nothing; round 10 is a GP update (uniform, every loss read), round 11 reads its change's
    end, trains 100 steps and picks by the GP; 20 and 21 likewise."""
    assert INTERVAL == 10
    trained: list[tuple[int, int]] = []
    train = LossChangeGP.train

    def spy(self, steps, lr=1e-2):
        trained.append((max(self.data), steps))
        return train(self, steps, lr)

    monkeypatch.setattr(LossChangeGP, "train", spy)
    rule = FedCor("fedcor:3", 3)
    rng, data = np.random.default_rng(0), np.random.default_rng(1)
    read = []
    for t in range(23):
        loss = _losses(t, data)
        probes = rule.probes_at(t)
        problem = rule_problem([10] * 6, 2, loss=loss if probes else None)  # no loss: unread
        picked = rule.pick(problem, rng)
        assert len(set(picked.tolist())) == 2
        assert rule.probed_by(6, picked).tolist() == (list(range(6)) if probes else [])
        if probes:
            read.append(t)
    assert read == [0, 1, 2, 3, 4, 10, 11, 20, 21]
    assert sorted(rule.gp.data) == [0, 1, 2, 3, 10, 20]
    assert trained == [(3, WARMUP_STEPS), (10, UPDATE_STEPS), (20, UPDATE_STEPS)]
    # the loss changes kept are the differences of consecutive reads
    again = np.random.default_rng(1)
    seen = [_losses(t, again) for t in range(5)]
    np.testing.assert_allclose(rule.gp.data[3], seen[4] - seen[3])


def test_gp_rounds_discount_their_picks_and_update_rounds_reset():
    """W = 1: rounds 2-9 pick by the GP, each pick's β_k × 0.95; round 10 (an update) resets."""
    rule = FedCor("fedcor:1", 1)
    rng, data = np.random.default_rng(0), np.random.default_rng(1)
    times = np.zeros(6)
    for t in range(10):
        picked = rule.pick(rule_problem([10] * 6, 2, loss=_losses(t, data)), rng)
        if t >= 2:
            times[picked] += 1
    np.testing.assert_allclose(rule.beta, DISCOUNT**times)
    assert times.sum() == 16
    rule.pick(rule_problem([10] * 6, 2, loss=_losses(10, data)), rng)
    assert (rule.beta == 1).all()


def test_the_gp_picks_from_the_clients_whose_losses_move():
    """Clients 0-2 share large loss changes, 3-5 hardly change: the GP's picks after the
    warm-up come from 0-2 (the others' training promises no loss decrease)."""
    rule = FedCor("fedcor:4", 4)
    rng, data = np.random.default_rng(0), np.random.default_rng(1)
    picks = []
    for t in range(10):
        picked = rule.pick(rule_problem([10] * 6, 2, loss=_losses(t, data)), rng)
        if t > 4:
            picks += picked.tolist()
    assert set(picks) <= {0, 1, 2}


def test_same_seed_same_picks_other_seed_other_picks():
    def run(seed):
        sel, data = make_selector("fedcor:2", seed=seed), np.random.default_rng(7)
        return [tuple(sel.choose(rule_problem([10] * 8, 3, loss=_losses(t, data, 8))))
                for t in range(8)]  # fmt: skip

    assert run(0) == run(0)
    assert run(0) != run(1)


def test_refusals():
    with pytest.raises(SelectionError):
        make_selector("fedcor:0")
    rule = FedCor("fedcor:2", 2)
    with pytest.raises(SelectionError, match="loss"):  # a warm-up round reads every loss
        rule.pick(rule_problem([1, 2, 3], 2), np.random.default_rng(0))
    rule = FedCor("fedcor:2", 2)
    rule.pick(rule_problem([1, 2, 3], 2, loss=[1.0, 1, 1]), np.random.default_rng(0))
    with pytest.raises(SelectionError, match="changed"):
        rule.pick(rule_problem([1, 2, 3, 4], 2, loss=[1.0, 1, 1, 1]), np.random.default_rng(0))


def test_fedsel_methods_lists_both(capsys):
    code, out, _ = run_fedsel(["methods"], capsys)
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  fedcor")}
    assert "fedcor:W" in lines["fedcor"] and "published" in lines["fedcor"]
    assert "fedcor-lw:W" in lines["fedcor-lw"] and "Ledoit-Wolf" in lines["fedcor-lw"]


# fedsel's earlier rule -----------------------------------------------------------------------
def test_fedcor_lw_warms_up_uniformly_then_follows_the_covariance():
    rule = FedCorLW("fedcor-lw:3", 3)
    rng = np.random.default_rng(0)
    base = np.linspace(1, 2, 6)
    for t in range(3):  # rounds 0..2: fewer than 3 loss changes
        assert len(rule.changes) < 3
        picked = rule.pick(rule_problem([10] * 6, 2, loss=base - 0.1 * t), rng)
        assert len(set(picked.tolist())) == 2
    for t in range(3, 8):
        loss = base - 0.1 * t
        loss[:3] += rng.normal(0, 0.3) + rng.normal(0, 0.01, 3)
        loss[3:] = base[3:] + rng.normal(0, 1e-4, 3)
        picked = rule.pick(rule_problem([10] * 6, 2, loss=loss), rng)
    assert len(rule.changes) == 7
    assert set(picked.tolist()) <= {0, 1, 2}
    assert rule.probed_by(6, picked).tolist() == list(range(6))  # every client, every round


def test_fedcor_lw_refusals():
    with pytest.raises(SelectionError):
        make_selector("fedcor-lw:1")
    with pytest.raises(SelectionError, match="loss"):
        FedCorLW("fedcor-lw:2", 2).pick(rule_problem([1, 2, 3], 2), np.random.default_rng(0))
