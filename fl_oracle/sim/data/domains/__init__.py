"""The registry of image domains: one module per domain, each registering a :class:`DomainSpec`.

A domain declares where its real files are found under a data root (``locate``, and the
``expected`` text an error shows), how its stand-in images are generated (``generate``), its
FedBN pickle folder, its default training samples per client, its image shape and class
count. The readers (:mod:`..real`), the generators' dispatch (:mod:`..generate`), the data
API and the oracle's configuration read only this registry, so adding a domain is one new
module here (importing this package imports every module in it, as the solvers' registry
does). The Digits-4 domains come first, in the contract's order; others follow by name.
"""

from __future__ import annotations

import importlib
import pkgutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from selection.schema import DEFAULT_DOMAINS

from ..base import DataError

if TYPE_CHECKING:  # pragma: no cover
    from ..sources import RealSource

__all__ = [
    "DomainSpec",
    "register_domain",
    "domain_spec",
    "domain_index",
    "is_builtin",
    "check_generated",
    "registered_domains",
]

Arrays = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class DomainSpec:
    """What fedsel knows about one image domain.

    Attributes:
        name: the domain's name (the ``domain`` column and ``U_<name>``).
        locate: ``(root, split) -> RealSource | None``, the domain's own file layouts.
        expected: ``(root text, split) -> str``, where ``locate`` looked (for error messages).
        generate: ``(split, n, seed, start) -> (uint8 (n, H, W, C) images, int64 labels)``,
            stand-in images ``start .. start+n-1``; image i depends only on (seed, split, i).
        fedbn_dir: the FedBN release's folder of ``{train,test}.pkl`` (None: none).
        samples_per_client: default training samples per client.
        image_shape: (H, W, C) of the images ``generate`` makes (checked); real files are
            served as RGB 32×32 by :func:`~fl_oracle.sim.data.sources.arrays_reader`, the
            Digits pipeline's input.
        n_classes: number of classes (labels are checked against it).
    """

    name: str
    locate: Callable[[Path, str], RealSource | None]
    expected: Callable[[str, str], str]
    generate: Callable[[str, int, int, int], Arrays]
    fedbn_dir: str | None = None
    samples_per_client: int = 300
    image_shape: tuple[int, int, int] = (32, 32, 3)
    n_classes: int = 10


_SPECS: dict[str, DomainSpec] = {}
_LOADED = False


def register_domain(spec: DomainSpec) -> DomainSpec:
    """Add ``spec`` to the registry under ``spec.name`` (a domain module calls this)."""
    if not spec.name or "/" in spec.name:
        raise ValueError(f"domain name {spec.name!r} is not a plain name")
    _SPECS[spec.name] = spec
    return spec


def _load() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for mod in pkgutil.iter_modules(__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{__name__}.{mod.name}")


def registered_domains() -> tuple[str, ...]:
    """Every registered domain: the Digits-4 ones in the contract's order, then by name."""
    _load()
    first = [d for d in DEFAULT_DOMAINS if d in _SPECS]
    return (*first, *sorted(d for d in _SPECS if d not in DEFAULT_DOMAINS))


def domain_spec(name: str) -> DomainSpec:
    """The registered spec of ``name``; DataError naming the registered ones otherwise."""
    _load()
    if name not in _SPECS:
        raise DataError(
            f"unknown domain {name!r}; expected one of {', '.join(registered_domains())}"
        )
    return _SPECS[name]


def domain_index(name: str) -> int:
    """The number that keys ``name``'s random streams: its position in the contract's
    Digits-4 order (0-3, as always), or for any other domain a stable hash of its name
    (so adding a domain never moves another's seeds); DataError if unknown."""
    domain_spec(name)
    if name in DEFAULT_DOMAINS:
        return DEFAULT_DOMAINS.index(name)
    return len(DEFAULT_DOMAINS) + zlib.crc32(name.encode()) % (1 << 24)


def is_builtin(name: str) -> bool:
    """Whether ``name`` comes from a module of this package (a spawned worker process, which
    imports only those, knows it too)."""
    spec = domain_spec(name)
    return getattr(spec.generate, "__module__", "").startswith(__name__ + ".")


def check_generated(name: str, x: np.ndarray, y: np.ndarray) -> None:
    """DataError unless a generator's output has the spec's image shape and class range."""
    spec = domain_spec(name)
    if tuple(x.shape[1:]) != tuple(spec.image_shape):
        raise DataError(
            f"domain {name!r}: its generator made images of shape {tuple(x.shape[1:])}, "
            f"the spec declares {tuple(spec.image_shape)}"
        )
    if len(y) and (int(y.min()) < 0 or int(y.max()) >= spec.n_classes):
        raise DataError(f"domain {name!r}: labels outside 0..{spec.n_classes - 1}")
