"""The oracle on CUDA: one round of statistics on tiny data matches the CPU run of the same
configuration (loosely: cuDNN convolutions may run in TF32) and is finite. Skipped without a GPU."""

from pathlib import Path

import numpy as np
import pytest
import torch

from fl_oracle.sim.oracle import Oracle

from helpers.oracle import tiny_config, tiny_data

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _round(device: str):
    o = Oracle(tiny_config(device=device), data=tiny_data())
    stats = o.round_stats()
    after = o.step(list(o.clients["client_id"]))
    return o, stats, after


def test_cuda_round_matches_cpu():
    oc, gpu, gpu_after = _round("cuda")
    assert oc.device.type == "cuda" and oc.params.device.type == "cuda"
    _, cpu, cpu_after = _round("cpu")
    assert list(gpu["client_id"]) == list(cpu["client_id"])
    num = gpu.select_dtypes("number").columns
    assert np.isfinite(gpu[num].to_numpy(dtype=float)).all()
    assert (gpu["F"] > 0).all()
    np.testing.assert_array_equal(gpu["steps"], cpu["steps"])
    np.testing.assert_array_equal(gpu["n_samples"], cpu["n_samples"])
    np.testing.assert_allclose(gpu["B"], cpu["B"], rtol=1e-12)
    # statistics at w_t (same weights, same data): float (and TF32 convolution) rounding only
    np.testing.assert_allclose(gpu["F"], cpu["F"], rtol=5e-2)
    np.testing.assert_allclose(gpu["loss"], cpu["loss"], rtol=1e-2)
    # after local training: a few validation samples may flip their argmax
    u_cols = [c for c in gpu.columns if c == "U" or c.startswith("U_") or c == "dU"]
    np.testing.assert_allclose(gpu[u_cols].to_numpy(float), cpu[u_cols].to_numpy(float), atol=5.0)
    np.testing.assert_allclose(gpu["cos_g"], cpu["cos_g"], atol=2e-2)
    np.testing.assert_allclose(gpu["gamma_achieved"], cpu["gamma_achieved"], rtol=5e-2)
    # the committed round: test accuracy and global statistics of w_{t+1}
    assert gpu_after["round"] == cpu_after["round"] == 1
    for k in ("acc_avg", "acc_pooled", "acc_worst"):
        assert np.isfinite(gpu_after[k])
        assert abs(gpu_after[k] - cpu_after[k]) <= 5.0
    np.testing.assert_allclose(gpu_after["global_loss"], cpu_after["global_loss"], rtol=1e-2)
    np.testing.assert_allclose(
        gpu_after["B_dissimilarity"], cpu_after["B_dissimilarity"], rtol=5e-2
    )


def test_a_generic_model_on_cuda_takes_the_vmap_path_and_matches_cpu(monkeypatch):
    # a module given as module:factory: on CUDA the clients train through torch.func.vmap and
    # F comes from vmap(grad); on CPU one after another; the same numbers up to rounding
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    runs = {}
    for device in ("cuda", "cpu"):
        cfg = tiny_config(device=device).replace(model="_user_models:make_tiny")
        o = Oracle(cfg, data=tiny_data())
        runs[device] = (o, o.round_stats())
    (og, gpu), (_, cpu) = runs["cuda"], runs["cpu"]
    assert og.params.device.type == "cuda"
    np.testing.assert_allclose(gpu["F"], cpu["F"], rtol=5e-2)
    np.testing.assert_allclose(gpu["loss"], cpu["loss"], rtol=1e-2)
    np.testing.assert_allclose(gpu["cos_g"], cpu["cos_g"], atol=2e-2)
