"""On-disk cache of generated stand-ins: one ``.npz`` (uint8 images, int64 labels) per key.

The folder is ``cache_dir`` if given, else ``$FEDSEL_CACHE``, else ``$XDG_CACHE_HOME/fedsel``,
else ``~/.cache/fedsel``. Files are keyed by (domain, split, n, seed, generator version) and
named as generated stand-ins (``generated-standin-v4-mnist-train-n5000-s0.npz``) so nobody
mistakes them for the real datasets. Because image ``i`` depends only on (seed, domain, split,
i), a request for n images is served from the prefix of a cached file with more images, and a
cached file with fewer is extended (the generator resumes at its end, then the smaller file is
removed). Writes go through a temp file and an atomic rename.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

import numpy as np

from selection.atomic import atomic_path

__all__ = ["GENERATOR_VERSION", "cache_root", "cache_path", "read_cached", "write_cached"]

GENERATOR_VERSION = 4  # bump whenever a generator's output changes


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache folder (not created here)."""
    if cache_dir is not None:
        return Path(cache_dir)
    from selection.env import env_value

    own = env_value("FEDSEL_CACHE")  # checked as every variable fedsel reads (selection.env)
    if own is not None:
        return Path(own)
    xdg = env_value("XDG_CACHE_HOME")
    if xdg is not None:
        return Path(xdg) / "fedsel"
    return Path.home() / ".cache" / "fedsel"


def _stem(domain: str, split: str, seed: int) -> str:
    return f"generated-standin-v{GENERATOR_VERSION}-{domain}-{split}"


def cache_path(root: Path, domain: str, split: str, n: int, seed: int) -> Path:
    """File holding the first ``n`` generated images of (domain, split, seed)."""
    return root / f"{_stem(domain, split, seed)}-n{n}-s{seed}.npz"


def read_cached(
    root: Path, domain: str, split: str, n: int, seed: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """Cached images of (domain, split, seed): the first ``n``, or fewer if no file holds ``n``.

    Returns the first ``n`` images of the smallest file holding at least ``n``; failing that,
    all images of the largest file (a prefix the caller extends); None if nothing is cached.

    A corrupt or unreadable cache file is ignored (it will be regenerated and overwritten).
    """
    sizes = _cached_sizes(root, domain, split, seed)
    # the smallest file holding n images, else the largest (a prefix to extend)
    for size in [s for s in sizes if s >= n] + [s for s in reversed(sizes) if s < n]:
        try:
            with np.load(cache_path(root, domain, split, size, seed)) as z:
                x, y = z["images"], z["labels"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            continue  # truncated or damaged: regenerated and overwritten
        if x.shape == (size, 32, 32, 3) and x.dtype == np.uint8 and y.shape == (size,):
            # the whole file: no copy; a prefix: copied, so the larger array is not kept
            return (x if n >= size else x[:n].copy()), y[:n].astype(np.int64)
    return None


def _cached_sizes(root: Path, domain: str, split: str, seed: int) -> list[int]:
    if not root.is_dir():
        return []
    pat = re.compile(rf"{re.escape(_stem(domain, split, seed))}-n(\d+)-s{seed}\.npz")
    return sorted(int(m.group(1)) for p in root.iterdir() if (m := pat.fullmatch(p.name)))


def write_cached(
    root: Path, domain: str, split: str, seed: int, images: np.ndarray, labels: np.ndarray
) -> Path:
    """Store a generated stack atomically; returns the file written."""
    root.mkdir(parents=True, exist_ok=True)
    path = cache_path(root, domain, split, len(labels), seed)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, images=images, labels=labels)
    for size in _cached_sizes(root, domain, split, seed):  # smaller files are prefixes of this one
        if size < len(labels):
            cache_path(root, domain, split, size, seed).unlink(missing_ok=True)
    return path
