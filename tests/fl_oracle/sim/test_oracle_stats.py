"""Statistics: Fisher trace vs a per-sample loop, JS on hand-computed histograms, B, cosines."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fl_oracle.sim.model import ARCHS, forward, init_params, unflatten
from fl_oracle.sim.stats import (
    b_dissimilarity,
    cosine_to,
    js_divergence,
    probe_stats,
    probe_stats_vmap,
)

ARCH = ARCHS["cnn-small"]


def test_fisher_trace_equals_per_sample_loop():
    g = torch.Generator().manual_seed(0)
    w = init_params(ARCH, g)
    x = torch.randn(7, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (7,), generator=g)
    seg = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    res = probe_stats(ARCH, w, x, y, seg, 2, chunk=3)  # chunks straddle the segments
    sq, grads, losses = [], [], []
    for i in range(7):
        p = w.clone().requires_grad_(True)
        logp = torch.log_softmax(forward(ARCH, unflatten(ARCH, p), x[i : i + 1]), -1)[0, y[i]]
        (gi,) = torch.autograd.grad(logp, p)
        sq.append(float((gi**2).sum()))
        grads.append(-gi)
        losses.append(-float(logp.detach()))
    for k, sl in enumerate([slice(0, 3), slice(3, 7)]):
        assert res.fisher[k].item() == pytest.approx(np.mean(sq[sl]), rel=1e-5)
        assert res.loss[k].item() == pytest.approx(np.mean(losses[sl]), rel=1e-5)
        torch.testing.assert_close(
            res.grad[k], torch.stack(grads[sl]).mean(0), atol=1e-6, rtol=1e-4
        )
    # the mean loss gradient matches autograd of the mean cross-entropy
    p = w.clone().requires_grad_(True)
    (gm,) = torch.autograd.grad(F.cross_entropy(forward(ARCH, unflatten(ARCH, p), x[3:]), y[3:]), p)
    torch.testing.assert_close(res.grad[1], gm, atol=1e-6, rtol=1e-4)


def test_js_divergence_hand_computed():
    assert js_divergence([1, 0], [0, 1]) == pytest.approx(math.log(2))
    assert js_divergence([3, 1], [3, 1]) == pytest.approx(0.0, abs=1e-12)
    # p = (1/2, 1/2), q = (1, 0): m = (3/4, 1/4)
    p, q, m = np.array([0.5, 0.5]), np.array([1.0, 0.0]), np.array([0.75, 0.25])
    kl_pm = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    kl_qm = math.log(1 / 0.75)
    assert js_divergence([5, 5], [2, 0]) == pytest.approx(0.5 * kl_pm + 0.5 * kl_qm)
    assert m.sum() == 1 and p.sum() == q.sum()
    with pytest.raises(ValueError):
        js_divergence([1, -1], [1, 1])


def test_b_dissimilarity_and_cosine():
    g = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    assert b_dissimilarity(g, torch.tensor([1.0, 3.0])) == pytest.approx(1.0)
    g = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # sum p||g||^2 = 1, ||mean||^2 = 1/2
    assert b_dissimilarity(g, torch.tensor([1.0, 1.0])) == pytest.approx(math.sqrt(2.0))
    cos = cosine_to(
        torch.tensor([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0], [0.0, 0.0]]), torch.tensor([2.0, 0.0])
    )
    assert cos.tolist() == [1.0, 0.0, -1.0, 0.0]


@pytest.mark.parametrize("name", ["cnn", "cnn-large"])
def test_fast_probe_stats_equal_torch_func_vmap(name):
    arch = ARCHS[name]
    g = torch.Generator().manual_seed(1)
    w = init_params(arch, g)
    x = torch.randn(10, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (10,), generator=g)
    seg = torch.tensor([2, 2, 0, 0, 0, 1, 1, 1, 1, 2])  # unsorted segments
    fast = probe_stats(arch, w, x, y, seg, 3, chunk=4)
    ref = probe_stats_vmap(arch, w, x, y, seg, 3)
    torch.testing.assert_close(fast.fisher, ref.fisher, rtol=1e-5, atol=0)
    torch.testing.assert_close(fast.loss, ref.loss, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(fast.grad, ref.grad, rtol=1e-4, atol=1e-6)


def test_probe_stats_over_many_clients_sum_each_chunks_own():
    """With more clients than a chunk has samples, a chunk's FC gradients are summed over the
    clients it holds: the result (also for clients without probe samples) is the vmap
    reference's and the all-client product's (chunk >= clients)."""
    arch = ARCHS["cnn"]
    g = torch.Generator().manual_seed(3)
    w = init_params(arch, g)
    x = torch.randn(14, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (14,), generator=g)
    seg = torch.tensor([0, 0, 3, 3, 3, 5, 5, 7, 7, 7, 8, 9, 9, 9])  # 1, 2, 4, 6 have none
    ref = probe_stats_vmap(arch, w, x, y, seg, 10)
    for chunk in (3, 5, 14):
        got = probe_stats(arch, w, x, y, seg, 10, chunk=chunk)
        torch.testing.assert_close(got.fisher, ref.fisher, rtol=1e-5, atol=0)
        torch.testing.assert_close(got.grad, ref.grad, rtol=1e-4, atol=1e-6)
        assert got.grad[[1, 2, 4, 6]].abs().sum() == 0
    full = torch.arange(14) % 4
    whole = probe_stats(arch, w, x, y, full, 4, chunk=14)  # the product over all 4 clients
    parts = probe_stats(arch, w, x, y, full, 4, chunk=3)  # over each chunk's 3
    torch.testing.assert_close(whole.grad, parts.grad, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(whole.fisher, parts.fisher, rtol=1e-5, atol=0)


@pytest.mark.parametrize("name", ["cnn", "cnn-large"])
def test_segment_grads_equal_the_probe_pass(name):
    """The validation gradients' pass (ordinary backward per segment, chunks of its own)
    gives the probe pass's loss and mean gradient; no Fisher trace."""
    from fl_oracle.sim.stats import segment_grads

    arch = ARCHS[name]
    g = torch.Generator().manual_seed(5)
    w = init_params(arch, g)
    x = torch.randn(13, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (13,), generator=g)
    seg = torch.tensor([1, 1, 0, 0, 0, 3, 3, 3, 3, 1, 0, 3, 3])  # unsorted; segment 2 empty
    ref = probe_stats_vmap(arch, w, x, y, seg, 4)
    for chunk in (2, 5, 64):
        got = segment_grads(arch, w, x, y, seg, 4, chunk=chunk)
        torch.testing.assert_close(got.loss, ref.loss, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(got.grad, ref.grad, rtol=1e-4, atol=1e-6)
        assert got.grad[2].abs().sum() == 0 and torch.isnan(got.fisher).all()


@pytest.mark.parametrize(("c", "k", "pad", "size"), [(3, 3, 1, 16), (16, 3, 1, 8), (6, 5, 0, 14)])
def test_patches_are_unfold_in_channels_last_order(c, k, pad, size):
    from fl_oracle.sim.stats import _patches

    a = torch.randn(4, c, size, size).contiguous(memory_format=torch.channels_last)
    ref = F.unfold(a, k, padding=pad)  # (n, c*k*k, L), columns (c, kh, kw)
    got = _patches(a, k, pad)  # (n, L, k*k*c), columns (kh, kw, c)
    n, L = got.shape[:2]
    reordered = got.view(n, L, k, k, c).permute(0, 4, 2, 3, 1).reshape(n, c * k * k, L)
    assert torch.equal(reordered, ref)
    assert torch.equal(_patches(a.contiguous(), k, pad), got)  # any layout
