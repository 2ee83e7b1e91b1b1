"""The registry of named models, torch-free: what ``--model NAME`` may name.

Each entry is either a built-in CNN of the hand-made stacked path (``stacked``: the fields of
:class:`fl_oracle.sim.model.Arch`) or a generic ``nn.Module`` (``factory``: the
``module:attr`` of a ``factory(num_classes, in_channels, image_size)``, run through
``torch.func``). :data:`fl_oracle.sim.model.ARCHS`, :data:`fl_oracle.sim.torch_model.ZOO`,
the configuration's checks and the ``--model`` help are all read from here, so adding a
named model is one :func:`register_arch` call (``module:factory`` needs none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ArchEntry",
    "register_arch",
    "arch_entries",
    "stacked_names",
    "generic_names",
    "model_names",
    "model_help",
]


@dataclass(frozen=True)
class ArchEntry:
    """One named model (see the module docstring)."""

    name: str
    summary: str
    stacked: dict[str, Any] | None = field(default=None)
    factory: str | None = None

    def __post_init__(self) -> None:
        if (self.stacked is None) == (self.factory is None):
            raise ValueError(f"model {self.name!r}: give stacked fields or a factory, not both")


_ENTRIES: dict[str, ArchEntry] = {}


def register_arch(entry: ArchEntry) -> ArchEntry:
    """Add a named model."""
    _ENTRIES[entry.name] = entry
    return entry


def arch_entries() -> dict[str, ArchEntry]:
    """Every named model, in registration order."""
    return dict(_ENTRIES)


def stacked_names() -> tuple[str, ...]:
    """The built-in CNNs of the stacked path."""
    return tuple(n for n, e in _ENTRIES.items() if e.stacked is not None)


def generic_names() -> tuple[str, ...]:
    """The named generic models (``torch.func`` path)."""
    return tuple(n for n, e in _ENTRIES.items() if e.factory is not None)


def model_names() -> tuple[str, ...]:
    """Every named model: the built-in CNNs, then the generic ones."""
    return (*stacked_names(), *generic_names())


def model_help() -> str:
    """The ``--model`` help text."""
    return (
        " | ".join((*model_names(), "module:factory"))
        + " (a factory(num_classes=, in_channels=) on PYTHONPATH)."
    )


# 16x16 input, 3x3 convs: cheapest, the default on CPU.
register_arch(
    ArchEntry(
        "cnn",
        "16x16 input, convs 16-32 (3x3), FC 64",
        stacked=dict(pre_pool=2, convs=((16, 3, 1), (32, 3, 1)), hidden=64),
    )
)
register_arch(
    ArchEntry(
        "cnn-small",
        "16x16 input, convs 8-16 (3x3), FC 32",
        stacked=dict(pre_pool=2, convs=((8, 3, 1), (16, 3, 1)), hidden=32),
    )
)
# the classic LeNet-style digits CNN on 32x32 input.
register_arch(
    ArchEntry(
        "cnn-large",
        "32x32 input, convs 16-32 (5x5), FC 64",
        stacked=dict(pre_pool=1, convs=((16, 5, 0), (32, 5, 0)), hidden=64),
    )
)
register_arch(
    ArchEntry(
        "fedbn-cnn",
        "FedBN/FedHEAL digit CNN layout, conv 64-64-128 + FC 2048-512",
        factory="fl_oracle.sim.torch_model:fedbn_cnn",
    )
)
register_arch(
    ArchEntry(
        "resnet10",
        "ResNet-10, CIFAR stem, batch norm",
        factory="fl_oracle.sim.torch_model:resnet10",
    )
)
register_arch(
    ArchEntry(
        "resnet18",
        "ResNet-18, CIFAR stem, batch norm",
        factory="fl_oracle.sim.torch_model:resnet18",
    )
)
