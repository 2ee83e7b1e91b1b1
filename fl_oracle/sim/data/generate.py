"""Dispatch to the domains' generators (their registered ``generate``, :mod:`.domains`) in
chunks, in parallel worker processes for large requests.

Image ``i`` depends only on (seed, domain, split, i), so chunks are independent and the
output is identical whatever the number of workers. Workers: ``$FEDSEL_DATA_WORKERS`` if set
(parallel from two chunks up); otherwise, on machines with at least 4 CPUs, ``cpu_count // 2``
(at most 8) for requests of :data:`PARALLEL_MIN` images or more, since starting spawned
workers costs a few seconds; else one process.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from selection.progress import ProgressFn, report

from .base import DataError, split_index

__all__ = ["PARALLEL_MIN", "generate", "n_workers"]

_CHUNK = 250
PARALLEL_MIN = 4000  # images; below this, starting worker processes costs more than it saves


def _one(domain: str, split: str, n: int, seed: int, start: int) -> tuple[np.ndarray, np.ndarray]:
    from .domains import domain_spec

    return domain_spec(domain).generate(split, n, seed, start)


def n_workers(n: int) -> int:
    """Worker processes for a request of ``n`` images (see the module docstring)."""
    from selection.env import EnvError, env_value

    try:  # read and checked as every variable fedsel reads (selection.env)
        k = env_value("FEDSEL_DATA_WORKERS")
    except EnvError as exc:
        raise DataError(str(exc)) from None
    if k is not None:
        return int(k) if n > _CHUNK else 1
    cpus = os.cpu_count() or 1
    return min(8, cpus // 2) if cpus >= 4 and n >= PARALLEL_MIN else 1


def _duration(elapsed: float, done: int, n: int) -> str:
    """The time left at the rate so far, in words (``3 s``, ``4 min``, ``1.2 h``)."""
    left = elapsed / max(done, 1) * (n - done)
    if left < 90:
        return f"{left:.0f} s"
    if left < 5400:
        return f"{left / 60:.0f} min"
    return f"{left / 3600:.1f} h"


def generate(
    domain: str,
    split: str,
    n: int,
    seed: int,
    *,
    start: int = 0,
    progress: ProgressFn | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Generated stand-in images ``start .. start+n-1`` of (domain, split, seed).

    Args:
        domain: a registered domain (:func:`.domains.registered_domains`).
        split: ``"train"`` or ``"test"``.
        n: number of images (≥ 0).
        seed: non-negative integer.
        start: index of the first image; image i depends only on (seed, domain, split, i).
        progress: ``(done, total, label)`` callback over images (:mod:`selection.progress`).

    Returns:
        uint8 images (n, 32, 32, 3) and int64 labels (n,).
    """
    from .domains import check_generated, is_builtin

    split_index(split)
    chunks = [(b, min(_CHUNK, start + n - b)) for b in range(start, start + n, _CHUNK)]
    # spawned workers import only the package's own domain modules
    workers = n_workers(n) if is_builtin(domain) else 1
    parts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    base = f"generating {domain} {split} stand-in"
    label = base
    done = 0
    t0 = time.perf_counter()

    def tell(done: int) -> None:
        """Progress, with the time left said from the first chunk on (the rate so far)."""
        nonlocal label
        if done < n:
            label = f"{base} ({n:,} images: about {_duration(time.perf_counter() - t0, done, n)} left; cached afterwards)"
        report(progress, done, n, label)

    if workers == 1:
        for b, k in chunks:
            parts[b] = _one(domain, split, k, seed, b)
            done += k
            tell(done)
    else:
        ctx = multiprocessing.get_context("spawn")  # no fork of a process holding torch
        with ProcessPoolExecutor(min(workers, len(chunks)), mp_context=ctx) as pool:
            futs = {pool.submit(_one, domain, split, k, seed, b): (b, k) for b, k in chunks}
            for fut, (b, k) in futs.items():
                parts[b] = fut.result()
                done += k
                tell(done)
    xs = [parts[b][0] for b, _ in chunks] or [np.empty((0, 32, 32, 3), np.uint8)]
    ys = [parts[b][1] for b, _ in chunks] or [np.empty(0, np.int64)]
    x, y = np.concatenate(xs), np.concatenate(ys)
    if n:
        check_generated(domain, x, y)
    return x, y
