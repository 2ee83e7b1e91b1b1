"""The oracle's study-round paths on CUDA (skipped without a GPU): decoded client images kept
on the device, the picks-only gradient norms, a step without global statistics, the probe pass.

Run on a GPU machine: ``PYTHONPATH=. python -m pytest -q tests/fl_oracle/sim/test_cuda_paths.py``.
"""

from __future__ import annotations

import pytest
import torch

from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.oracle import Oracle

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    import os

    before = os.environ.get("FEDSEL_CACHE")
    os.environ["FEDSEL_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield OracleConfig(
        seed=0, data_mode="generated", clients_per_domain=2, val_per_domain=40,
        test_per_domain=40, fisher_samples=8, device="cuda",
    )  # fmt: skip
    if before is None:
        os.environ.pop("FEDSEL_CACHE", None)
    else:
        os.environ["FEDSEL_CACHE"] = before


def test_decoded_clients_stay_on_the_device_and_equal_a_fresh_decode(config):
    o = Oracle(config)
    xs = o._xs
    first = xs[0]
    assert first.device.type == "cuda"
    assert xs[0] is first  # kept: the second access is the same tensor
    assert torch.equal(first, xs.images[0])  # a fresh decode gives the same values


def test_the_picks_gradient_norms_equal_the_full_probe_pass(config):
    o = Oracle(config)
    picks = [1, 4, 6]
    part = o._probe_norms(picks)
    full = o._probe_stats().grad.norm(dim=1)
    torch.testing.assert_close(part[picks], full[picks], rtol=1e-4, atol=1e-6)


def test_a_step_without_global_statistics_commits_the_same_model(config):
    a, b = Oracle(config), Oracle(config)
    ids = list(a.clients["client_id"])[:3]
    ma = a.step(ids)
    mb = b.step(ids, global_stats=False)
    assert "global_loss" in ma and "global_loss" not in mb
    assert {k: v for k, v in ma.items() if k.startswith("acc_")} == {
        k: v for k, v in mb.items() if k.startswith("acc_")
    }
    torch.testing.assert_close(a.params, b.params, rtol=0, atol=0)
    table = b.probe_pass()
    assert len(table) == len(b.clients) and (table["F"] > 0).all()
    stats = b.round_stats(ids, local=False)
    assert "U_local" not in stats and len(stats) == 3
