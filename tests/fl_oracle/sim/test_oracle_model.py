"""The stacked CNN equals M separate models, on shared and per-model inputs."""

import pytest
import torch

from fl_oracle.sim.model import ARCHS, forward, forward_stacked, init_params, unflatten


@pytest.mark.parametrize("name", list(ARCHS))
def test_stacked_equals_single(name):
    arch = ARCHS[name]
    g = torch.Generator().manual_seed(0)
    W = torch.stack([init_params(arch, g) for _ in range(3)])
    assert W.shape == (3, arch.size)
    x = torch.randn(5, 3, 32, 32, generator=g)
    xs = torch.randn(3, 4, 3, 32, 32, generator=g)
    shared = forward_stacked(arch, unflatten(arch, W), x)
    per = forward_stacked(arch, unflatten(arch, W), xs)
    for m in range(3):
        p = unflatten(arch, W[m])
        torch.testing.assert_close(shared[m], forward(arch, p, x), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(per[m], forward(arch, p, xs[m]), atol=1e-5, rtol=1e-5)


def test_init_is_seeded():
    arch = ARCHS["cnn-small"]
    a = init_params(arch, torch.Generator().manual_seed(1))
    b = init_params(arch, torch.Generator().manual_seed(1))
    c = init_params(arch, torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)
    # conv0 weight bound 1/sqrt(fan_in)
    w = unflatten(arch, a)["conv0.weight"]
    assert w.abs().max() <= 1 / (3 * 9) ** 0.5


def test_pool_paths_agree_with_max_pool2d():
    from fl_oracle.sim.model import _pool2

    x = torch.randn(2, 3, 9, 7)
    ref = torch.nn.functional.max_pool2d(x, 2)
    assert torch.equal(_pool2(x), ref)  # strided-maximum path (no autograd)
    xg = x.clone().requires_grad_(True)
    assert torch.equal(_pool2(xg), ref)  # max_pool2d path (autograd)
