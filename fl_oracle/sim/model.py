"""Small CNNs as pure functions of a flat parameter vector, for one model or many at once.

A model is an :class:`Arch` (a layer table) plus a flat float32 parameter vector of length
``arch.size``. :func:`forward` runs one model; :func:`forward_stacked` runs ``M`` models: on
per-model inputs (local training of ``M`` clients) as one pass of grouped convolutions in
channels-last layout and batched matmuls; on a shared input (candidate models on the
validation set) model after model on CPU and as grouped convolutions on a GPU (see
:func:`forward_stacked` for the measurements behind these choices). All are plain torch ops,
so autograd gives per-model gradients and :mod:`torch.func` transforms apply.

Inputs may be given at full resolution ``IMAGE_SHAPE`` or already average-pooled by
``arch.pre_pool`` (:func:`prepool`, shape ``arch.input_shape``): the pre-pooling is a fixed
map of the data, so callers that see the same images again and again (the oracle) pool them
once instead of on every pass. Both give bitwise the same results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import torch
import torch.nn.functional as F

from fl_oracle.errors import ConfigError
from fl_oracle.sim.architectures import arch_entries
from fl_oracle.sim.torch_model import ZOO, ModuleArch, module_arch

__all__ = [
    "Arch",
    "ARCHS",
    "get_arch",
    "resolve_model",
    "model_names",
    "init_params",
    "unflatten",
    "prepool",
    "forward",
    "forward_stacked",
]

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
    n_classes: int = N_CLASSES
    image_shape: tuple[int, int, int] = IMAGE_SHAPE

    @cached_property
    def input_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of the first convolution's input (after pre-pooling)."""
        c, h, w = self.image_shape
        return c, h // self.pre_pool, w // self.pre_pool

    @cached_property
    def feature_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) after the last conv block."""
        c, h, w = self.image_shape
        h, w = h // self.pre_pool, w // self.pre_pool
        for cout, k, pad in self.convs:
            h, w = (h + 2 * pad - k + 1) // 2, (w + 2 * pad - k + 1) // 2
            c = cout
        return c, h, w

    @cached_property
    def shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Parameter names and shapes in flat-vector order."""
        out: list[tuple[str, tuple[int, ...]]] = []
        cin = self.image_shape[0]
        for i, (cout, k, _) in enumerate(self.convs):
            out += [(f"conv{i}.weight", (cout, cin, k, k)), (f"conv{i}.bias", (cout,))]
            cin = cout
        feat = math.prod(self.feature_shape)
        out += [("fc0.weight", (self.hidden, feat)), ("fc0.bias", (self.hidden,))]
        out += [("fc1.weight", (self.n_classes, self.hidden)), ("fc1.bias", (self.n_classes,))]
        return tuple(out)

    @cached_property
    def size(self) -> int:
        """Number of parameters."""
        return sum(math.prod(s) for _, s in self.shapes)

    @cached_property
    def flops(self) -> int:
        """Forward multiply-adds x 2 per sample (convolutions and matmuls only)."""
        c, h, w = self.image_shape
        h, w = h // self.pre_pool, w // self.pre_pool
        total = 0
        for cout, k, pad in self.convs:
            ho, wo = h + 2 * pad - k + 1, w + 2 * pad - k + 1
            total += 2 * ho * wo * cout * c * k * k
            c, h, w = cout, ho // 2, wo // 2
        total += 2 * (c * h * w * self.hidden + self.hidden * self.n_classes)
        return total


ARCHS: dict[str, Arch] = {
    name: Arch(name, **e.stacked) for name, e in arch_entries().items() if e.stacked is not None
}  # the built-in CNNs of fl_oracle.sim.architectures


def get_arch(
    name: str, *, n_classes: int = N_CLASSES, image_shape: tuple[int, int, int] = IMAGE_SHAPE
) -> Arch:
    """Look up an architecture by name, for ``n_classes`` outputs on ``image_shape`` inputs
    (ValueError naming it when unknown or when the input is too small for its layers)."""
    if name not in ARCHS:
        raise ValueError(f"model {name!r} is unknown; choose one of {', '.join(ARCHS)}")
    arch = ARCHS[name]
    if (n_classes, tuple(image_shape)) == (arch.n_classes, arch.image_shape):
        return arch
    arch = replace(arch, n_classes=int(n_classes), image_shape=tuple(image_shape))
    if min(arch.feature_shape[1:]) < 1:
        raise ValueError(f"model {name!r}: images {image_shape} are too small for its layers")
    return arch


def resolve_model(
    name: str, *, n_classes: int = N_CLASSES, image_shape: tuple[int, int, int] = IMAGE_SHAPE
) -> Arch | ModuleArch:
    """The model named ``name``: a built-in CNN (:data:`ARCHS`), a generic one
    (:data:`~fl_oracle.sim.torch_model.ZOO`) or ``module:factory``, sized for ``n_classes``
    outputs on ``image_shape`` inputs (ConfigError in one line when it cannot be had)."""
    if name in ARCHS:
        try:
            return get_arch(name, n_classes=n_classes, image_shape=image_shape)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if name in ZOO or ":" in name:
        return module_arch(name, n_classes=n_classes, image_shape=image_shape)
    raise ConfigError(
        f"model {name!r} is unknown; choose one of {', '.join(model_names())} "
        "or give module:factory"
    )


def model_names() -> tuple[str, ...]:
    """Every named model: the built-in CNNs, then the generic ones."""
    return (*ARCHS, *ZOO)


def init_params(arch: Arch | ModuleArch, generator: torch.Generator) -> torch.Tensor:
    """PyTorch's default layer initialization, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), flat (P,);
    a generic module's own initialization (seeded by ``generator``)."""
    if isinstance(arch, ModuleArch):
        return arch.init(generator)
    parts = []
    fan_in = 1
    for name, shape in arch.shapes:
        if name.endswith("weight"):
            fan_in = math.prod(shape[1:])
        bound = 1.0 / math.sqrt(fan_in)
        u = torch.rand(math.prod(shape), generator=generator, dtype=torch.float32)
        parts.append((2.0 * u - 1.0) * bound)
    return torch.cat(parts)


def unflatten(arch: Arch | ModuleArch, flat: torch.Tensor) -> dict[str, torch.Tensor]:
    """Views of a flat vector ``(..., P)`` as named tensors ``(..., *shape)``."""
    lead = flat.shape[:-1]
    out, i = {}, 0
    for name, shape in arch.shapes:
        n = math.prod(shape)
        out[name] = flat[..., i : i + n].reshape(*lead, *shape)
        i += n
    return out


def prepool(arch: Arch | ModuleArch, x: torch.Tensor) -> torch.Tensor:
    """The input average-pooling of ``arch`` on images ``(..., 3, 32, 32)``; inputs already
    at ``arch.input_shape`` (pooled before) pass unchanged. Leading dimensions are kept."""
    if arch.pre_pool == 1 or tuple(x.shape[-2:]) != arch.image_shape[1:]:
        return x
    lead = x.shape[:-3]
    y = F.avg_pool2d(x.reshape(-1, *x.shape[-3:]), arch.pre_pool)
    return y.reshape(*lead, *y.shape[1:])


def _pool2(x: torch.Tensor) -> torch.Tensor:
    """2x2 max pooling (floor); both paths give identical values, the choice is CPU speed.

    ``max_pool2d`` is vectorized over channels in channels-last layout (about 20x faster
    there than on a standard-layout tensor), and its index-based backward is far cheaper than
    that of ``maximum``: channels-last tensors and tensors that need a gradient take it. A
    standard-layout tensor without autograd takes two pairwise maxima of strided views,
    several times faster than ``max_pool2d`` in that layout. ReLU commutes with max pooling,
    so callers apply it after pooling, on 4x fewer values."""
    channels_last = x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last)
    if channels_last or (torch.is_grad_enabled() and x.requires_grad):
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
    """Logits of one model. ``x``: (N, 3, 32, 32) or pre-pooled (N, *arch.input_shape)
    float32 -> (N, 10).

    Args:
        arch: the architecture.
        params: named parameters (see :func:`unflatten`).
        x: input images.
        record: when given, receives ``(layer, input, output)`` of every parameterized layer
            (``conv<i>``/``fc<i>``; outputs before pooling/ReLU), for per-sample gradients.
    """
    if isinstance(arch, ModuleArch):
        if record is not None:
            raise ValueError(f"model {arch.name!r} records no layers: use fisher_method='vmap'")
        return arch.apply(params, x)
    x = prepool(arch, x)
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
    """Logits of ``M`` models.

    Per-model inputs (local training) run as one pass of grouped convolutions in
    channels-last layout: ``(N, M*C, H, W)`` with each pixel's ``M*C`` channels contiguous,
    which is how oneDNN's convolutions want them (no layout reorders) and where max pooling
    and its backward are vectorized; on one CPU thread a training step of 5 clients takes
    about 0.45x the time of the same grouped pass in standard layout.

    A shared input (candidate models on a validation set) runs model after model on CPU:
    ordinary convolutions over all N samples beat one wide convolution of all models (whose
    ``N x M*C x H x W`` activations overflow the caches) and grouped convolutions, measured
    at about 0.4x the time of the grouped pass for 20 models on 500 images. On a GPU, where
    one wide kernel beats M small launches, the shared input stays one grouped pass: the
    first convolution of all models is a single convolution with ``M*C`` output channels.

    Args:
        arch: the common architecture.
        params: stacked parameters, each ``(M, *shape)``.
        x: a shared input ``(N, 3, 32, 32)`` or one input per model ``(M, N, 3, 32, 32)``;
            either may be pre-pooled (spatial size ``arch.input_shape``).

    Returns:
        Logits ``(M, N, 10)``; row ``m`` equals ``forward`` of model ``m`` on its input.
    """
    if isinstance(arch, ModuleArch):
        return arch.apply_stacked(params, x)
    M = params["fc1.bias"].shape[0]
    shared = x.dim() == 4
    x = prepool(arch, x)
    if shared and x.device.type == "cpu":
        return torch.stack(
            [forward(arch, {k: v[m] for k, v in params.items()}, x) for m in range(M)]
        )
    if not shared:
        _, N, C, H, W = x.shape
        # (M, N, C, H, W) -> (N, H, W, M*C) -> a channels-last view (N, M*C, H, W)
        x = x.permute(1, 3, 4, 0, 2).reshape(N, H, W, M * C).permute(0, 3, 1, 2)
    for i, (cout, _, pad) in enumerate(arch.convs):
        w = params[f"conv{i}.weight"]
        w = w.reshape(M * cout, *w.shape[2:])
        if not shared:
            w = w.contiguous(memory_format=torch.channels_last)
        b = params[f"conv{i}.bias"].reshape(M * cout)
        groups = 1 if (shared and i == 0) else M
        x = F.relu(_pool2(F.conv2d(x, w, b, padding=pad, groups=groups)))
    N = x.shape[0]
    x = x.reshape(N, M, -1).transpose(0, 1)  # (M, N, feat), features in (c, h, w) order
    x = torch.baddbmm(params["fc0.bias"].unsqueeze(1), x, params["fc0.weight"].transpose(1, 2))
    x = F.relu(x)
    return torch.baddbmm(params["fc1.bias"].unsqueeze(1), x, params["fc1.weight"].transpose(1, 2))
