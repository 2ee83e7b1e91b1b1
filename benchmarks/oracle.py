"""Benchmark of the FL oracle: a round of client statistics vs a GEMM peak and a per-client loop.

Why one script past 450 lines: a benchmark is one run writing one table, and its three parts
(the peak, fedsel's round, the per-client peer) must run in one process on the same model,
data and thread count for their ratios to mean anything; :func:`sample_flops` is imported by
the study-round benchmark.

One round of full client statistics (20 clients), measured against a roofline and against the
per-client loop a user would write.

For each model (and, on CPU, each torch thread count), on the default Digits-4 federation
(generated stand-ins), in one process:

1. **Peak.** The best GFLOP/s of dense float32 square ``torch.mm`` over several sizes
   (:data:`GEMM_SIZES`; on CUDA :data:`GEMM_SIZES_CUDA`), a few repetitions each, at the thread
   count of the configuration, measured before and after the rounds; the larger is the peak.
2. **fedsel.** One warm-up round, then ``--rounds`` measured rounds of ``round_stats()`` (local
   training of all clients, evaluation of the candidate models w_t + Δ_i) plus the Fisher/probe
   pass of the model (timed on its own: the oracle runs it inside ``step()`` for the next round)
   and ``step(all)``. Each stage is reported in seconds, in GFLOP/s and in % of the peak.
3. **The per-client loop peer.** What a user writes, e.g. inside Flower: a ``torch.nn.Module``
   CNN of the same architecture loaded with the same w_t, and for one client after another the
   Fisher trace at w_t from per-sample gradients (``torch.func.functional_call`` +
   ``vmap(grad(...))`` over the probe set), ``torch.optim.SGD`` over the same mini-batches as the
   oracle (FedProx's proximal term when mu > 0), and the candidate model evaluated on every
   domain's validation set with ``model.eval()`` + ``torch.no_grad()``. The peer runs at the
   same round as one more ``round_stats()`` of the oracle, and the two must agree (U, F, Δ).

FLOPs are useful convolution/matmul FLOPs (:func:`sample_flops`): a forward pass is
``arch.flops`` per sample; a training sample (forward + backward) adds the weight gradients of
every layer (1x its forward) and the input gradients of every layer but the first (the input
images need none), i.e. ``3 x fwd - first layer``.

Writes ``<out>/oracle.csv`` and ``<out>/oracle.md`` (default ``results/benchmarks``)::

    .venv/bin/python benchmarks/oracle.py [--rounds 3] [--models cnn,cnn-small] [--threads 1,2]
        [--device cpu|cuda|auto] [--wait-idle SECONDS] [--out DIR]

Run it on a quiet machine: the md records the load average before and after.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import torch
import torch.nn.functional as F
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from torch import nn
from torch.func import functional_call, grad, vmap

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fl_oracle.errors import OracleError
from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.loading import load_federation_data
from fl_oracle.sim.local import SampleStream, plan_steps
from fl_oracle.sim.model import IMAGE_SHAPE, N_CLASSES, Arch, unflatten
from fl_oracle.sim.oracle import Oracle
from fl_oracle.sim.runtime import resolve_device
from selection.atomic import write_table_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "results" / "benchmarks"
GEMM_SIZES = (256, 512, 1024, 2048, 3072)
GEMM_SIZES_CUDA = (1024, 2048, 4096, 8192)
IDLE_LOAD = 0.5  # 1-minute load average above which the machine counts as busy
TARGET_PCT_PEAK = 30.0
TARGET_SPEEDUP = 5.0


# ---------------------------------------------------------------------------------- timing
def sync(device: torch.device) -> None:
    """Wait for queued kernels (CUDA launches are asynchronous); a no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def resolve(device: str) -> torch.device:
    """The oracle's own device choice (``auto`` -> cuda when available); a clear exit if not."""
    try:
        return resolve_device(device)
    except OracleError as exc:
        raise SystemExit(f"--device {device}: {exc}") from None


def gemm_peak(
    device: torch.device, sizes: tuple[int, ...] = GEMM_SIZES, reps: int = 3, min_s: float = 0.05
) -> tuple[float, int]:
    """(best GFLOP/s, size at which it was reached) of dense float32 square ``torch.mm``.

    Each size gets one warm-up call, then ``reps`` timed measurements of enough back-to-back
    calls to last about ``min_s`` seconds; the best measurement over all sizes counts. Runs at
    the current torch thread count (CPU) or on the current TF32 setting (CUDA).
    """
    best, at = 0.0, 0
    for n in sizes:
        a = torch.randn(n, n, device=device)
        b = torch.randn(n, n, device=device)
        c = torch.empty(n, n, device=device)
        sync(device)
        t = time.perf_counter()
        torch.mm(a, b, out=c)
        sync(device)
        inner = max(1, math.ceil(min_s / max(time.perf_counter() - t, 1e-6)))
        for _ in range(reps):
            sync(device)
            t = time.perf_counter()
            for _ in range(inner):
                torch.mm(a, b, out=c)
            sync(device)
            rate = 2 * n**3 * inner / (time.perf_counter() - t) / 1e9
            if rate > best:
                best, at = rate, n
        del a, b, c
    return best, at


# ---------------------------------------------------------------------------------- FLOPs
def layer_flops(arch: Arch) -> list[tuple[str, int]]:
    """Forward FLOPs (2 x multiply-adds) per sample of each parameterized layer, in order."""
    c, h, w = IMAGE_SHAPE
    h, w = h // arch.pre_pool, w // arch.pre_pool
    out = []
    for i, (cout, k, pad) in enumerate(arch.convs):
        ho, wo = h + 2 * pad - k + 1, w + 2 * pad - k + 1
        out.append((f"conv{i}", 2 * ho * wo * cout * c * k * k))
        c, h, w = cout, ho // 2, wo // 2
    out.append(("fc0", 2 * c * h * w * arch.hidden))
    out.append(("fc1", 2 * arch.hidden * N_CLASSES))
    return out


def sample_flops(arch: Arch) -> dict[str, int]:
    """Useful FLOPs per sample: ``fwd`` (= ``arch.flops``), ``bwd`` and ``train`` = fwd + bwd.

    The backward pass of a layer computes its weight gradient (as many FLOPs as its forward)
    and its input gradient (as many again), except the first layer, whose input (the images)
    needs no gradient: bwd = 2 x fwd - first layer. Pooling, ReLU, softmax, bias and SGD
    updates are left out (a few % at most).
    """
    layers = layer_flops(arch)
    fwd = sum(f for _, f in layers)
    if fwd != arch.flops:
        raise AssertionError(f"layer FLOPs {fwd} != arch.flops {arch.flops}")
    bwd = 2 * fwd - layers[0][1]
    return {"fwd": fwd, "bwd": bwd, "train": fwd + bwd}


def round_flops(o: Oracle) -> dict[str, float]:
    """Useful FLOPs of one fedsel round, by stage, and the per-client loop's.

    * ``local``: every client's SGD steps (batch x steps training samples) plus the final
      gradient of h_k on its probe set (``gamma_achieved``), plus the gamma checks when
      ``gamma > 0`` (as planned; clients that stop early still ride along in their group).
    * ``fisher``: one training pass over all probe samples (per-sample gradients).
    * ``eval``: forward passes of the K candidate models and of w_t on the pooled validation
      set, and of each candidate on its client's local hold-out.
    * ``peer_*``: the per-client loop computes SGD steps, per-sample probe gradients and the K
      candidates on the validation set only.
    """
    fl = sample_flops(o.arch)
    cfg, fed = o.config, o._fed
    sgd = probe_train = 0
    for i, cid in enumerate(fed.client_ids):
        n = int(fed.n_samples[i])
        b, steps = plan_steps(n, cfg.batch_size, cfg.budget(cid))
        checks = 1
        if cfg.gamma > 0:
            every = max(1, math.ceil(math.ceil(n / b) / 4))
            checks += sum(1 for s in range(steps) if (s + 1) % every == 0 and s + 1 < steps)
        sgd += b * steps
        probe_train += checks * len(fed.probe[i])
    n_probe = sum(len(p) for p in fed.probe)
    n_val = sum(len(v[1]) for v in fed.val.values())
    n_local = sum(len(v[1]) for v in fed.local) if fed.local else 0
    K = len(fed.client_ids)
    out = {
        "local": float(fl["train"] * (sgd + probe_train)),
        "fisher": float(fl["train"] * n_probe),
        "eval": float(fl["fwd"] * (n_val * (K + 1) + n_local)),
        "peer_local": float(fl["train"] * sgd),
        "peer_fisher": float(fl["train"] * n_probe),
        "peer_eval": float(fl["fwd"] * n_val * K),
        "sgd_samples": float(sgd),
    }
    out["round"] = out["local"] + out["fisher"] + out["eval"]
    out["peer"] = out["peer_local"] + out["peer_fisher"] + out["peer_eval"]
    return out


# ---------------------------------------------------------------------------------- the peer
class PeerCNN(nn.Module):
    """The architecture ``arch`` as a plain ``torch.nn.Module``, as a user would write it."""

    def __init__(self, arch: Arch) -> None:
        super().__init__()
        self.arch = arch
        self.pre = nn.AvgPool2d(arch.pre_pool) if arch.pre_pool > 1 else nn.Identity()
        blocks: list[nn.Module] = []
        cin = IMAGE_SHAPE[0]
        for cout, k, pad in arch.convs:
            blocks += [nn.Conv2d(cin, cout, k, padding=pad), nn.ReLU(), nn.MaxPool2d(2)]
            cin = cout
        self.features = nn.Sequential(*blocks)
        self.fc0 = nn.Linear(math.prod(arch.feature_shape), arch.hidden)
        self.fc1 = nn.Linear(arch.hidden, N_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(self.pre(x)).flatten(1)
        return self.fc1(torch.relu(self.fc0(x)))

    def module_name(self, name: str) -> str:
        """The module's parameter name of an oracle parameter name (``conv1.weight``...)."""
        layer, kind = name.split(".")
        if layer.startswith("conv"):
            return f"features.{3 * int(layer[4:])}.{kind}"
        return name

    @torch.no_grad()
    def load_flat(self, flat: torch.Tensor) -> PeerCNN:
        """Copy the oracle's flat parameter vector (P,) into the module's parameters."""
        own = dict(self.named_parameters())
        for name, value in unflatten(self.arch, flat).items():
            own[self.module_name(name)].copy_(value)
        return self

    def flat(self) -> torch.Tensor:
        """The module's parameters as the oracle's flat vector (P,)."""
        own = dict(self.named_parameters())
        return torch.cat(
            [own[self.module_name(name)].detach().reshape(-1) for name, _ in self.arch.shapes]
        )


class PeerResult(NamedTuple):
    """What the per-client loop computed, and its seconds by stage (synchronized)."""

    fisher: list[float]
    U: list[float]
    delta: list[torch.Tensor]
    seconds: dict[str, float]


def per_client_loop(o: Oracle, clients: list[int] | None = None) -> PeerResult:
    """Fisher trace at w_t, local training and candidate evaluation, one client after another.

    Uses the oracle's data, w_t, mini-batch streams (so the updates must match the oracle's)
    and settings; everything else is stock PyTorch.
    """
    fed, cfg, dev = o._fed, o.config, o.device
    w_t = o.params
    mu = float(o.mu)
    net = PeerCNN(o.arch).to(dev)
    secs = {"fisher": 0.0, "local": 0.0, "eval": 0.0}
    res = PeerResult([], [], [], secs)

    def loss_one(params, x, y):
        logits = functional_call(net, params, (x.unsqueeze(0),))
        return F.cross_entropy(logits, y.unsqueeze(0))

    per_sample_grads = vmap(grad(loss_one), in_dims=(None, 0, 0))
    for i in range(len(fed.client_ids)) if clients is None else clients:
        cid = fed.client_ids[i]
        net.load_flat(w_t)
        # Fisher trace at w_t: mean over the probe set of the squared per-sample gradient norm
        sync(dev)
        t = time.perf_counter()
        px, py = fed.xs[i][fed.probe[i]], fed.ys[i][fed.probe[i]]
        params = {k: v.detach() for k, v in net.named_parameters()}
        g = per_sample_grads(params, px, py)
        sq = sum(v.pow(2).flatten(1).sum(1) for v in g.values())
        res.fisher.append(float(sq.mean()))
        t1 = time.perf_counter()
        secs["fisher"] += t1 - t
        # local training: SGD (+ the FedProx proximal term) over the client's mini-batches
        net.train()
        anchor = [p.detach().clone() for p in net.parameters()]
        opt = torch.optim.SGD(net.parameters(), lr=cfg.lr)
        n = int(fed.n_samples[i])
        b, steps = plan_steps(n, cfg.batch_size, cfg.budget(cid))
        stream = SampleStream(n, o._stream_seed(i), dev)
        for _ in range(steps):
            idx = stream.take(b)
            loss = F.cross_entropy(net(fed.xs[i][idx]), fed.ys[i][idx])
            if mu > 0:
                prox = sum(
                    ((p - a) ** 2).sum() for p, a in zip(net.parameters(), anchor, strict=True)
                )
                loss = loss + 0.5 * mu * prox
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sync(dev)
        t2 = time.perf_counter()
        secs["local"] += t2 - t1
        # the candidate w_t + Δ_i on every domain's validation set
        net.eval()
        hits = total = 0
        with torch.no_grad():
            for x, y in fed.val.values():
                hits += int((net(x).argmax(1) == y).sum())
                total += len(y)
        res.U.append(100.0 * hits / total)
        secs["eval"] += time.perf_counter() - t2
        res.delta.append(net.flat() - w_t)
    return res


def agreement(o: Oracle, stats: pd.DataFrame, peer: PeerResult) -> dict[str, float]:
    """How far the peer's U (points), F and Δ (relative) are from the oracle's of one round."""
    F_o = torch.tensor(stats["F"].tolist(), dtype=torch.float64)
    F_p = torch.tensor(peer.fisher, dtype=torch.float64)
    U_o = torch.tensor(stats["U"].tolist(), dtype=torch.float64)
    rel = [
        float((d.cpu() - o._updates[i][0].cpu()).norm() / o._updates[i][0].cpu().norm())
        for i, d in enumerate(peer.delta)
    ]
    return {
        "peer_max_dU_pp": float((torch.tensor(peer.U, dtype=torch.float64) - U_o).abs().max()),
        "peer_max_rel_dF": float(((F_p - F_o).abs() / F_o).max()),
        "peer_max_rel_ddelta": max(rel),
    }


# ---------------------------------------------------------------------------------- a config
def probe_pass_seconds(o: Oracle) -> float:
    """Seconds of the oracle's Fisher/probe pass at the current w (recomputed, synchronized)."""
    o._probe = None
    sync(o.device)
    t = time.perf_counter()
    o._probe_stats()
    sync(o.device)
    return time.perf_counter() - t


def bench(
    model: str,
    threads: int | None,
    rounds: int,
    data: dict,
    device: torch.device,
    advance=lambda what: None,
    gemm_sizes: tuple[int, ...] | None = None,
) -> tuple[dict, dict]:
    """One configuration: peak, fedsel rounds, the per-client loop, peak again. Returns the
    CSV row and the rounds' mean timings."""
    if device.type == "cpu" and threads:
        torch.set_num_threads(threads)
    sizes = gemm_sizes or (GEMM_SIZES_CUDA if device.type == "cuda" else GEMM_SIZES)
    load = os.getloadavg()[0]
    advance("peak before")
    peak0, at0 = gemm_peak(device, sizes)
    o = Oracle(OracleConfig(data_mode="generated", model=model, device=device.type), data=data)
    K = len(o.clients)
    advance("warm-up round")
    o.round_stats()
    o.step(list(o.clients["client_id"]))
    per_client_loop(o, clients=[0])  # warm-up of the peer (first calls of vmap, SGD, ...)
    rows = []
    for r in range(rounds):
        advance(f"fedsel round {r + 1}/{rounds}")
        o.timings = dict.fromkeys(o.timings, 0.0)
        sync(device)
        t = time.perf_counter()
        o.round_stats()
        sync(device)
        t_stats = time.perf_counter() - t
        phases = dict(o.timings)
        t = time.perf_counter()
        o.step(list(o.clients["client_id"]))
        sync(device)
        t_step = time.perf_counter() - t
        # the probe pass of w_{t+1} ran inside step() for the next round; timed on its own here
        fisher = probe_pass_seconds(o)
        rows.append(
            {
                "round": t_stats + fisher,
                "with_step": t_stats + t_step,
                "local": phases["local"],
                "eval": phases["eval"],
                "fisher": fisher,
                "test": o.timings["test"] - phases["test"],
            }
        )
    advance("per-client loop")
    peer = per_client_loop(o)
    stats = o.round_stats()  # the same round, for the agreement check
    agree = agreement(o, stats, peer)
    advance("peak after")
    peak1, at1 = gemm_peak(device, sizes)
    tf32 = {}
    if device.type == "cuda":  # for reference: the rate with TF32 matmuls (not the peak used)
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            tf32["peak_tf32_gflops"] = round(gemm_peak(device, sizes[-1:])[0], 1)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
    r = pd.DataFrame(rows).mean()
    fl = round_flops(o)
    sf = sample_flops(o.arch)
    peak = max(peak0, peak1)
    loop_s = sum(peer.seconds.values())

    def gf(flops: float, s: float) -> float:
        return flops / s / 1e9

    def pct(g: float) -> float:
        return round(100 * g / peak, 1)

    g = {
        "local": gf(fl["local"], r["local"]),
        "fisher": gf(fl["fisher"], r["fisher"]),
        "eval": gf(fl["eval"], r["eval"]),
        "round": gf(fl["round"], r["round"]),
        "loop": gf(fl["peer"], loop_s),
    }
    row = {
        "model": model,
        "device": device.type,
        "threads": threads if device.type == "cpu" else torch.get_num_threads(),
        "clients": K,
        "params": o.arch.size,
        "fwd_mflop_per_sample": round(sf["fwd"] / 1e6, 4),
        "train_mflop_per_sample": round(sf["train"] / 1e6, 4),
        "round_gflop": round(fl["round"] / 1e9, 2),
        "load_1min": round(load, 2),
        "peak_before_gflops": round(peak0, 1),
        "peak_after_gflops": round(peak1, 1),
        "peak_gflops": round(peak, 1),
        "peak_at_n": at0 if peak0 >= peak1 else at1,
        **tf32,
        "local_s": round(r["local"], 3),
        "fisher_s": round(r["fisher"], 3),
        "eval_s": round(r["eval"], 3),
        "other_s": round(r["round"] - r["local"] - r["fisher"] - r["eval"], 3),
        "round_s": round(r["round"], 3),
        "round_with_step_s": round(r["with_step"], 3),
        "test_eval_s": round(r["test"], 3),
        "train_samples_per_s": round(fl["sgd_samples"] / r["local"], 1),
        **{f"gflops_{k}": round(v, 2) for k, v in g.items() if k != "loop"},
        **{f"pct_peak_{k}": pct(v) for k, v in g.items() if k != "loop"},
        "per_client_loop_s": round(loop_s, 3),
        "loop_local_s": round(peer.seconds["local"], 3),
        "loop_fisher_s": round(peer.seconds["fisher"], 3),
        "loop_eval_s": round(peer.seconds["eval"], 3),
        "gflops_per_client_loop": round(g["loop"], 2),
        "pct_peak_per_client_loop": pct(g["loop"]),
        "speedup_vs_per_client_loop": round(loop_s / r["round"], 2),
        **{k: float(f"{v:.3g}") for k, v in agree.items()},
        "acc_avg_after": round(o.test_accuracy()["acc_avg"], 1),
    }
    return row, dict(r)


# ---------------------------------------------------------------------------------- report
def wait_idle(limit_s: float, poll_s: float = 5.0) -> float:
    """Wait up to ``limit_s`` seconds for the 1-minute load to fall to :data:`IDLE_LOAD`;
    returns the seconds waited."""
    t0 = time.monotonic()
    while os.getloadavg()[0] > IDLE_LOAD and time.monotonic() - t0 < limit_s:
        print(f"waiting for the machine to go idle: load {os.getloadavg()[0]:.2f}", flush=True)
        time.sleep(poll_s)
    return time.monotonic() - t0


def machine_facts(device: torch.device) -> str:
    """One line on the hardware and the software that ran the benchmark."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    n_aff = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = [
        f"{cpu} ({platform.machine()}), {os.cpu_count()} logical CPUs ({n_aff} usable)",
        f"Python {platform.python_version()}, torch {torch.__version__}",
        f"MKL {'yes' if torch.backends.mkl.is_available() else 'no'}, "
        f"oneDNN {'yes' if torch.backends.mkldnn.is_available() else 'no'}",
    ]
    if device.type == "cuda":
        parts.append(
            f"GPU {torch.cuda.get_device_name(device)}, CUDA {torch.version.cuda}, "
            f"TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, "
            f"TF32 cuDNN conv {torch.backends.cudnn.allow_tf32}"
        )
    return "; ".join(parts)


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table of a DataFrame (no tabulate dependency)."""
    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def targets(df: pd.DataFrame) -> pd.DataFrame:
    """The issue's targets per configuration, with the measured value and whether it is met."""
    out = []
    for _, r in df.iterrows():
        conf = f"{r['model']}, {r['device']}, {r['threads']} thread(s)"
        out.append(
            {
                "configuration": conf,
                "target": f"round >= {TARGET_PCT_PEAK:g} % of measured peak",
                "measured": f"{r['pct_peak_round']} %",
                "met": "yes" if r["pct_peak_round"] >= TARGET_PCT_PEAK else "no",
            }
        )
        out.append(
            {
                "configuration": conf,
                "target": f">= {TARGET_SPEEDUP:g}x the per-client loop",
                "measured": f"{r['speedup_vs_per_client_loop']}x",
                "met": "yes" if r["speedup_vs_per_client_loop"] >= TARGET_SPEEDUP else "no",
            }
        )
    return pd.DataFrame(out)


STAGE_COLS = [
    "model",
    "device",
    "threads",
    "peak_gflops",
    "local_s",
    "gflops_local",
    "pct_peak_local",
    "fisher_s",
    "gflops_fisher",
    "pct_peak_fisher",
    "eval_s",
    "gflops_eval",
    "pct_peak_eval",
    "other_s",
    "round_s",
    "gflops_round",
    "pct_peak_round",
]
PEER_COLS = [
    "model",
    "device",
    "threads",
    "round_s",
    "per_client_loop_s",
    "loop_local_s",
    "loop_fisher_s",
    "loop_eval_s",
    "gflops_per_client_loop",
    "pct_peak_per_client_loop",
    "speedup_vs_per_client_loop",
    "peer_max_dU_pp",
    "peer_max_rel_dF",
    "peer_max_rel_ddelta",
]


def render_md(
    df: pd.DataFrame, command: str, facts: str, load0: float, load1: float, waited: float, rounds
) -> str:
    """The Markdown report: command, machine, load, the tables and the targets."""
    ncpu = os.cpu_count() or 1
    # the load after the run includes the run itself (up to its largest thread count), so
    # only what exceeds that counts as other jobs
    own = float(df["threads"].max()) if "threads" in df and df["device"].eq("cpu").all() else 1.0
    other = max(load0, load1 - own)
    busy = other > IDLE_LOAD
    load = (
        f"1-minute load average {load0:.2f} before and {load1:.2f} after the run, which itself "
        f"keeps up to {own:.0f} thread(s) busy ({ncpu} logical CPUs)"
        + (f", after waiting {waited:.0f} s for the machine to go idle" if waited >= 1 else "")
        + "."
    )
    if busy:
        load += (
            f" **Measured with other jobs at load {other:.2f}: they shared the cores, so "
            "the seconds are inflated and the % of peak is understated.**"
        )
    r0 = df.iloc[0]
    parts = [
        "# Oracle benchmark: one round of full client statistics",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {facts}.",
        "",
        f"Load: {load}",
        "",
        f"Default federation on generated stand-ins: {r0['clients']} clients (5 per domain with "
        "600/72/732/100 samples), 1 local epoch of SGD at batch 32, 64-sample probe sets, "
        f"4 x 500 validation images; mean of {rounds} measured round(s) after a warm-up round.",
        "",
        "* **Peak**: best GFLOP/s of dense float32 square `torch.mm` over sizes "
        f"{', '.join(map(str, GEMM_SIZES))} (CUDA: {', '.join(map(str, GEMM_SIZES_CUDA))}), "
        "3 repetitions each, in the same process at the configuration's thread count, before "
        "and after the rounds (`peak_before_gflops`, `peak_after_gflops` in the CSV); the "
        "larger counts. On CUDA the peak is float32 with the TF32 setting of the machine line "
        "(`peak_tf32_gflops` in the CSV: the same with TF32 matmuls, for reference).",
        "* **Stages of a fedsel round**: `local` = local training of every client (grouped "
        "SGD steps + the final probe gradient); `fisher` = the Fisher/probe pass (per-sample "
        "gradients on every probe set, timed on its own); `eval` = the candidate models "
        "w_t + Δ_i and w_t on the validation sets and each candidate on its client's local "
        "hold-out; `other` = the rest of `round_stats()` (cosines, data frame, validation); "
        "`round` = `round_stats()` wall time + the Fisher pass. Committing the round (`step`, "
        "test accuracy) is in the CSV (`round_with_step_s`, `test_eval_s`).",
        "* **FLOPs** are useful convolution/matmul FLOPs: forward = `arch.flops` per sample; "
        "a training sample = forward + weight gradients (1x forward) + input gradients of "
        "every layer but the first (the images need none) = 3 x forward - first layer. "
        f"Per round for `{r0['model']}`: {r0['round_gflop']} GFLOP.",
        "* **Per-client loop**: what a user writes (e.g. inside Flower): a `torch.nn.Module` "
        "CNN of the same architecture with the same w_t; one client after another: Fisher "
        "trace at w_t by `torch.func.functional_call` + `vmap(grad(...))` over the probe set, "
        "`torch.optim.SGD` over the same mini-batches, the candidate on the 4 validation sets "
        "under `model.eval()` + `torch.no_grad()`. It does less than a fedsel round (no w_t "
        "evaluation, no local hold-out, no final probe gradient), so the speed-up is a lower "
        "bound. `peer_max_*`: the largest difference between its U (points), F and Δ "
        "(relative) and the oracle's for the same round — they compute the same thing.",
        "",
        "## Stages (seconds per round, GFLOP/s, % of peak)",
        "",
        markdown_table(df[STAGE_COLS]),
        "",
        "## Against the per-client loop",
        "",
        markdown_table(df[PEER_COLS]),
        "",
        "## Targets",
        "",
        markdown_table(targets(df)),
        "",
        "All columns, including the test accuracy after the rounds (`acc_avg_after`), are in "
        "`oracle.csv`.",
        "",
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="measured rounds per configuration")
    ap.add_argument("--models", default="cnn", help="comma-separated: cnn, cnn-small, cnn-large")
    ap.add_argument("--threads", default="1,2", help="torch threads (CPU only), comma-separated")
    ap.add_argument(
        "--device",
        choices=("cpu", "cuda", "auto"),
        default="auto",
        help="auto = cuda when available, else cpu",
    )
    ap.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help=f"wait up to this long for the 1-minute load to drop to {IDLE_LOAD}",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    device = resolve(args.device)
    models = args.models.split(",")
    threads: list[int | None] = [int(t) for t in args.threads.split(",")]
    if device.type == "cuda":
        threads = [None]  # thread counts apply to the CPU only
    command = shlex.join([".venv/bin/python", "benchmarks/oracle.py", *sys.argv[1:]])

    waited = wait_idle(args.wait_idle) if args.wait_idle > 0 else 0.0
    load0 = os.getloadavg()[0]
    if load0 > IDLE_LOAD:
        print(
            f"WARNING: 1-minute load average {load0:.2f} on {os.cpu_count()} CPUs: other jobs "
            "are running; seconds will be inflated and the % of peak understated.",
            flush=True,
        )
    configs = [(m, t) for m in models for t in threads]
    rows = []
    cols = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*cols) as bar:
        task = bar.add_task("loading data", total=1 + len(configs) * (args.rounds + 4))
        data = load_federation_data(OracleConfig(data_mode="generated"))
        for m, t in configs:
            label = f"{m} {device.type}" + (f" {t} thr" if t else "")

            def advance(what: str, label: str = label) -> None:
                bar.update(task, advance=1, description=f"{label}: {what}")

            row, _ = bench(m, t, args.rounds, data, device, advance)
            rows.append(row)
        bar.update(task, advance=1, description="done")
    load1 = os.getloadavg()[0]
    df = pd.DataFrame(rows)
    write_table_atomic(df, args.out / "oracle.csv")
    md = render_md(df, command, machine_facts(device), load0, load1, waited, args.rounds)
    write_text_atomic(md, args.out / "oracle.md")
    print(df[STAGE_COLS].to_string(index=False))
    print(df[PEER_COLS].to_string(index=False))
    print(targets(df).to_string(index=False))


if __name__ == "__main__":
    main()
