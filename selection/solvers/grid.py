"""The grid path every sweep goes through: points solved by copies of one solver per thread.

Kept apart from :mod:`selection.solvers.base` (whose default ``sweep_front`` uses it) and
:mod:`selection.solvers.sweeps` (the ε/δ/weight sweeps), so that neither imports the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from selection.problem import SelectionProblem
from selection.progress import ProgressFn, report

__all__ = ["_Counter", "_run_grid"]


class _Counter:
    """Counts finished points and reports them (thread-safe: grid points run in threads)."""

    def __init__(self, progress: ProgressFn | None, total: int | None, label: str) -> None:
        self.progress, self.total, self.label = progress, total, label
        self.done = 0
        self._lock = threading.Lock()

    def __call__(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            report(self.progress, self.done, self.total, self.label)


def _run_grid(
    make: Callable[[], object],
    problem: SelectionProblem,
    grid: list[float],
    n_jobs: int,
    progress: ProgressFn | None,
    label: str,
) -> list:
    """Solve ``make().with_param(v)`` for each grid value, in ``n_jobs`` threads."""
    advance = _Counter(progress, len(grid), label)

    def run(part: list[float]) -> list:
        solver = make()
        out = []
        for v in part:
            out.append(solver.with_param(v).solve(problem))
            advance()
        return out

    if n_jobs <= 1 or len(grid) <= 1:
        return run(grid)
    parts = [list(p) for p in np.array_split(np.array(grid, dtype=float), n_jobs) if len(p)]
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        chunks = list(pool.map(run, parts))
    return [r for c in chunks for r in c]
