"""benchmarks/oracle.py: its nn.Module peer computes what the oracle computes, its peak is a
positive rate, and its FLOP accounting adds up (fast: tiny data, one thread)."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from fl_oracle.sim.model import ARCHS, forward, init_params, unflatten
from fl_oracle.sim.oracle import Oracle

from helpers import ROOT
from helpers.oracle import tiny_config, tiny_data


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


bench = _load("_oracle_benchmark", ROOT / "benchmarks" / "oracle.py")


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # the suite runs beside other jobs
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("model", sorted(ARCHS))
def test_peer_module_forward_equals_oracle_forward(model):
    arch = ARCHS[model]
    flat = init_params(arch, torch.Generator().manual_seed(3))
    x = torch.randn(16, 3, 32, 32, generator=torch.Generator().manual_seed(4))
    net = bench.PeerCNN(arch).load_flat(flat)
    assert sum(p.numel() for p in net.parameters()) == arch.size
    torch.testing.assert_close(net.flat(), flat, rtol=0, atol=0)  # same parameter layout
    with torch.no_grad():
        torch.testing.assert_close(
            net(x), forward(arch, unflatten(arch, flat), x), rtol=1e-5, atol=1e-5
        )


def test_gemm_peak_is_a_positive_rate():
    rate, n = bench.gemm_peak(torch.device("cpu"), sizes=(64, 128), reps=2, min_s=0.005)
    assert rate > 0 and n in (64, 128)


@pytest.mark.parametrize("model", sorted(ARCHS))
def test_sample_flops_add_up(model):
    arch = ARCHS[model]
    layers = bench.layer_flops(arch)
    fl = bench.sample_flops(arch)
    assert fl["fwd"] == arch.flops == sum(f for _, f in layers)
    # backward: weight gradients of every layer, input gradients of all but the first
    assert fl["bwd"] == 2 * fl["fwd"] - layers[0][1]
    assert fl["fwd"] < fl["bwd"] < 2 * fl["fwd"]
    assert fl["train"] == fl["fwd"] + fl["bwd"]


@pytest.fixture(scope="module")
def tiny_oracle():
    torch.set_num_threads(1)
    o = Oracle(tiny_config(), data=tiny_data())
    return o


def test_round_flops_consistent_with_the_federation(tiny_oracle):
    o = tiny_oracle
    fl = bench.round_flops(o)
    sf = bench.sample_flops(o.arch)
    fed = o._fed
    # tiny_config: batch 8, one epoch -> ceil(n / 8) steps of min(8, n) samples
    sgd = sum(min(8, int(n)) * -(-int(n) // min(8, int(n))) for n in fed.n_samples)
    probes = sum(len(p) for p in fed.probe)
    assert fl["sgd_samples"] == sgd
    assert fl["peer_local"] == sf["train"] * sgd
    assert fl["local"] == sf["train"] * (sgd + probes)  # + the final probe gradient
    assert fl["fisher"] == fl["peer_fisher"] == sf["train"] * probes
    n_val = sum(len(v[1]) for v in fed.val.values())
    n_local = sum(len(v[1]) for v in fed.local)
    K = len(fed.client_ids)
    assert fl["peer_eval"] == sf["fwd"] * n_val * K
    assert fl["eval"] == sf["fwd"] * (n_val * (K + 1) + n_local)
    assert fl["round"] == fl["local"] + fl["fisher"] + fl["eval"]


def test_per_client_loop_matches_the_oracle(tiny_oracle):
    o = tiny_oracle
    peer = bench.per_client_loop(o)
    stats = o.round_stats()
    agree = bench.agreement(o, stats, peer)
    assert agree["peer_max_rel_dF"] < 1e-4
    assert agree["peer_max_rel_ddelta"] < 1e-4
    assert agree["peer_max_dU_pp"] <= 1.0  # an argmax tie at most
    assert set(peer.seconds) == {"fisher", "local", "eval"}


def test_per_client_loop_with_fedprox_matches_the_oracle():
    o = Oracle(tiny_config(mu=0.5), data=tiny_data())
    peer = bench.per_client_loop(o)
    agree = bench.agreement(o, o.round_stats(), peer)
    assert agree["peer_max_rel_ddelta"] < 1e-4
