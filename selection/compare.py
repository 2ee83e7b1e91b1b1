"""Every formulation on the same round, judged against one reference front.

:func:`compare_methods` runs the weighted-sum grid, the ε sweep (complete by default), the
max-min δ grid, NSGA-II and — when C(N, K) is small enough — exhaustive enumeration on one
:class:`~selection.problem.SelectionProblem`, in the (max U, min gap) plane. Each method's
points are measured with :mod:`selection.indicators` against the exact front when enumeration
is feasible, else against the non-dominated union of all methods' points, with one
normalization (the reference front's extremes, i.e. the payoff table) and one reference point.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from selection.errors import TooLargeError
from selection.indicators import (
    Normalization,
    hypervolume_ratio,
    igd,
    on_front_count,
    reference_front,
)
from selection.pareto import results_to_frame, sweep_delta, sweep_eps, sweep_weighted
from selection.problem import SelectionProblem
from selection.solvers.base import make_solver
from selection.solvers.exhaustive import DEFAULT_MAX_COUNT, exact_front

__all__ = [
    "METHODS",
    "DEFAULT_DELTA",
    "COMPARE_COLUMNS",
    "Comparison",
    "default_weight_grid",
    "run_method",
    "compare_methods",
]

METHODS = ("weighted", "eps", "maxmin", "nsga2", "exhaustive")
DEFAULT_DELTA: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0)
COMPARE_COLUMNS = (
    "method",
    "points",
    "front_points",
    "on_front",
    "hv_ratio",
    "igd",
    "seconds",
    "reference",
)
_OBJ = ("utility", "gap")
_OK = ("optimal", "feasible", "time_limit")


def default_weight_grid(n: int = 11) -> list[tuple[float, float]]:
    """(w_U, w_R) pairs from (1, 0) to (0, 1): utility against the worst domain's utility."""
    return [(round(1 - a, 6), round(a, 6)) for a in np.linspace(0.0, 1.0, n)]


def run_method(
    problem: SelectionProblem,
    method: str,
    *,
    eps: Sequence[float] | None = None,
    delta: Sequence[float] = DEFAULT_DELTA,
    weights: Sequence[Sequence[float]] | None = None,
    backend: str = "auto",
    n_jobs: int = 1,
    time_limit: float | None = None,
    seed: int = 0,
    max_count: int = DEFAULT_MAX_COUNT,
    progress: bool = False,
    objectives: Sequence[str] = _OBJ,
) -> pd.DataFrame:
    """One method's front table (:func:`selection.pareto.results_to_frame` rows).

    Args:
        problem: the round's problem.
        method: one of :data:`METHODS`.
        eps: ε grid (percentage points); None = the complete sweep.
        delta: δ grid for ``maxmin`` (percentage points).
        weights: weight vectors for ``weighted``; None = :func:`default_weight_grid`.
        backend, n_jobs, time_limit: passed to the ε/δ sweeps.
        seed: NSGA-II and MILP seed.
        max_count: enumeration limit of ``exhaustive`` (TooLargeError above it).
        progress: rich progress bars in the sweeps.
        objectives: the objectives of ``nsga2`` and ``exhaustive`` (default utility, gap); the
            other methods have theirs fixed by their formulation.
    """
    if method == "weighted":
        grid = default_weight_grid() if weights is None else list(weights)
        return sweep_weighted(problem, grid, progress=progress)
    if method == "eps":
        kw = dict(
            backend=backend, n_jobs=n_jobs, time_limit=time_limit, seed=seed, progress=progress
        )
        if eps is None:
            return sweep_eps(problem, complete=True, **kw)
        return sweep_eps(problem, eps, **kw)
    if method == "maxmin":
        return sweep_delta(
            problem,
            delta,
            backend=backend,
            n_jobs=n_jobs,
            time_limit=time_limit,
            seed=seed,
            progress=progress,
        )
    if method == "nsga2":
        solver = make_solver("nsga2", seed=seed, objectives=tuple(objectives))
        return results_to_frame(problem, solver.front(problem))
    if method == "exhaustive":
        return exact_front(problem, tuple(objectives), max_count=max_count)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


@dataclass(frozen=True)
class Comparison:
    """Outcome of :func:`compare_methods`.

    Attributes:
        table: one row per method with :data:`COMPARE_COLUMNS`: ``points`` (distinct feasible
            points found), ``front_points`` (how many of them are non-dominated among
            themselves), ``on_front`` (how many lie on the reference front), ``hv_ratio``
            (hypervolume / the reference front's), ``igd`` (normalized units), ``seconds``
            (wall time of the whole method), ``reference`` (``exact`` or ``union``).
        fronts: every row every method produced (front-table columns).
        reference: the reference front, columns ``utility``, ``gap``.
        exact: whether the reference is the exact front.
        notes: why a requested method has no row (e.g. enumeration refused as too large).
    """

    table: pd.DataFrame
    fronts: pd.DataFrame
    reference: pd.DataFrame
    exact: bool
    notes: tuple[str, ...] = ()


def _points(df: pd.DataFrame) -> np.ndarray:
    ok = df[df["status"].isin(_OK)]
    P = ok[list(_OBJ)].to_numpy(dtype=float)
    return np.unique(P, axis=0) if len(P) else np.empty((0, 2))


def compare_methods(
    problem: SelectionProblem,
    *,
    methods: Sequence[str] = METHODS,
    eps: Sequence[float] | None = None,
    delta: Sequence[float] = DEFAULT_DELTA,
    weights: Sequence[Sequence[float]] | None = None,
    backend: str = "auto",
    n_jobs: int = 1,
    time_limit: float | None = None,
    seed: int = 0,
    max_count: int = DEFAULT_MAX_COUNT,
    progress: bool = False,
) -> Comparison:
    """Run ``methods`` on ``problem`` and measure each against one reference front.

    ``exhaustive`` is skipped (no row) when C(N, K) exceeds ``max_count``; the reference is then
    the non-dominated union of the other methods. Arguments as in :func:`run_method`.
    """
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise ValueError(f"unknown method(s) {bad}; choose from {', '.join(METHODS)}")
    frames: dict[str, pd.DataFrame] = {}
    notes: list[str] = []
    seconds: dict[str, float] = {}
    kw = dict(
        eps=eps,
        delta=delta,
        weights=weights,
        backend=backend,
        n_jobs=n_jobs,
        time_limit=time_limit,
        seed=seed,
        max_count=max_count,
    )
    with _bar(progress, len(methods)) as advance:
        for m in methods:
            t0 = time.perf_counter()
            try:
                frames[m] = run_method(problem, m, progress=False, **kw)
            except TooLargeError as exc:
                if m != "exhaustive":
                    raise
                notes.append(f"exhaustive skipped: {exc}")
            seconds[m] = time.perf_counter() - t0
            advance(m)
    exact = "exhaustive" in frames
    pts = {m: _points(f) for m, f in frames.items()}
    ref = reference_front(list(pts.values()), _OBJ, exact=pts["exhaustive"] if exact else None)
    norm = Normalization.from_front(ref, _OBJ)
    rows = []
    for m, P in pts.items():
        nd = reference_front([P], _OBJ) if len(P) else P
        rows.append(
            {
                "method": m,
                "points": len(P),
                "front_points": len(nd),
                "on_front": on_front_count(P, ref),
                "hv_ratio": hypervolume_ratio(P, ref, _OBJ, norm=norm) if len(P) else 0.0,
                "igd": igd(P, ref, _OBJ, norm=norm),
                "seconds": seconds[m],
                "reference": "exact" if exact else "union",
            }
        )
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    fronts = pd.concat(list(frames.values()), ignore_index=True)
    reference = pd.DataFrame(ref, columns=list(_OBJ)).sort_values("gap", ignore_index=True)
    return Comparison(table, fronts, reference, exact, tuple(notes))


class _bar:
    """A rich progress bar over the methods (or nothing); ``advance(name)``."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total = enabled, total

    def __enter__(self):
        if not self.enabled:
            return lambda name: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self._p = Progress(
            TextColumn("compare {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            transient=True,
        )
        self._p.__enter__()
        task = self._p.add_task("methods", total=self.total)
        return lambda name: self._p.update(task, advance=1, description=f"(done: {name})")

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._p.__exit__(*exc)
