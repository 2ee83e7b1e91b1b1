"""Client statistics at the global model: Fisher trace, probe gradients, JS divergence, cosines.

* ``F``: the empirical Fisher trace, the mean over a client's samples of
  ||grad_theta log p_theta(y|x)||^2, from per-sample gradients (``torch.func.vmap`` over
  ``torch.func.grad``) on the client's fixed probe set (all its samples when uncapped).
* The same pass yields each client's mean loss and mean loss gradient grad F_k(w_t) on the probe
  set, which feed the gamma-inexact stopping rule and the B-dissimilarity
  B(w) = sqrt(E_k ||grad F_k(w)||^2 / ||grad f(w)||^2) (FedProx, weights p_k = n_k / n).
* ``B``: Jensen-Shannon divergence (nats) of a client's label histogram from the global one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as Fn
from scipy.spatial.distance import jensenshannon
from torch.func import grad, vmap

from fl_oracle.sim.model import Arch, forward, forward_stacked, unflatten
from fl_oracle.sim.torch_model import ModuleArch

__all__ = [
    "ProbeStats",
    "probe_stats",
    "probe_stats_vmap",
    "segment_grads",
    "js_divergence",
    "b_dissimilarity",
    "cosine_to",
    "correct_stacked",
]

LN2 = math.log(2.0)


@dataclass(frozen=True)
class ProbeStats:
    """Per-client statistics of one model on each client's probe set.

    Attributes:
        fisher: (K,) mean squared per-sample gradient norm of log p(y|x).
        loss: (K,) mean cross-entropy (nats).
        grad: (K, P) mean gradient of the cross-entropy, grad F_k on the probe set.
    """

    fisher: torch.Tensor
    loss: torch.Tensor
    grad: torch.Tensor


def probe_stats_vmap(
    arch: Arch,
    params: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    segment: torch.Tensor,
    n_segments: int,
    *,
    chunk: int = 256,
) -> ProbeStats:
    """Fisher trace, loss and mean gradient per client: ``torch.func.vmap(grad)`` reference.

    Materializes every per-sample gradient (chunk x P floats); :func:`probe_stats` computes
    the same quantities from each layer's inputs and output gradients instead and is what the
    oracle uses.

    Args:
        arch: the architecture.
        params: (P,) flat parameters of the model (w_t).
        x: (N, 3, 32, 32) the concatenated probe sets of the clients.
        y: (N,) int64 labels.
        segment: (N,) int64 client index of every sample, in [0, n_segments).
        n_segments: number of clients K.
        chunk: samples per vmapped pass (bounds memory at chunk x P floats; lowered so that
            a chunk's per-sample gradients stay within about 256 MiB).

    Returns:
        :class:`ProbeStats` with one entry per client.
    """
    w = params.detach()

    def logp(p: torch.Tensor, xi: torch.Tensor, yi: torch.Tensor):
        out = forward(arch, unflatten(arch, p), xi.unsqueeze(0))[0]
        lp = torch.log_softmax(out, dim=-1).gather(0, yi.unsqueeze(0)).squeeze(0)
        return lp, lp

    per_sample = vmap(grad(logp, has_aux=True), in_dims=(None, 0, 0))
    P = w.numel()
    chunk = max(1, min(chunk, (1 << 26) // max(1, P)))  # a chunk's gradients within ~256 MiB
    sq = torch.zeros(n_segments, dtype=torch.float64, device=w.device)
    loss = torch.zeros(n_segments, dtype=torch.float64, device=w.device)
    gsum = torch.zeros(n_segments, P, dtype=torch.float32, device=w.device)
    count = torch.bincount(segment, minlength=n_segments).to(torch.float64)
    for i in range(0, len(y), chunk):
        g, lp = per_sample(w, x[i : i + chunk], y[i : i + chunk])
        seg = segment[i : i + chunk]
        sq.index_add_(0, seg, (g * g).sum(1, dtype=torch.float64))
        loss.index_add_(0, seg, -lp.detach().to(torch.float64))
        gsum.index_add_(0, seg, -g)  # grad of the loss = - grad log p
    denom = count.clamp_min(1)
    return ProbeStats(sq / denom, loss / denom, gsum / denom.to(torch.float32).unsqueeze(1))


def _probe_stats_loop(
    arch: ModuleArch,
    params: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    segment: torch.Tensor,
    n_segments: int,
) -> ProbeStats:
    """:func:`probe_stats_vmap`'s quantities by one backward per sample: a generic module's
    path on CPU, where it need not hold every per-sample gradient of a chunk as ``vmap(grad)``
    does (results/benchmarks/generic_model.md, row ``generic``: F 4.0x the built-in path's
    time)."""
    named = {k: v.detach().clone().requires_grad_(True) for k, v in unflatten(arch, params).items()}
    leaves = list(named.values())
    P = params.numel()
    sq = torch.zeros(n_segments, dtype=torch.float64)
    loss = torch.zeros(n_segments, dtype=torch.float64)
    gsum = torch.zeros(n_segments, P, dtype=torch.float32)
    for i in range(len(y)):
        out = arch.apply(named, x[i : i + 1])[0]
        lp = torch.log_softmax(out, dim=-1)[int(y[i])]
        g = torch.cat([v.reshape(-1) for v in torch.autograd.grad(lp, leaves)])
        s = int(segment[i])
        sq[s] += float((g.double() ** 2).sum())
        loss[s] -= float(lp.detach())
        gsum[s] -= g
    count = torch.bincount(segment, minlength=n_segments).to(torch.float64).clamp_min(1)
    return ProbeStats(sq / count, loss / count, gsum / count.to(torch.float32).unsqueeze(1))


def _patches(a: torch.Tensor, k: int, pad: int) -> torch.Tensor:
    """(n, L, k*k*c) patches of a channels-last ``a`` (n, c, H, W), stride 1, columns in
    (kh, kw, c) order: per kernel row one copy of windows of k*c floats that lie contiguous in
    that layout (on one CPU thread, 512 samples of the default CNN's second convolution: 2.6 ms
    against 9.5 ms for the strided (c, kh, kw) patches of ``F.unfold``'s order)."""
    n, c = a.shape[:2]
    if pad:
        a = Fn.pad(a, (pad, pad, pad, pad))
    v = a.permute(0, 2, 3, 1)  # (n, H, W, c)
    if v.stride(3) != 1 or v.stride(2) != c:
        v = v.contiguous()
    ho, wo = v.shape[1] - k + 1, v.shape[2] - k + 1
    out = torch.empty(n, ho, wo, k, k * c, dtype=a.dtype, device=a.device)
    s0, s1, s2 = v.stride()[:3]
    for kh in range(k):
        rows = v[:, kh : kh + ho]
        out[:, :, :, kh] = rows.as_strided(
            (n, ho, wo, k * c), (s0, s1, s2, 1), rows.storage_offset()
        )
    return out.view(n, ho * wo, k * k * c)


def _sorted(x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor):
    """The samples ordered by segment (stable), so that each client's are one run."""
    if len(segment) > 1 and bool((segment[1:] < segment[:-1]).any()):
        order = torch.argsort(segment, stable=True)
        return x[order], y[order], segment[order]
    return x, y, segment


def probe_stats(
    arch: Arch,
    params: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    segment: torch.Tensor,
    n_segments: int,
    *,
    chunk: int = 512,
) -> ProbeStats:
    """Fisher trace, loss and mean gradient per client from exact per-sample gradients.

    One batched forward records every layer's input ``a_n`` and output ``z_n``; one backward
    of sum_n log p(y_n|x_n) gives delta_n = d log p(y_n|x_n) / d z_n for every sample at once
    (the samples are independent). Each sample's weight gradient is then an outer product
    (FC: delta_n a_n^T, whose squared norm is ||delta_n||^2 ||a_n||^2, never formed) or a small
    matmul with the input's patches (conv: delta_n P_n, P_n in channels-last order). The
    samples are taken client by client (sorted by segment), so each client's sum is a matmul
    over its own run: the FC weight sums delta_c^T a_c, the conv and bias sums a 0/1 run
    matrix times the per-sample rows. Agrees with :func:`probe_stats_vmap` to float precision
    (tested).

    Args:
        arch: the architecture.
        params: (P,) flat parameters of the model (w_t).
        x: (N, 3, 32, 32) the concatenated probe sets of the clients.
        y: (N,) int64 labels.
        segment: (N,) int64 client index of every sample, in [0, n_segments).
        n_segments: number of clients K.
        chunk: samples per batched pass.

    Returns:
        :class:`ProbeStats` with one entry per client. A generic module
        (:class:`~fl_oracle.sim.torch_model.ModuleArch`) records no layers and takes
        :func:`probe_stats_vmap`.
    """
    if isinstance(arch, ModuleArch):
        if params.device.type == "cpu":
            return _probe_stats_loop(arch, params, x, y, segment, n_segments)
        return probe_stats_vmap(arch, params, x, y, segment, n_segments)
    w = params.detach()
    named = unflatten(arch, w)
    dev = w.device
    K = n_segments
    offset, i0 = {}, 0
    for name, shape in arch.shapes:
        offset[name] = i0
        i0 += math.prod(shape)
    sq = torch.zeros(K, dtype=torch.float64, device=dev)
    loss = torch.zeros(K, dtype=torch.float64, device=dev)
    gsum = torch.zeros(K, w.numel(), dtype=torch.float32, device=dev)
    count = torch.bincount(segment, minlength=K).to(torch.float64)
    x, y, segment = _sorted(x, y, segment)
    conv_geom = {f"conv{i}": (k, pad) for i, (_, k, pad) in enumerate(arch.convs)}
    for c0 in range(0, len(y), chunk):
        # channels-last: the convolutions and the max pooling's forward and backward are
        # vectorized over channels in that layout on CPU
        xc = x[c0 : c0 + chunk].detach().contiguous(memory_format=torch.channels_last)
        xc.requires_grad_(True)
        yc, seg = y[c0 : c0 + chunk], segment[c0 : c0 + chunk]
        n = len(yc)
        # the chunk's clients (ids) and their runs of samples
        ids, lens = torch.unique_consecutive(seg, return_counts=True)
        ends = torch.cumsum(lens, 0).tolist()
        runs = list(zip([0, *ends[:-1]], ends, strict=True))
        member = torch.repeat_interleave(torch.arange(len(ids), device=dev), lens)
        run_sum = Fn.one_hot(member, len(ids)).to(w.dtype).T  # (clients, n)
        record: list = []
        with torch.enable_grad():
            logits = forward(arch, named, xc, record)
            logp = torch.log_softmax(logits, -1).gather(1, yc.unsqueeze(1)).squeeze(1)
            deltas = torch.autograd.grad(logp.sum(), [z for _, _, z in record])
        loss.index_add_(0, seg, -logp.detach().to(torch.float64))
        per = torch.zeros(n, dtype=torch.float64, device=dev)  # each sample's ||grad||^2
        for (name, a, _), d in zip(record, deltas, strict=True):
            a = a.detach()
            wo, bo = offset[f"{name}.weight"], offset[f"{name}.bias"]
            if name in conv_geom:
                k, pad = conv_geom[name]
                cout, cin = d.shape[1], a.shape[1]
                d = d.reshape(n, cout, -1)  # (n, cout, L)
                G = torch.bmm(d, _patches(a, k, pad)).reshape(n, -1)  # (n, cout*k*k*cin)
                gb = d.sum(2)
                per += torch.linalg.vecdot(G, G).to(torch.float64)
                # the clients' sums, columns back to the weight's (cout, cin, kh, kw)
                sums = (run_sum @ G).view(-1, cout, k, k, cin).permute(0, 1, 4, 2, 3)
                gsum[ids, wo:bo] -= sums.reshape(len(ids), -1)
            else:
                gb = d
                per += ((d * d).sum(1) * (a * a).sum(1)).to(torch.float64)
                sums = [(d[r0:r1].T @ a[r0:r1]).reshape(-1) for r0, r1 in runs]
                gsum[ids, wo:bo] -= torch.stack(sums)
            per += (gb * gb).sum(1, dtype=torch.float64)
            gsum[ids, bo : bo + gb.shape[1]] -= run_sum @ gb
        sq.index_add_(0, seg, per)
    denom = count.clamp_min(1)
    return ProbeStats(sq / denom, loss / denom, gsum.div_(denom.to(torch.float32).unsqueeze(1)))


def segment_grads(
    arch: Arch,
    params: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    segment: torch.Tensor,
    n_segments: int,
    *,
    chunk: int = 512,
) -> ProbeStats:
    """Loss and mean gradient per segment by ordinary backward passes (no per-sample work).

    For the server's per-domain validation gradients, which need no Fisher trace: each
    segment's samples run forward and backward in chunks of its own, so the weight gradients
    are the convolutions' and matmuls' own (as in local training). Equal to
    :func:`probe_stats`'s ``loss`` and ``grad`` to float precision (tested); ``fisher`` is NaN.
    A generic module (:class:`~fl_oracle.sim.torch_model.ModuleArch`, whose normalization may
    read each batch) takes :func:`probe_stats`.
    """
    if isinstance(arch, ModuleArch):
        return probe_stats(arch, params, x, y, segment, n_segments)
    dev = params.device
    p = params.detach().clone().requires_grad_(True)
    loss = torch.zeros(n_segments, dtype=torch.float64, device=dev)
    gsum = torch.zeros(n_segments, p.numel(), dtype=torch.float32, device=dev)
    count = torch.bincount(segment, minlength=n_segments).to(torch.float64)
    x, y, segment = _sorted(x, y, segment)
    ids, lens = torch.unique_consecutive(segment, return_counts=True)
    ends = torch.cumsum(lens, 0).tolist()
    for s, r0, r1 in zip(ids.tolist(), [0, *ends[:-1]], ends, strict=True):
        for c0 in range(r0, r1, chunk):
            xc = x[c0 : min(c0 + chunk, r1)].contiguous(memory_format=torch.channels_last)
            yc = y[c0 : min(c0 + chunk, r1)]
            with torch.enable_grad():
                logits = forward(arch, unflatten(arch, p), xc)
                logp = torch.log_softmax(logits, -1).gather(1, yc.unsqueeze(1)).squeeze(1)
                (g,) = torch.autograd.grad(logp.sum(), p)
            loss[s] -= logp.detach().to(torch.float64).sum()
            gsum[s] -= g
    denom = count.clamp_min(1)
    nan = torch.full((n_segments,), math.nan, dtype=torch.float64, device=dev)
    return ProbeStats(nan, loss / denom, gsum.div_(denom.to(torch.float32).unsqueeze(1)))


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence in nats of two histograms (normalized here), in [0, ln 2]."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.shape != q.shape or p.ndim != 1:
        raise ValueError(f"histograms must be 1-D of one length, got {p.shape} and {q.shape}")
    if (p < 0).any() or (q < 0).any() or p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("histograms must be non-negative with a positive total")
    d = float(jensenshannon(p / p.sum(), q / q.sum(), base=math.e) ** 2)
    return min(max(d, 0.0), LN2)


def b_dissimilarity(grads: torch.Tensor, weights: torch.Tensor) -> float:
    """B(w) = sqrt(sum_k p_k ||g_k||^2 / ||sum_k p_k g_k||^2) with ``p`` = normalized weights.

    Args:
        grads: (K, P) per-client gradients grad F_k(w).
        weights: (K,) non-negative client weights (normalized here).
    """
    p = (weights / weights.sum()).to(torch.float64)
    g = grads.to(torch.float64)
    num = (p * (g * g).sum(1)).sum()
    den = ((p.unsqueeze(1) * g).sum(0) ** 2).sum()
    return float(torch.sqrt(num / den)) if den > 0 else math.inf


def cosine_to(deltas: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """(M,) cosines of each row of ``deltas`` (M, P) with ``ref`` (P,); 0 for a zero vector."""
    num = deltas.to(torch.float64) @ ref.to(torch.float64)
    den = deltas.to(torch.float64).norm(dim=1) * ref.to(torch.float64).norm()
    cos = torch.where(den > 0, num / den.clamp_min(1e-300), torch.zeros_like(num))
    return cos.clamp(-1.0, 1.0)


@torch.no_grad()
def correct_stacked(
    arch: Arch, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor, *, chunk: int = 512
) -> torch.Tensor:
    """(M,) number of correctly classified samples of each of ``M`` models.

    Args:
        arch: the architecture.
        params: (M, P) flat parameters.
        x: (N, 3, 32, 32) shared inputs, or pre-pooled (N, *arch.input_shape).
        y: (N,) labels.
        chunk: samples per batched pass (a whole 500-image validation subset in one: on CPU
            the models run one after another over the chunk, and larger chunks keep the
            convolutions efficient).
    """
    named = unflatten(arch, params)
    hits = torch.zeros(params.shape[0], dtype=torch.int64, device=params.device)
    x, y = _mixed(arch, x), _mixed(arch, y)
    for i in range(0, len(y), chunk):
        logits = forward_stacked(arch, named, x[i : i + chunk])
        hits += (logits.argmax(-1) == y[i : i + chunk]).sum(1)
    return hits


def logits_stacked(
    arch: Arch, params: torch.Tensor, x: torch.Tensor, *, chunk: int = 512
) -> torch.Tensor:
    """(M, N, C) logits of ``M`` models (M, P) on shared inputs ``x``, in the chunks of
    :func:`correct_stacked` (so its hits are the argmax of these logits, bit for bit)."""
    named = unflatten(arch, params)
    xm = _mixed(arch, x)
    with torch.no_grad():
        parts = [forward_stacked(arch, named, xm[i : i + chunk]) for i in range(0, len(x), chunk)]
    z = torch.cat(parts, dim=1)
    if isinstance(arch, ModuleArch):  # back to the samples' own order
        out = torch.empty_like(z)
        out[:, _order(len(x), z.device)] = z
        return out
    return z


def _order(n: int, device) -> torch.Tensor:
    """A fixed permutation of n samples (seeded by n)."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(n)).to(device)


def _mixed(arch, t: torch.Tensor) -> torch.Tensor:
    """A generic module normalizes with each chunk's own batch statistics: its evaluation
    chunks must not be runs of one class (a split stored class by class), so its samples are
    taken in a fixed mixed order. Hit counts do not depend on the order; the built-in CNNs keep
    theirs (bit-identical to before)."""
    return t[_order(len(t), t.device)] if isinstance(arch, ModuleArch) else t


def loss_stacked(
    arch: Arch, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """(M,) mean cross-entropy of ``M`` models (M, P) on per-model inputs (M, N, 3, 32, 32)."""
    logits = forward_stacked(arch, unflatten(arch, params), x)
    M, N = y.shape
    return (
        Fn.cross_entropy(logits.reshape(M * N, -1), y.reshape(-1), reduction="none")
        .view(M, N)
        .mean(1)
    )
