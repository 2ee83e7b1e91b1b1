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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from selection.errors import SelectionError, TooLargeError, unknown_name
from selection.indicators import (
    Normalization,
    hypervolume_ratio,
    igd,
    on_front_count,
    reference_front,
)
from selection.problem import SelectionProblem
from selection.progress import report
from selection.solvers.base import SweepOptions
from selection.solvers.registry import solvers
from selection.solvers.result import point_rows
from selection.solvers.weighted import default_weight_grid

__all__ = [
    "methods",
    "COMPARE_COLUMNS",
    "Comparison",
    "default_weight_grid",
    "run_method",
    "compare_methods",
]

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


def methods() -> tuple[str, ...]:
    """The formulations ``compare`` runs: every registered solver with ``in_compare``.

    Examples:
        >>> from selection.compare import methods
        >>> methods()
        ('weighted', 'eps', 'eps-rel', 'maxmin', 'fisher-fair', 'nsga2', 'exhaustive')
    """
    return tuple(name for name, cls in solvers().items() if cls.in_compare)


def run_method(
    problem: SelectionProblem,
    method: str,
    *,
    eps: Sequence[float] | None = None,
    delta: Sequence[float] | None = None,
    weights: Sequence[Sequence[float]] | None = None,
    grids: Mapping[str, Sequence] | None = None,
    options: SweepOptions | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """One method's front table (:func:`selection.solvers.sweeps.results_to_frame` rows).

    The grid handed to the method is the one of its declared sweep parameter
    (:attr:`~selection.solvers.base.Solver.param`); None = the method's default.

    Args:
        problem: the round's problem.
        method: a registered solver name (:func:`selection.solvers.registry.solvers`).
        eps: ε grid (percentage points); None = the complete sweep.
        delta: δ grid for ``maxmin`` (percentage points); None = its default.
        weights: weight vectors for ``weighted``; None = :func:`default_weight_grid`.
        grids: a grid per parameter name (``{"alpha": [0, 0.5, 1]}``), for any formulation's
            declared parameter; it takes precedence over ``eps``/``delta``/``weights``.
        options: the sweep's options (:class:`~selection.solvers.base.SweepOptions`): the
            route options of every point (``backend``, ``time_limit``, ``seed`` (NSGA-II's
            too), ``tolerance``, ...), ``n_jobs`` and ``progress`` of the ε/δ sweeps,
            ``max_count`` (the enumeration limit of ``exhaustive``, TooLargeError above it),
            ``objectives`` (of the methods with ``any_objectives``, nsga2 and exhaustive;
            the other methods have theirs fixed by their formulation), ``f_min``/``b_max``
            (Σ F_z >= f_min and Σ B <= b_max for methods that take them, ``eps``).
        settings: any of those fields as keywords, over ``options``.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.compare import run_method
        >>> problem = small_problem()
        >>> front = run_method(problem, "eps")  # the complete ε sweep: both Pareto points
        >>> front[["param", "utility", "gap", "selected"]].values.tolist()
        [['eps=inf', 85.0, 25.0, 'a;b'], ['eps=22.5', 75.0, 0.0, 'a;c']]
    """
    known = solvers()
    if method not in known:
        raise SelectionError(unknown_name("method", method, known))
    cls = known[method]
    backend = settings.get("backend", SweepOptions.backend if options is None else options.backend)
    if backend is not None:  # the route's name, as every route checks it
        from selection.solvers.milp.portfolio import check_backend

        check_backend(backend, front=True)
    grid = {"eps": eps, "delta": delta, "weights": weights, **(grids or {})}.get(cls.param or "")
    o = SweepOptions.of(options, **settings)
    o = replace(o, grid=None if grid is None else list(grid), objectives=tuple(o.objectives))
    return cls.sweep_front(problem, o)


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
        reference: the reference front, one column per objective (``utility``, ``gap`` by
            default).
        exact: whether the reference is the exact front.
        notes: why a requested method has no row (e.g. enumeration refused as too large).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.compare import compare_methods
        >>> problem = small_problem()
        >>> c = compare_methods(problem, methods=["exhaustive", "maxmin", "fisher-fair"])
        >>> c.exact, c.reference.values.tolist()  # enumeration ran: the exact (U, gap) front
        (True, [[75.0, 0.0], [85.0, 25.0]])
        >>> c.table[["method", "on_front", "hv_ratio"]].round(3).values.tolist()
        [['exhaustive', 2, 1.0], ['maxmin', 2, 1.0], ['fisher-fair', 1, 0.524]]
    """

    table: pd.DataFrame
    fronts: pd.DataFrame
    reference: pd.DataFrame
    exact: bool
    notes: tuple[str, ...] = ()
    objectives: tuple[str, ...] = _OBJ


def _points(df: pd.DataFrame, objectives: Sequence[str] = _OBJ) -> np.ndarray:
    ok = df[point_rows(df)]
    P = ok[list(objectives)].to_numpy(dtype=float)
    return np.unique(P, axis=0) if len(P) else np.empty((0, len(objectives)))


def compare_methods(
    problem: SelectionProblem,
    *,
    methods: Sequence[str] | None = None,
    eps: Sequence[float] | None = None,
    delta: Sequence[float] | None = None,
    weights: Sequence[Sequence[float]] | None = None,
    grids: Mapping[str, Sequence] | None = None,
    options: SweepOptions | None = None,
    **settings: Any,
) -> Comparison:
    """Run ``methods`` on ``problem`` and measure each against one reference front.

    ``methods`` defaults to :func:`methods`. A method refusing the instance as too large
    (enumeration above ``max_count``) is skipped with a note; the reference is the front of the
    method with ``gives_exact_front`` when it ran, else the non-dominated union of all methods.
    ``objectives`` is the plane of the comparison (default (utility, gap); e.g. (utility,
    worst), the plane max-min optimizes): methods with ``any_objectives`` (NSGA-II,
    enumeration) solve in it, and every method's points are judged in it. ``progress`` is
    told as each method finishes. Arguments as in :func:`run_method` (``options`` and its
    fields as keywords; backend ``bb``, one formulation's whole front, is refused).

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> problem = SelectionProblem.from_stats(example_stats(), k=5)
        >>> c = compare_methods(problem, methods=["eps", "weighted"])
        >>> row = c.table.set_index("method").loc["eps"]  # the ε sweep recovers the exact front
        >>> int(row["on_front"]), float(row["hv_ratio"])
        (26, 1.0)
    """
    from selection.objectives import check_objectives
    from selection.solvers.params import FRONT_ROUTE

    # every option checked before the first method runs, as each route checks it
    backend = settings.get("backend", SweepOptions.backend if options is None else options.backend)
    if backend == FRONT_ROUTE:
        raise SelectionError(
            f"backend {FRONT_ROUTE} computes the complete ε front of one formulation (fedsel "
            "sweep --method eps --complete); compare solves every formulation: use auto, enum "
            "or a MILP backend"
        )
    o = SweepOptions.of(options, **settings)
    if o.backend is not None:
        from selection.solvers.milp.portfolio import check_backend

        check_backend(o.backend)
    objs = tuple(check_objectives(list(o.objectives), at_least=2))
    known = solvers()
    methods = globals()["methods"]() if methods is None else tuple(methods)
    bad = [m for m in methods if m not in known]
    if bad or not methods:
        if len(bad) == 1:
            raise SelectionError(unknown_name("method", bad[0], known))
        raise ValueError(f"unknown method(s) {bad}; choose from {', '.join(known)}")
    frames: dict[str, pd.DataFrame] = {}
    notes: list[str] = []
    seconds: dict[str, float] = {}
    # each method's sweep: the options in the comparison's plane, progress told per method here
    each = replace(o, objectives=objs, progress=None)
    kw = dict(eps=eps, delta=delta, weights=weights, grids=grids, options=each)
    for i, m in enumerate(methods):
        t0 = time.perf_counter()
        try:
            frames[m] = run_method(problem, m, **kw)
        except TooLargeError as exc:
            notes.append(f"{m} skipped: {exc}")
        seconds[m] = time.perf_counter() - t0
        report(o.progress, i + 1, len(methods), f"compare (done: {m})")
    pts = {m: _points(f, objs) for m, f in frames.items()}
    exact_m = next((m for m in frames if known[m].gives_exact_front), None)
    exact = exact_m is not None
    ref = reference_front(list(pts.values()), objs, exact=pts[exact_m] if exact else None)
    norm = Normalization.from_front(ref, objs)
    rows = []
    for m, P in pts.items():
        nd = reference_front([P], objs) if len(P) else P
        rows.append(
            {
                "method": m,
                "points": len(P),
                "front_points": len(nd),
                "on_front": on_front_count(P, ref),
                "hv_ratio": hypervolume_ratio(P, ref, objs, norm=norm) if len(P) else 0.0,
                "igd": igd(P, ref, objs, norm=norm),
                "seconds": seconds[m],
                "reference": "exact" if exact else "union",
            }
        )
    table = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    fronts = pd.concat(list(frames.values()), ignore_index=True)
    reference = pd.DataFrame(ref, columns=list(objs)).sort_values(objs[1], ignore_index=True)
    return Comparison(table, fronts, reference, exact, tuple(notes), objs)
