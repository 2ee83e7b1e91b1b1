"""Readers for the files the real Digits-4 datasets ship as (never a download).

Each reader returns raw arrays: uint8 images of shape (N, H, W) or (N, H, W, 3) and int64
labels in 0..9; :mod:`real` locates the files, subsamples and brings images to 32×32×3.

- MNIST raw IDX (plain or ``.gz``): big-endian header, magic 2051 (images) / 2049 (labels),
  then the dimensions as uint32.
- USPS LIBSVM (``usps.bz2``, ``usps.t.bz2``): ``label 1:v … 256:v``, labels 1–10, v in [−1, 1].
- SVHN / Ganin's SynthDigits ``.mat``: ``X`` (32, 32, 3, N), ``y`` (N, 1), label 10 means 0.
- An image folder ``<dir>/<digit>/*.png``.
- FedBN's prepared pickles ``(images, labels)`` through :mod:`safe_pickle`.
"""

from __future__ import annotations

import bz2
import gzip
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from .base import DataError
from .safe_pickle import load_numpy_pickle

__all__ = [
    "IMAGE_SUFFIXES",
    "folder_files",
    "read_fedbn_pickle",
    "read_idx",
    "read_image_files",
    "read_mat",
    "read_mnist_idx",
    "read_usps_libsvm",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
_IDX_MAGIC = {"images": 2051, "labels": 2049}


def _open_maybe_gz(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return path.read_bytes()
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None


def read_idx(path: str | Path, kind: str) -> np.ndarray:
    """Read an IDX file (plain or gzipped) of unsigned bytes.

    Args:
        path: the file.
        kind: ``"images"`` (magic 2051, 3 dims) or ``"labels"`` (magic 2049, 1 dim).

    Returns:
        uint8 array of shape (N, rows, cols) or (N,).
    """
    path = Path(path)
    raw = _open_maybe_gz(path)
    ndim = 3 if kind == "images" else 1
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise DataError(f"{path}: IDX file too short ({len(raw)} bytes)")
    magic = int.from_bytes(raw[:4], "big")
    if magic != _IDX_MAGIC[kind]:
        raise DataError(f"{path}: IDX magic {magic}, expected {_IDX_MAGIC[kind]} for {kind}")
    dims = [int.from_bytes(raw[4 + 4 * k : 8 + 4 * k], "big") for k in range(ndim)]
    size = int(np.prod(dims))
    if len(raw) - head != size:
        raise DataError(f"{path}: header says {dims} = {size} bytes, file holds {len(raw) - head}")
    return np.frombuffer(raw, np.uint8, offset=head).reshape(dims).copy()


def _nonempty(n: int, where: str | Path) -> None:
    """A dataset file with no images is an error (every reader and ``data preview`` agree)."""
    if n == 0:
        raise DataError(f"{where}: holds 0 images; a dataset file needs at least one")


def read_mnist_idx(images: str | Path, labels: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """MNIST from its two IDX files: uint8 (N, 28, 28) images and int64 (N,) labels."""
    x = read_idx(images, "images")
    _nonempty(len(x), images)
    y = read_idx(labels, "labels").astype(np.int64)
    if len(x) != len(y):
        raise DataError(f"{images}: {len(x)} images but {labels} holds {len(y)} labels")
    if y.size and y.max() > 9:
        raise DataError(f"{labels}: label {int(y.max())} outside 0..9")
    return x, y


def read_usps_libsvm(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """USPS in LIBSVM format (bz2): uint8 (N, 16, 16) images and labels 0..9.

    Labels 1..10 become 0..9; values in [−1, 1] are mapped to [0, 255] (missing entries are
    LIBSVM zeros, i.e. mid grey).
    """
    path = Path(path)
    try:
        with bz2.open(path, "rt") as fh:
            lines = [ln for ln in fh.read().splitlines() if ln.strip()]
    except (OSError, EOFError, ValueError) as exc:
        raise DataError(f"{path}: cannot read bz2 LIBSVM ({exc})") from None
    _nonempty(len(lines), path)
    x = np.zeros((len(lines), 256), np.float32)
    y = np.empty(len(lines), np.int64)
    for r, line in enumerate(lines):
        parts = line.split()
        try:
            y[r] = round(float(parts[0])) - 1
            for tok in parts[1:]:
                k, v = tok.split(":")
                x[r, int(k) - 1] = float(v)
        except (ValueError, IndexError):
            raise DataError(
                f"{path}: line {r + 1} is not 'label i:v ...' with i in 1..256"
            ) from None
    if y.size and (y.min() < 0 or y.max() > 9):
        bad = int(y[(y < 0) | (y > 9)][0]) + 1
        raise DataError(f"{path}: label {bad} outside 1..10")
    img = np.clip((x + 1.0) * 127.5, 0, 255).round().astype(np.uint8)
    return img.reshape(-1, 16, 16), y


def read_mat(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """SVHN-layout ``.mat`` (SVHN, Ganin's synth): uint8 (N, 32, 32, 3) and labels (10 → 0)."""
    from scipy.io import loadmat

    path = Path(path)
    try:
        mat = loadmat(path, variable_names=["X", "y"])
    except (OSError, ValueError, NotImplementedError, TypeError) as exc:
        raise DataError(f"{path}: cannot read .mat ({exc})") from None
    if "X" not in mat or "y" not in mat:
        raise DataError(f"{path}: .mat lacks variable 'X' or 'y'")
    x, y = np.asarray(mat["X"]), np.asarray(mat["y"]).reshape(-1)
    if x.ndim != 4 or x.shape[:3] != (32, 32, 3):
        raise DataError(f"{path}: X has shape {x.shape}, expected (32, 32, 3, N)")
    if x.shape[3] != y.shape[0]:
        raise DataError(f"{path}: X holds {x.shape[3]} images but y {y.shape[0]} labels")
    y = y.astype(np.int64)
    y[y == 10] = 0
    if y.size and (y.min() < 0 or y.max() > 9):
        raise DataError(f"{path}: label {int(y[(y < 0) | (y > 9)][0])} outside 0..10")
    _nonempty(x.shape[3], path)
    return np.ascontiguousarray(np.moveaxis(x, 3, 0)).astype(np.uint8), y


def folder_files(folder: str | Path) -> list[tuple[Path, int]]:
    """The (file, label) pairs of an image folder ``<folder>/<digit>/*.png``, sorted."""
    folder = Path(folder)
    out = []
    for d in range(10):
        sub = folder / str(d)
        if sub.is_dir():
            out += [(p, d) for p in sorted(sub.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES]
    if not out:
        raise DataError(f"{folder}: no images in {folder}/<digit>/*.png")
    return out


def read_image_files(files: Sequence[tuple[Path, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Read (file, label) pairs: uint8 (N, 32, 32, 3) RGB images resized to 32×32 if needed."""
    x = np.empty((len(files), 32, 32, 3), np.uint8)
    for i, (p, _) in enumerate(files):
        try:
            with Image.open(p) as im:
                im = im.convert("RGB")
                if im.size != (32, 32):
                    im = im.resize((32, 32), Image.Resampling.BILINEAR)
                x[i] = np.asarray(im)
        except OSError as exc:
            raise DataError(f"{p}: cannot read image ({exc})") from None
    return x, np.array([d for _, d in files], np.int64)


def _pixels_to_uint8(x: np.ndarray, where: str) -> np.ndarray:
    """Bring FedBN's arrays (uint8, [0,1] or [−1,1] floats, NCHW or NHWC) to uint8 NHW[C]."""
    if x.ndim == 4 and x.shape[1] in (1, 3) and x.shape[-1] not in (1, 3):
        x = np.moveaxis(x, 1, -1)
    if x.ndim == 4 and x.shape[-1] == 1:
        x = x[..., 0]
    if x.ndim not in (3, 4) or (x.ndim == 4 and x.shape[-1] != 3):
        raise DataError(f"{where}: images have shape {x.shape}, expected (N, H, W[, 3])")
    if x.dtype == np.uint8:
        return x
    if not np.issubdtype(x.dtype, np.number):
        raise DataError(f"{where}: images have dtype {x.dtype}, expected numbers")
    x = x.astype(np.float32)
    if not np.isfinite(x).all():
        raise DataError(f"{where}: images contain NaN or inf")
    lo, hi = float(x.min(initial=0.0)), float(x.max(initial=0.0))
    if lo < 0.0 and lo >= -1.0 and hi <= 1.0:
        x = (x + 1.0) * 127.5
    elif hi <= 1.0:
        x = x * 255.0
    return np.clip(x, 0, 255).round().astype(np.uint8)


def read_fedbn_pickle(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """FedBN's prepared ``(images, labels)`` pickle, unpickled with numpy arrays only."""
    where = str(path)
    obj = load_numpy_pickle(path)
    if not isinstance(obj, (tuple, list)) or len(obj) != 2:
        raise DataError(
            f"{where}: expected a pickled (images, labels) pair, got {type(obj).__name__}"
        )
    x, y = np.asarray(obj[0]), np.asarray(obj[1]).reshape(-1)
    _nonempty(len(x) if x.ndim else 0, where)
    if len(x) != len(y):
        raise DataError(f"{where}: {len(x)} images but {len(y)} labels")
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        raise DataError(f"{where}: labels are not integers")
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() > 9):
        raise DataError(f"{where}: label {int(y[(y < 0) | (y > 9)][0])} outside 0..9")
    return _pixels_to_uint8(x, where), y
