"""Locating the real Digits-4 files under a user's data root, and loading them.

Layouts looked for under ``root`` (first match wins, per domain and split):

=========  ==============================================================================
mnist      ``mnist/`` or ``MNIST/raw/``: ``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``;
           FedBN ``MNIST/{train,test}.pkl``
usps       ``usps/`` or ``root``: ``usps.bz2`` (train), ``usps.t.bz2`` (test);
           FedBN ``USPS/{train,test}.pkl``
svhn       ``svhn/``, ``SVHN/`` or ``root``: ``{train,test}_32x32.mat``;
           FedBN ``SVHN/{train,test}.pkl``
syn        ``syn/{train,val}/<digit>/*.png`` (val is the test split);
           ``syn/`` or ``root``: ``synth_{train,test}_32x32.mat``;
           FedBN ``SynthDigits/{train,test}.pkl``
=========  ==============================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import readers
from .base import check_images, domain_index, split_index
from .imageops import to_rgb32

__all__ = ["RealSource", "expected_files", "find_real", "load_real"]


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


def _first(*paths: Path) -> Path | None:
    return next((p for p in paths if p.is_file()), None)


def _subsample(
    x: np.ndarray, y: np.ndarray, n: int | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    if n is None or n >= len(y):
        return x, y
    idx = rng.permutation(len(y))[:n]
    return x[idx], y[idx]


def _arrays(load: Callable[[], tuple[np.ndarray, np.ndarray]]):
    def read(n: int | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        x, y = load()
        x, y = _subsample(x, y, n, rng)
        return to_rgb32(x), y

    return read


def _mnist(root: Path, split: str) -> RealSource | None:
    pre = "train" if split == "train" else "t10k"
    for d in (root / "mnist", root / "MNIST" / "raw"):
        names = [
            (f"{pre}-images-idx3-ubyte", f"{pre}-labels-idx1-ubyte"),
            (f"{pre}-images.idx3-ubyte", f"{pre}-labels.idx1-ubyte"),
        ]
        for img, lab in names:
            xi = _first(d / img, d / f"{img}.gz")
            yi = _first(d / lab, d / f"{lab}.gz")
            if xi and yi:
                return RealSource(
                    "mnist", split, xi, _arrays(lambda xi=xi, yi=yi: readers.read_mnist_idx(xi, yi))
                )
    return None


def _usps(root: Path, split: str) -> RealSource | None:
    name = "usps.bz2" if split == "train" else "usps.t.bz2"
    p = _first(root / "usps" / name, root / name)
    return RealSource("usps", split, p, _arrays(lambda: readers.read_usps_libsvm(p))) if p else None


def _svhn(root: Path, split: str) -> RealSource | None:
    name = f"{split}_32x32.mat"
    p = _first(root / "svhn" / name, root / "SVHN" / name, root / name)
    return RealSource("svhn", split, p, _arrays(lambda: readers.read_mat(p))) if p else None


def _syn(root: Path, split: str) -> RealSource | None:
    subs = ("train",) if split == "train" else ("val", "test")
    for sub in subs:
        folder = root / "syn" / sub
        if folder.is_dir() and any((folder / str(d)).is_dir() for d in range(10)):

            def read(n, rng, folder=folder):
                files = readers.folder_files(folder)
                if n is not None and n < len(files):
                    files = [files[i] for i in rng.permutation(len(files))[:n]]
                return readers.read_image_files(files)

            return RealSource("syn", split, folder, read)
    name = f"synth_{split}_32x32.mat"
    p = _first(root / "syn" / name, root / name)
    return RealSource("syn", split, p, _arrays(lambda: readers.read_mat(p))) if p else None


_NATIVE = {"mnist": _mnist, "usps": _usps, "svhn": _svhn, "syn": _syn}
_FEDBN_DIR = {"mnist": "MNIST", "usps": "USPS", "svhn": "SVHN", "syn": "SynthDigits"}


def find_real(domain: str, split: str, root: str | Path | None) -> RealSource | None:
    """The real files for (domain, split) under ``root``, or None if there are none."""
    domain_index(domain)
    split_index(split)
    if root is None:
        return None
    root = Path(root)
    found = _NATIVE[domain](root, split)
    if found is None:
        p = root / _FEDBN_DIR[domain] / f"{split}.pkl"
        if p.is_file():
            found = RealSource(domain, split, p, _arrays(lambda: readers.read_fedbn_pickle(p)))
    return found


def expected_files(domain: str, split: str, root: str | Path) -> str:
    """Human-readable list of where (domain, split) files were looked for."""
    r = str(root).rstrip("/")
    fed = f"{r}/{_FEDBN_DIR[domain]}/{split}.pkl"
    if domain == "mnist":
        pre = "train" if split == "train" else "t10k"
        files = f"{pre}-images-idx3-ubyte[.gz] + {pre}-labels-idx1-ubyte[.gz]"
        return f"{r}/mnist/{files} or {r}/MNIST/raw/{files} or {fed}"
    if domain == "usps":
        name = "usps.bz2" if split == "train" else "usps.t.bz2"
        return f"{r}/usps/{name} or {r}/{name} or {fed}"
    if domain == "svhn":
        name = f"{split}_32x32.mat"
        return f"{r}/svhn/{name} or {r}/SVHN/{name} or {r}/{name} or {fed}"
    sub = "train" if split == "train" else "val"
    name = f"synth_{split}_32x32.mat"
    return f"{r}/syn/{sub}/<digit>/*.png or {r}/syn/{name} or {r}/{name} or {fed}"


def load_real(src: RealSource, n: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Read a located source; a seeded subsample of ``n`` images if ``n`` is given.

    Returns:
        uint8 images (N, 32, 32, 3) and int64 labels (N,), in file order when ``n`` is None.
    """
    rng = np.random.default_rng([seed, domain_index(src.domain), split_index(src.split), 7])
    x, y = src.read(n, rng)
    return check_images(x, y, str(src.path))
