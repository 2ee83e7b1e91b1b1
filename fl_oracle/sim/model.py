"""Small CNNs as pure functions of a flat parameter vector, for one model or many at once.

A model is an :class:`Arch` (a layer table) plus a flat float32 parameter vector of length
``arch.size``. :func:`forward` runs one model; :func:`forward_stacked` runs ``M`` models in a
single pass through grouped convolutions and batched matmuls: on a shared input (candidate
models on the validation set) the first convolution of all ``M`` models is one convolution
with ``M * C`` output channels; on per-model inputs (local training of ``M`` clients) every
layer is a grouped convolution. Both are plain torch ops, so autograd gives per-model
gradients and :mod:`torch.func` transforms apply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
import torch.nn.functional as F

__all__ = ["Arch", "ARCHS", "get_arch", "init_params", "unflatten", "forward", "forward_stacked"]

N_CLASSES = 10
IMAGE_SHAPE = (3, 32, 32)


@dataclass(frozen=True)
class Arch:
    """A CNN: optional input average-pooling, conv+ReLU+maxpool(2) blocks, one hidden FC layer.

    Attributes:
        name: registry name.
        pre_pool: input average-pooling factor (2 turns 32x32 into 16x16).
        convs: ``(out_channels, kernel, padding)`` per block.
        hidden: width of the hidden fully connected layer.
    """

    name: str
    pre_pool: int
    convs: tuple[tuple[int, int, int], ...]
    hidden: int

    @cached_property
    def feature_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) after the last conv block."""
        c, h, w = IMAGE_SHAPE
        h, w = h // self.pre_pool, w // self.pre_pool
        for cout, k, pad in self.convs:
            h, w = (h + 2 * pad - k + 1) // 2, (w + 2 * pad - k + 1) // 2
            c = cout
        return c, h, w

    @cached_property
    def shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Parameter names and shapes in flat-vector order."""
        out: list[tuple[str, tuple[int, ...]]] = []
        cin = IMAGE_SHAPE[0]
        for i, (cout, k, _) in enumerate(self.convs):
            out += [(f"conv{i}.weight", (cout, cin, k, k)), (f"conv{i}.bias", (cout,))]
            cin = cout
        feat = math.prod(self.feature_shape)
        out += [("fc0.weight", (self.hidden, feat)), ("fc0.bias", (self.hidden,))]
        out += [("fc1.weight", (N_CLASSES, self.hidden)), ("fc1.bias", (N_CLASSES,))]
        return tuple(out)

    @cached_property
    def size(self) -> int:
        """Number of parameters."""
        return sum(math.prod(s) for _, s in self.shapes)

    @cached_property
    def flops(self) -> int:
        """Forward multiply-adds x 2 per sample (convolutions and matmuls only)."""
        c, h, w = IMAGE_SHAPE
        h, w = h // self.pre_pool, w // self.pre_pool
        total = 0
        for cout, k, pad in self.convs:
            ho, wo = h + 2 * pad - k + 1, w + 2 * pad - k + 1
            total += 2 * ho * wo * cout * c * k * k
            c, h, w = cout, ho // 2, wo // 2
        total += 2 * (c * h * w * self.hidden + self.hidden * N_CLASSES)
        return total


ARCHS: dict[str, Arch] = {
    # 16x16 input, 3x3 convs: cheapest, the default on CPU.
    "cnn": Arch("cnn", 2, ((16, 3, 1), (32, 3, 1)), 64),
    "cnn-small": Arch("cnn-small", 2, ((8, 3, 1), (16, 3, 1)), 32),
    # the classic LeNet-style digits CNN on 32x32 input.
    "cnn-large": Arch("cnn-large", 1, ((16, 5, 0), (32, 5, 0)), 64),
}


def get_arch(name: str) -> Arch:
    """Look up an architecture by name (ValueError naming it when unknown)."""
    if name not in ARCHS:
        raise ValueError(f"model {name!r} is unknown; choose one of {', '.join(ARCHS)}")
    return ARCHS[name]


def init_params(arch: Arch, generator: torch.Generator) -> torch.Tensor:
    """PyTorch's default layer initialization, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), flat (P,)."""
    parts = []
    fan_in = 1
    for name, shape in arch.shapes:
        if name.endswith("weight"):
            fan_in = math.prod(shape[1:])
        bound = 1.0 / math.sqrt(fan_in)
        u = torch.rand(math.prod(shape), generator=generator, dtype=torch.float32)
        parts.append((2.0 * u - 1.0) * bound)
    return torch.cat(parts)


def unflatten(arch: Arch, flat: torch.Tensor) -> dict[str, torch.Tensor]:
    """Views of a flat vector ``(..., P)`` as named tensors ``(..., *shape)``."""
    lead = flat.shape[:-1]
    out, i = {}, 0
    for name, shape in arch.shapes:
        n = math.prod(shape)
        out[name] = flat[..., i : i + n].reshape(*lead, *shape)
        i += n
    return out


def _pool2(x: torch.Tensor) -> torch.Tensor:
    """2x2 max pooling (floor). Without autograd: two pairwise maxima of strided views,
    several times faster on CPU than ``max_pool2d`` (which also computes indices); with
    autograd: ``max_pool2d``, whose index-based backward is far cheaper than that of
    ``maximum``. The forward values are identical. ReLU commutes with max pooling, so callers
    apply it after pooling, on 4x fewer values."""
    if torch.is_grad_enabled() and x.requires_grad:
        return F.max_pool2d(x, 2)
    h2, w2 = x.shape[-2] // 2, x.shape[-1] // 2
    x = torch.maximum(x[..., 0 : 2 * h2 : 2, :], x[..., 1 : 2 * h2 : 2, :])
    return torch.maximum(x[..., 0 : 2 * w2 : 2], x[..., 1 : 2 * w2 : 2])


def forward(
    arch: Arch,
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    record: list[tuple[str, torch.Tensor, torch.Tensor]] | None = None,
) -> torch.Tensor:
    """Logits of one model. ``x``: (N, 3, 32, 32) float32 -> (N, 10).

    Args:
        arch: the architecture.
        params: named parameters (see :func:`unflatten`).
        x: input images.
        record: when given, receives ``(layer, input, output)`` of every parameterized layer
            (``conv<i>``/``fc<i>``; outputs before pooling/ReLU), for per-sample gradients.
    """
    if arch.pre_pool > 1:
        x = F.avg_pool2d(x, arch.pre_pool)
    for i, (_, _, pad) in enumerate(arch.convs):
        z = F.conv2d(x, params[f"conv{i}.weight"], params[f"conv{i}.bias"], padding=pad)
        if record is not None:
            record.append((f"conv{i}", x, z))
        x = F.relu(_pool2(z))
    x = x.flatten(1)
    z = F.linear(x, params["fc0.weight"], params["fc0.bias"])
    if record is not None:
        record.append(("fc0", x, z))
    x = F.relu(z)
    z = F.linear(x, params["fc1.weight"], params["fc1.bias"])
    if record is not None:
        record.append(("fc1", x, z))
    return z


def forward_stacked(arch: Arch, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Logits of ``M`` models in one pass.

    Args:
        arch: the common architecture.
        params: stacked parameters, each ``(M, *shape)``.
        x: a shared input ``(N, 3, 32, 32)`` or one input per model ``(M, N, 3, 32, 32)``.

    Returns:
        Logits ``(M, N, 10)``; row ``m`` equals ``forward`` of model ``m`` on its input.
    """
    M = params["fc1.bias"].shape[0]
    shared = x.dim() == 4
    if not shared:
        N = x.shape[1]
        x = x.transpose(0, 1).reshape(N, M * x.shape[2], *x.shape[3:])  # (N, M*C, H, W)
    if arch.pre_pool > 1:
        x = F.avg_pool2d(x, arch.pre_pool)
    for i, (cout, _, pad) in enumerate(arch.convs):
        w = params[f"conv{i}.weight"]
        w = w.reshape(M * cout, *w.shape[2:])
        b = params[f"conv{i}.bias"].reshape(M * cout)
        groups = 1 if (shared and i == 0) else M
        x = F.relu(_pool2(F.conv2d(x, w, b, padding=pad, groups=groups)))
    N = x.shape[0]
    x = x.reshape(N, M, -1).transpose(0, 1)  # (M, N, feat)
    x = torch.baddbmm(params["fc0.bias"].unsqueeze(1), x, params["fc0.weight"].transpose(1, 2))
    x = F.relu(x)
    return torch.baddbmm(params["fc1.bias"].unsqueeze(1), x, params["fc1.weight"].transpose(1, 2))
