"""Any ``torch.nn.Module`` as an oracle model, through :mod:`torch.func`.

The built-in CNNs (:mod:`fl_oracle.sim.model`) are pure functions of a flat parameter vector
with a hand-made stacked path. A :class:`ModuleArch` gives any module the same interface: its
parameters are a flat vector in ``named_parameters()`` order, one model runs through
:func:`torch.func.functional_call`, ``M`` models at once (local training of ``M`` clients,
``M`` candidate models on the validation set) through :func:`torch.func.vmap` over the stacked
parameters, and per-sample gradients for F through ``vmap(grad)``
(:func:`fl_oracle.sim.stats.probe_stats_vmap`).

Two conventions make a module a function of its parameters alone:

- the module runs in ``eval()`` mode (dropout off), and
- batch normalization is replaced by :func:`torch.func.replace_all_batch_norm_modules_`: it
  normalizes with the statistics of the batch it sees, in training and in evaluation, and
  keeps no running statistics (the usual choice for federated simulation under vmap; a
  module's other buffers are held fixed at their initial values). The per-sample gradients
  behind F run each sample as a batch of one, where a 2-D batch norm normalizes over the
  sample's own pixels; a module that cannot run a one-sample batch (``BatchNorm1d``) is
  refused with a message saying so.

A model is named either from :data:`ZOO` (defined here: torchvision does not install beside
the CPU torch these machines use) or as ``module:factory``, a callable importable from the
user's ``PYTHONPATH`` and called as ``factory(num_classes=C, in_channels=c)``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import torch
from torch import nn
from torch.func import functional_call, replace_all_batch_norm_modules_, vmap
from torch.nn.parameter import UninitializedParameter

from fl_oracle.errors import ConfigError

__all__ = ["ModuleArch", "ZOO", "load_factory", "module_arch"]


# ------------------------------------------------------------------------------- the zoo
class FedBNDigitCNN(nn.Module):
    """The digit CNN of FedBN / FedHEAL's layout (conv 5x5 64-64-128, FC 2048-512), for any
    input size (the first FC layer's width follows the feature map). Batch norm follows the
    convolutions; the original's batch norm on the FC layers is left out, because a
    one-sample batch (the per-sample gradients behind F) cannot normalize 1-D features."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, image_size: int = 32) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 64, 5, 1, 2),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 5, 1, 2),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 5, 1, 2),
            nn.BatchNorm2d(128),
            nn.ReLU(),
        )
        side = image_size // 4
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(128 * side * side, 2048),
            nn.ReLU(),
            nn.Linear(2048, 512),
            nn.ReLU(),
            nn.Linear(512, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class _Block(nn.Module):
    """ResNet basic block (two 3x3 convolutions with batch norm, identity or 1x1 shortcut)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.short(x))


class ResNet(nn.Module):
    """CIFAR-style ResNet (3x3 stem, four stages of basic blocks 64-128-256-512, global average
    pooling): ``blocks=(1,1,1,1)`` is ResNet-10, ``(2,2,2,2)`` ResNet-18."""

    def __init__(
        self, blocks: tuple[int, ...], num_classes: int = 10, in_channels: int = 3
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()
        )
        layers, cin = [], 64
        for i, (n, cout) in enumerate(zip(blocks, (64, 128, 256, 512), strict=False)):
            for j in range(n):
                layers.append(_Block(cin, cout, 2 if (i > 0 and j == 0) else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.head = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layers(self.stem(x)).mean(dim=(2, 3)))


def _fedbn(num_classes: int, in_channels: int, image_size: int) -> nn.Module:
    return FedBNDigitCNN(num_classes, in_channels, image_size)


def _resnet(blocks: tuple[int, ...]) -> Callable[[int, int, int], nn.Module]:
    def make(num_classes: int, in_channels: int, image_size: int) -> nn.Module:
        return ResNet(blocks, num_classes, in_channels)

    return make


fedbn_cnn = _fedbn
resnet10 = _resnet((1, 1, 1, 1))
resnet18 = _resnet((2, 2, 2, 2))


def _zoo() -> dict[str, tuple[Callable[[int, int, int], nn.Module], str]]:
    from fl_oracle.sim.architectures import arch_entries

    out = {}
    for name, e in arch_entries().items():
        if e.factory is None:
            continue
        mod, _, attr = e.factory.partition(":")
        make = globals()[attr] if mod == __name__ else load_factory(e.factory)
        out[name] = (make, e.summary)
    return out


def load_factory(spec: str) -> Callable[..., nn.Module]:
    """The callable named ``module:factory`` (ConfigError in one line when it cannot be had)."""
    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise ConfigError(f"model {spec!r}: expected module:factory, e.g. mymodels:make_net")
    try:
        mod = importlib.import_module(mod_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's to fix
        raise ConfigError(
            f"model {spec!r}: cannot import {mod_name!r} ({type(exc).__name__}: {_first_line(exc)}); "
            "is it on PYTHONPATH?"
        ) from None
    obj = mod
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ConfigError(f"model {spec!r}: {mod_name!r} has no attribute {attr!r}")
    if not callable(obj):
        raise ConfigError(f"model {spec!r}: {attr!r} is not callable")
    return obj


# ------------------------------------------------------------------------- the interface
@dataclass(frozen=True, eq=False)
class ModuleArch:
    """A torch module seen as a function of a flat parameter vector (the oracle's model API).

    Attributes:
        name: the model's name (a :data:`ZOO` key or ``module:factory``).
        make: ``make(seed) -> nn.Module``, a freshly initialized module (the factory called
            under ``torch.manual_seed(seed)``).
        n_classes: number of outputs.
        image_shape: (channels, height, width) of the inputs.
    """

    name: str
    make: Callable[[int], nn.Module] = field(repr=False)
    n_classes: int
    image_shape: tuple[int, int, int]
    pre_pool: int = 1  # no input pooling: inputs are used at their own resolution

    @cached_property
    def template(self) -> nn.Module:
        """The module whose structure every call runs (its parameter values are not used)."""
        return self.make(0)

    @cached_property
    def input_shape(self) -> tuple[int, int, int]:
        return self.image_shape

    @cached_property
    def shapes(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """Parameter names and shapes in flat-vector order (``named_parameters()``)."""
        return tuple((n, tuple(p.shape)) for n, p in self.template.named_parameters())

    @cached_property
    def size(self) -> int:
        return sum(math.prod(s) for _, s in self.shapes)

    def _buffers(self, device: torch.device) -> dict[str, torch.Tensor]:
        cache = self.__dict__.setdefault("_buffer_cache", {})
        if device not in cache:
            cache[device] = {n: b.to(device) for n, b in self.template.named_buffers()}
        return cache[device]

    def init(self, generator: torch.Generator) -> torch.Tensor:
        """The factory's own initialization, seeded by ``generator``'s seed; flat (P,)."""
        module = self.make(int(generator.initial_seed()))
        return torch.cat([p.detach().reshape(-1).float() for _, p in module.named_parameters()])

    def apply(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Logits (N, C) of one model with named parameters ``params`` on images (N, c, H, W)."""
        return functional_call(self.template, {**params, **self._buffers(x.device)}, (x,))

    def apply_stacked(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Logits (M, N, C) of M models (parameters (M, *shape)) on a shared input (N, c, H, W)
        or on one input per model (M, N, c, H, W)."""
        shared = x.dim() == len(self.image_shape) + 1
        if shared or x.device.type == "cpu":
            # model after model: on a shared input this bounds memory at one model's
            # activations, and on CPU it beats vmap's batched convolutions
            # (benchmarks/generic_model.py); vmap serves per-model inputs on a GPU
            M = next(iter(params.values())).shape[0]
            one = [x] * M if shared else list(x)
            return torch.stack(
                [self.apply({k: v[m] for k, v in params.items()}, one[m]) for m in range(M)]
            )
        return vmap(self.apply)(params, x)

    @cached_property
    def group_limit(self) -> int:
        """Most clients trained in one vmapped pass (their stacked parameters, gradients and
        optimizer state within about 512 MiB of float32 each)."""
        return max(1, (1 << 27) // max(1, self.size))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _checked(spec: str, module: object) -> nn.Module:
    if not isinstance(module, nn.Module):
        raise ConfigError(
            f"model {spec!r}: the factory returned {type(module).__name__}, not a torch.nn.Module"
        )
    replace_all_batch_norm_modules_(module)
    module.eval()
    return module


def module_arch(spec: str, *, n_classes: int, image_shape: tuple[int, int, int]) -> ModuleArch:
    """The :class:`ModuleArch` of a :data:`ZOO` name or a ``module:factory`` spec, checked by
    one forward pass of two inputs (ConfigError in one line on any mismatch)."""
    c, h, _ = image_shape
    if spec in ZOO:
        zoo_make = ZOO[spec][0]

        def factory(num_classes: int, in_channels: int) -> nn.Module:
            return zoo_make(num_classes, in_channels, h)

    else:
        factory = load_factory(spec)

    def make(seed: int) -> nn.Module:
        with torch.random.fork_rng(devices=[]):  # the CPU generator only, restored after
            torch.default_generator.manual_seed(seed)
            try:
                module = factory(num_classes=n_classes, in_channels=c)
            except Exception as exc:  # noqa: BLE001 - the user's factory failed
                raise ConfigError(
                    f"model {spec!r}: factory(num_classes={n_classes}, in_channels={c}) "
                    f"failed ({type(exc).__name__}: {_first_line(exc)})"
                ) from None
            module = _checked(spec, module)
            if any(isinstance(p, UninitializedParameter) for p in module.parameters()):
                try:  # lazy layers take their shapes (and seeded values) from one pass
                    with torch.no_grad():
                        module(torch.zeros(2, *image_shape))
                except Exception as exc:  # noqa: BLE001
                    raise ConfigError(
                        f"model {spec!r} cannot run images of shape {tuple(image_shape)} "
                        f"({type(exc).__name__}: {_first_line(exc)})"
                    ) from None
        return module

    arch = ModuleArch(spec, make, int(n_classes), tuple(int(v) for v in image_shape))
    if arch.size == 0:
        raise ConfigError(f"model {spec!r} has no parameters")
    params = {n: p.detach() for n, p in arch.template.named_parameters()}
    try:
        with torch.no_grad():
            arch.apply(params, torch.zeros(1, *image_shape))  # F takes one-sample batches
            out = arch.apply(params, torch.zeros(2, *image_shape))
    except Exception as exc:  # noqa: BLE001 - a module that cannot run these inputs
        raise ConfigError(
            f"model {spec!r} cannot run images of shape {tuple(image_shape)} "
            f"({type(exc).__name__}: {_first_line(exc)})"
        ) from None
    if not isinstance(out, torch.Tensor):
        raise ConfigError(
            f"model {spec!r}: forward returned a {type(out).__name__}, expected a tensor of "
            f"(batch, {n_classes}) logits"
        )
    if tuple(out.shape) != (2, n_classes):
        raise ConfigError(
            f"model {spec!r}: 2 images of shape {tuple(image_shape)} gave output "
            f"{tuple(out.shape)}, expected (2, {n_classes}) logits"
        )
    return arch


#: named generic models (fl_oracle.sim.architectures): name -> (factory(num_classes,
#: in_channels, image_size), description)
ZOO: dict[str, tuple[Callable[[int, int, int], nn.Module], str]] = _zoo()
