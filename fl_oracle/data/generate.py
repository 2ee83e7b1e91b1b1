"""Dispatch to the generators, in chunks, with an optional rich progress bar."""

from __future__ import annotations

import numpy as np

from .base import domain_index, split_index

__all__ = ["generate"]

_CHUNK = 250


def _one(domain: str, split: str, n: int, seed: int, start: int) -> tuple[np.ndarray, np.ndarray]:
    if domain in ("mnist", "usps"):
        from .gen_handwritten import generate_handwritten

        return generate_handwritten(domain, split, n, seed, start=start)
    from .gen_printed import generate_printed

    return generate_printed(domain, split, n, seed, start=start)


def generate(
    domain: str, split: str, n: int, seed: int, *, start: int = 0, progress: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Generated stand-in images ``start .. start+n-1`` of (domain, split, seed).

    Args:
        domain: one of ``mnist``, ``usps``, ``svhn``, ``syn``.
        split: ``"train"`` or ``"test"``.
        n: number of images (≥ 0).
        seed: non-negative integer.
        start: index of the first image; image i depends only on (seed, domain, split, i).
        progress: show a rich progress bar.

    Returns:
        uint8 images (n, 32, 32, 3) and int64 labels (n,).
    """
    domain_index(domain)
    split_index(split)
    xs, ys = [np.empty((0, 32, 32, 3), np.uint8)], [np.empty(0, np.int64)]
    bounds = list(range(start, start + n, _CHUNK))
    if not progress:
        for b in bounds:
            x, y = _one(domain, split, min(_CHUNK, start + n - b), seed, b)
            xs.append(x)
            ys.append(y)
        return np.concatenate(xs), np.concatenate(ys)
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(f"generating {domain} {split} stand-in", total=n)
        for b in bounds:
            k = min(_CHUNK, start + n - b)
            x, y = _one(domain, split, k, seed, b)
            xs.append(x)
            ys.append(y)
            bar.advance(task, k)
    return np.concatenate(xs), np.concatenate(ys)
