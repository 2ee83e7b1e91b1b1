"""Where a domain's real images come from: :class:`RealSource` and the helpers that build one.

Kept apart from :mod:`.real` (which finds sources through the domain registry) so that the
domain modules of :mod:`.domains` can build sources without importing the registry's users.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .imageops import to_rgb32

__all__ = ["RealSource", "arrays_reader", "first_file"]


@dataclass(frozen=True)
class RealSource:
    """Real files found for one (domain, split).

    Attributes:
        domain: domain name.
        split: ``"train"`` or ``"test"``.
        path: the file or folder read (shown to the user).
        read: callable (n, rng) -> (uint8 (N, 32, 32, 3) images, int64 labels).
    """

    domain: str
    split: str
    path: Path
    read: Callable[[int | None, np.random.Generator], tuple[np.ndarray, np.ndarray]]


def first_file(*paths: Path) -> Path | None:
    """The first of ``paths`` that is a file, or None."""
    return next((p for p in paths if p.is_file()), None)


def _subsample(
    x: np.ndarray, y: np.ndarray, n: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    if n is None or n >= len(y):
        return x, y
    idx = rng.permutation(len(y))[:n]
    return x[idx], y[idx]


def arrays_reader(load: Callable[[], tuple[np.ndarray, np.ndarray]]):
    """A ``RealSource.read`` over a loader of whole arrays: seeded subsample, then RGB 32×32."""

    def read(n: int | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        x, y = load()
        x, y = _subsample(x, y, n, rng)
        return to_rgb32(x), y

    return read
