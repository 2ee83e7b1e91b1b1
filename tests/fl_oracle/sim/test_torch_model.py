"""Any torch module through torch.func: the same numbers as the built-in path and as a plain
per-model loop, and one-line errors for modules that cannot serve."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from fl_oracle.errors import ConfigError
from fl_oracle.sim.config import GENERIC_MODELS, OracleConfig
from fl_oracle.sim.model import forward_stacked, init_params, resolve_model, unflatten
from fl_oracle.sim.stats import probe_stats, probe_stats_vmap
from fl_oracle.sim.torch_model import ZOO

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def _user_models_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    yield
    sys.modules.pop("_user_models", None)


def _tiny_config(tmp_path, **kw):
    from fl_oracle.sim.data.shapes import write_shapes

    root = write_shapes(
        tmp_path / "ds", per_class=10, size=32, classes=("circle", "square", "star", "bar")
    )
    return OracleConfig.for_dataset(
        root, clients_per_domain=2, local_holdout=4, fisher_samples=8, threads=1, **kw
    )


def test_the_named_generic_models_are_the_zoo():
    assert GENERIC_MODELS == tuple(ZOO)


def test_generic_path_equals_the_built_in_path_on_the_same_cnn(tmp_path):
    from fl_oracle.sim.oracle import Oracle

    cfg = _tiny_config(tmp_path)
    a = Oracle(cfg)
    b = Oracle(cfg.replace(model="_user_models:make_cnn"))
    assert b.arch.size == a.arch.size and b.arch.n_classes == 4
    b._w = a._w.clone()  # the same initial model
    for _ in range(2):
        sa, sb = a.round_stats(), b.round_stats()
        num = [c for c in sa.columns if sa[c].dtype.kind == "f"]
        np.testing.assert_allclose(sb[num].to_numpy(), sa[num].to_numpy(), rtol=1e-4, atol=1e-5)
        sel = list(sa["client_id"][:3])
        ra, rb = a.step(sel), b.step(sel)
        assert ra["acc_avg"] == pytest.approx(rb["acc_avg"], abs=1e-9)
        torch.testing.assert_close(b._w, a._w, rtol=1e-4, atol=1e-5)


def test_stacked_logits_and_gradients_equal_a_per_model_loop():
    arch = resolve_model("_user_models:make_tiny", n_classes=5, image_shape=(3, 12, 12))
    gen = torch.Generator().manual_seed(0)
    W = torch.stack([init_params(arch, torch.Generator().manual_seed(s)) for s in range(3)])
    x = torch.randn(3, 6, 3, 12, 12, generator=gen)
    y = torch.randint(0, 5, (3, 6), generator=gen)
    leaves = {k: v.clone().requires_grad_(True) for k, v in unflatten(arch, W).items()}
    z = forward_stacked(arch, leaves, x)
    loss = torch.nn.functional.cross_entropy(z.reshape(18, 5), y.reshape(-1), reduction="sum")
    grads = torch.autograd.grad(loss, list(leaves.values()))
    for m in range(3):
        module = arch.make(0)
        with torch.no_grad():
            for (_, p), flat in zip(
                module.named_parameters(), unflatten(arch, W[m]).values(), strict=True
            ):
                p.copy_(flat)
        out = module(x[m])
        torch.testing.assert_close(z[m], out, rtol=1e-5, atol=1e-6)
        lm = torch.nn.functional.cross_entropy(out, y[m], reduction="sum")
        lm.backward()
        for g, (_, p) in zip(grads, module.named_parameters(), strict=True):
            torch.testing.assert_close(g[m], p.grad, rtol=1e-4, atol=1e-6)


def test_fisher_of_a_generic_model_is_the_per_sample_gradient_norm():
    arch = resolve_model("_user_models:make_tiny", n_classes=3, image_shape=(1, 8, 8))
    w = init_params(arch, torch.Generator().manual_seed(1))
    gen = torch.Generator().manual_seed(2)
    x, y = torch.randn(6, 1, 8, 8, generator=gen), torch.randint(0, 3, (6,), generator=gen)
    seg = torch.tensor([0, 0, 0, 1, 1, 1])
    st = probe_stats(arch, w, x, y, seg, 2)  # a generic model takes the vmap route
    ref = probe_stats_vmap(arch, w, x, y, seg, 2)
    torch.testing.assert_close(st.fisher, ref.fisher)
    module = arch.make(0)
    sq = []
    for n in range(6):
        with torch.no_grad():
            for (_, p), flat in zip(
                module.named_parameters(), unflatten(arch, w).values(), strict=True
            ):
                p.copy_(flat)
        module.zero_grad()
        lp = torch.log_softmax(module(x[n : n + 1]), -1)[0, y[n]]
        lp.backward()
        sq.append(sum(float((p.grad**2).sum()) for p in module.parameters()))
    expect = torch.tensor([np.mean(sq[:3]), np.mean(sq[3:])], dtype=torch.float64)
    torch.testing.assert_close(st.fisher, expect, rtol=1e-4, atol=1e-8)


def test_zoo_models_run_any_size():
    for name in ("resnet10", "fedbn-cnn"):
        arch = resolve_model(name, n_classes=7, image_shape=(1, 16, 16))
        W = init_params(arch, torch.Generator().manual_seed(0)).unsqueeze(0)
        z = forward_stacked(arch, unflatten(arch, W.repeat(2, 1)), torch.randn(3, 1, 16, 16))
        assert z.shape == (2, 3, 7)


def test_the_initial_model_follows_the_seed():
    arch = resolve_model("_user_models:make_tiny", n_classes=3, image_shape=(3, 8, 8))
    a = init_params(arch, torch.Generator().manual_seed(5))
    b = init_params(arch, torch.Generator().manual_seed(5))
    c = init_params(arch, torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("nosuchmodule_xyz:make", "cannot import"),
        ("_user_models:nothing", "has no attribute"),
        ("_user_models:not_a_module", "not a torch.nn.Module"),
        ("_user_models:make_wrong_output", r"expected \(2, 4\) logits"),
        ("_user_models:make_bn1d", "cannot run images"),
        ("_user_models:make_tuple_output", "forward returned a tuple, expected a tensor"),
        ("_user_models:make_dict_output", "forward returned a dict, expected a tensor"),
        ("resnet99", "is unknown"),
    ],
)
def test_a_model_that_cannot_serve_is_refused_in_one_line(spec, match):
    with pytest.raises(ConfigError, match=match) as info:
        resolve_model(spec, n_classes=4, image_shape=(3, 8, 8))
    assert "\n" not in str(info.value)


def test_local_updates_equal_a_plain_per_client_sgd_loop(tmp_path):
    # what a user would write: each client's nn.Module trained alone with torch.optim.SGD on
    # the same mini-batches; the oracle's generic path must give the same updates
    from fl_oracle.sim.local import SampleStream, plan_steps
    from fl_oracle.sim.oracle import Oracle

    cfg = _tiny_config(tmp_path, model="_user_models:make_cnn")
    o = Oracle(cfg)
    o.round_stats()
    fed, arch = o._fed, o.arch
    for i in range(len(fed.client_ids)):
        module = arch.make(0)
        with torch.no_grad():
            for (_, p), v in zip(
                module.named_parameters(), unflatten(arch, o._w).values(), strict=True
            ):
                p.copy_(v)
        opt = torch.optim.SGD(module.parameters(), lr=cfg.lr)
        n = len(fed.ys[i])
        b, steps = plan_steps(n, cfg.batch_size, cfg.budget(fed.client_ids[i]))
        stream = SampleStream(n, o._stream_seed(i), o._w.device)
        for _ in range(steps):
            idx = stream.take(b)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(module(o._xs[i][idx]), fed.ys[i][idx]).backward()
            opt.step()
        w = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
        torch.testing.assert_close(o._updates[i][0], w - o._w, rtol=1e-4, atol=1e-6)
