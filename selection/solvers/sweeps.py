"""Sweeps over ε, δ and weights, returned as front tables (one row per solved point).

Why one module past 450 lines: about half of it is documentation and runnable examples; the
code is one job, turning a formulation's parameter grid into a front table, and its three
sweeps share the grid splitting, the threads and the table.

Every table has the columns of :data:`~selection.solvers.result.FRONT_COLUMNS` plus ``U_<domain>`` per domain:
``selected`` holds the client ids joined by ``;`` ("" when no selection was found) and the
objective columns are NaN then. An infeasible point is a row with status ``infeasible``.

* :func:`sweep_eps` — a grid of ε (percentage points), or ``complete=True``: start without a
  gap constraint, then put the next ε just below the last gap found (gap − ``step``) until
  infeasible. Each next ε excludes exactly the points already found, so the complete sweep
  returns the whole (U, gap) front, unsupported points included (two front points whose gaps
  differ by less than ``step`` are the limit of its resolution). It solves max U alone per
  point and drops a point when the next one reaches the same U (it was weakly dominated),
  which gives the same front as a lexicographic second stage per point at about half the
  MILP time.
* :func:`sweep_delta` — a grid of δ for the max-min formulation.
* :func:`sweep_weighted` — one weighted-sum point per weight vector.

Grid points may run in parallel threads (``n_jobs``): the grid is cut into ``n_jobs``
contiguous parts, each solved by its own solver with its own persistent model. A complete
sweep is sequential by construction.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from selection.problem import SelectionProblem
from selection.progress import ProgressFn
from selection.solvers.base import SweepOptions
from selection.solvers.grid import _Counter, _run_grid
from selection.solvers.options import RouteOptions
from selection.solvers.params import Route, as_float_list, check_nonneg
from selection.solvers.registry import make_solver
from selection.solvers.result import (
    FRONT_COLUMNS,
    SolveResult,
    Status,
    point_rows,
    results_to_frame,
)
from selection.surrogates.base import Structure

__all__ = [
    "FRONT_COLUMNS",
    "results_to_frame",
    "sweep_eps",
    "sweep_delta",
    "sweep_weighted",
    "max_off",
    "front_step",
]

DEFAULT_STEP = 1e-6
MAX_POINTS = 100_000
# Seconds per point of a complete sweep unless the caller gives ``time_limit``: the tight-ε
# points of near-tied per-domain rows (``near_tied_stats``) can keep the MILP busy for long,
# so a complete sweep never hangs silently; a point stopped by it is labelled ``time_limit``
# and the front is not proven.
COMPLETE_POINT_BUDGET = 60.0


def sweep_eps(
    problem: SelectionProblem,
    eps: Sequence[float] | None = None,
    *,
    options: SweepOptions | None = None,
    complete: bool = False,
    step: float | None = None,
    max_points: int = MAX_POINTS,
    max_seconds: float | None = None,
) -> pd.DataFrame:
    """ε-constraint points over a grid, or the complete (U, gap) front.

    Args:
        problem: the round's selection problem.
        eps: ε values, percentage points (>= 0; ``inf`` = unconstrained). Not with ``complete``.
        options: the route options every sweep takes (:class:`SweepOptions`; default: the
            defaults): ``backend``, ``n_jobs``, ``time_limit``, ``seed``, ``progress``,
            ``f_min``, ``b_max``, ``tolerance``, as below; its ``grid`` stands for ``eps``
            when ``eps`` is None.

            - ``backend``: ``auto``, ``enum``, ``highs``, ``cbc``, ``cpsat`` or ``scip`` (see EpsSolver),
                or, for a complete sweep only, ``bb``: the whole front in one bi-objective
                branch-and-bound (:mod:`selection.solvers.bb`; linear surrogates; ``time_limit``
                and ``max_seconds`` are its seconds for the whole front, a stopped search keeps
                the certificate it reached: ``attrs["certified"]``); ``auto`` takes ``bb`` for a
                complete sweep within a ``tolerance`` from :data:`BB_TOLERANCE_MIN_N` clients on
                (linear surrogates, no ``f_min``/``b_max``; its ``time_limit`` then bounds the
                whole front; the rows' ``route_reason`` says so), and otherwise,
                a complete sweep of 200k–5M selections may switch to enumeration
                (:data:`FRONT_ENUM_MAX`; the rows' ``route_reason`` says so).
            - ``n_jobs``: threads for grid points (ignored by the complete sweep).
            - ``time_limit``: seconds per point; a point stopped by it keeps its incumbent (status
                ``time_limit``). The complete sweep uses :data:`COMPLETE_POINT_BUDGET` (60 s)
                when None; pass ``math.inf`` for no limit.
            - ``f_min``: optional Σ F_z >= f_min on every point.
            - ``b_max``: optional Σ B <= b_max on every point.
            - ``seed``: solver seed.
            - ``progress``: callback ``(done, total, label)`` per point (:mod:`selection.progress`).
            - ``tolerance``: points (>= 0). Each point is solved to within ``tolerance`` of its max U
                (status ``feasible``, ``bound`` <= U + tolerance); the complete sweep also steps
                the next ε ``max(step, tolerance)`` below the last gap. The complete tolerant
                front is certified: every exact front point (U*, g*) has a returned point with
                U >= U* − tolerance and gap <= g* + tolerance (``attrs["tolerance"]``). Proofs on
                the front's tail (gaps of hundredths of a point) are what a tolerance skips.
        complete: sweep ε downwards from the unconstrained optimum until infeasible.
        step: the complete sweep's next ε is the last gap minus ``step`` (points); None:
            :func:`front_step` (half the smallest difference two gaps can have where the
            domain rows sit on a value grid, else :data:`DEFAULT_STEP`).
        max_points: safety cap on the complete sweep's number of points.
        max_seconds: the complete sweep's wall-time budget: no point starts after it and the
            last one is stopped by it (a point it stops is labelled ``time_limit``).

    Returns:
        The front table (see :func:`results_to_frame`), rows in solve order. For a complete
        sweep ``attrs["complete"]`` says whether it reached its end (infeasible, or gap 0)
        rather than a cap, ``attrs["unproven"]`` counts the points stopped by the per-point
        budget (their selection is the best found, not a proven optimum, and front points
        near them may be missing), ``attrs["exact"]`` is true only when the sweep is
        complete and every point proven, and ``attrs["max_off"]`` (:func:`max_off`) is how
        far above the returned points the exact front may lie at most (0 when proven);
        ``attrs["tolerance"]`` is ``tolerance``.

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> problem = SelectionProblem.from_stats(example_stats(), k=5)
        >>> front = sweep_eps(problem, complete=True)  # every Pareto-optimal (U, gap) point
        >>> bool(front.attrs["exact"]), front[["utility", "gap"]].round(2).iloc[0].tolist()
        (True, [68.94, 45.35])
    """
    # the route options were checked as every route checks them (bb's whole-front limit too)
    # when the SweepOptions were made
    o = options if options is not None else SweepOptions()
    backend, n_jobs, time_limit = o.backend, o.n_jobs, o.time_limit
    progress, f_min, b_max, tolerance = o.progress, o.f_min, o.b_max, o.tolerance
    if eps is None and o.grid is not None:
        eps = list(o.grid)
    if complete and eps is not None:
        raise ValueError("sweep_eps: give an eps grid or complete=True, not both")
    if not complete and eps is None:
        raise ValueError("sweep_eps: give an eps grid or complete=True")
    if backend is not None:
        from selection.solvers.milp.portfolio import check_backend

        check_backend(backend, front=True)
    whole_limit = time_limit  # the bi-objective search's: seconds for the whole front
    if complete and time_limit is None:
        time_limit = COMPLETE_POINT_BUDGET
    elif time_limit is not None and np.isinf(time_limit) and time_limit > 0:
        time_limit = None
    auto_step = step is None
    step = DEFAULT_STEP if auto_step else check_nonneg("step", step, allow_none=False)
    if step <= 0:
        raise ValueError(f"step={step!r} must be > 0")
    tolerance = check_nonneg("tolerance", tolerance, allow_none=False)
    by_bb = backend == Route.AUTO and complete and _bb_tolerant(problem, f_min, b_max, tolerance)
    if backend == Route.BB or by_bb:
        limits = [v for v in (whole_limit, max_seconds) if v is not None and v < math.inf]
        if not complete:
            raise ValueError(
                "backend bb computes the complete front only (--complete, complete=True)"
            )
        front = _bb_sweep(
            problem,
            f_min,
            b_max,
            None if auto_step else step,
            tolerance,
            min(limits) if limits else None,
            progress,
        )
        if by_bb:
            front["route_reason"] = (
                f"auto: a complete front within --tolerance at N = {problem.n} >= "
                f"{BB_TOLERANCE_MIN_N}: the bi-objective branch-and-bound (bb)"
            )
        return front

    point_options = RouteOptions.of(o, time_limit=time_limit, tolerance=tolerance)

    def make():
        return make_solver("eps", f_min=f_min, b_max=b_max, options=point_options)

    if not complete:
        grid = as_float_list("eps", eps)
        df = results_to_frame(problem, _run_grid(make, problem, grid, n_jobs, progress, "ε sweep"))
        df.attrs["tolerance"] = tolerance
        return df
    budget = _enumeration_budget(problem, backend, f_min, b_max)
    if budget is not None and max_seconds is not None and max_seconds < 2 * budget:
        budget = None  # the caller's wall-time budget leaves no room to enumerate as well
    if budget is not None:  # the anytime portfolio: the MILP sweep gets what enumeration costs
        max_seconds = budget
    solver = make()
    solver.first_stage_only = True  # see _tied below
    if auto_step:  # half a value-grid step where the route's data are on one
        step = front_step(problem, solver.quantum(problem))
    enum_step = step  # the enumerated front labels its ε points with the exact step
    step = max(step, tolerance)
    slack = 0.0  # the largest g_j − ε_{j+1}: how far above a front point its cover may lie
    results: list[SolveResult] = []
    e: float | None = None
    repeats = 0
    finished = False
    t0 = time.perf_counter()
    advance = _Counter(progress, None, "complete ε sweep")
    while len(results) < max_points:
        point = solver.with_param(e)
        if max_seconds is not None:  # the whole sweep's budget also bounds each point
            left = max(1e-3, max_seconds - (time.perf_counter() - t0))
            limit = point.options.time_limit
            point.options = replace(
                point.options, time_limit=left if limit is None else min(limit, left)
            )
        r = point.solve(problem)
        # a backend tolerance may return the last point again: step further each time
        same = bool(results) and r.selected == results[-1].selected
        while results and _tied(results[-1], r, problem.k):
            # weakly dominated by r: same U (or, within a tolerance, a lower one), larger
            # gap; r now speaks for ε up to the dropped point's, so it carries the larger of
            # the two bounds
            r = replace(r, bound=_merged_bound(results.pop().bound, r.bound))
        results.append(r)
        advance()
        if not r.ok:
            finished = r.status == Status.INFEASIBLE
            break
        repeats = repeats + 1 if same else 0
        # a repeat steps further by powers of ten of DEFAULT_STEP, not of a grid step (which
        # would jump over front points)
        bump = step + (DEFAULT_STEP * 10**repeats if repeats else 0.0)
        g = solver.model_gap(problem, r.selected)
        nxt = g - bump
        if e is not None:
            nxt = min(nxt, e - bump)
        slack = max(slack, g - max(nxt, 0.0))
        if nxt < 0:
            finished = True
            break
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            break
        e = nxt
    if budget is not None and not (
        finished and all(r.status != Status.TIME_LIMIT for r in results)
    ):
        return _enumerated_front(problem, enum_step, time.perf_counter() - t0, budget)
    df = results_to_frame(problem, results)
    unproven = sum(r.status == Status.TIME_LIMIT for r in results)
    df.attrs["complete"] = finished
    df.attrs["unproven"] = unproven
    df.attrs["exact"] = finished and unproven == 0 and tolerance == 0
    df.attrs["max_off"] = max_off(df, "utility")
    df.attrs["tolerance"] = tolerance
    # with a tolerance: every exact front point (U*, g*) has a returned point with
    # U >= U* − max_off and gap <= g* + gap_slack (about the tolerance); exact sweeps step by
    # DEFAULT_STEP or half a value-grid step, between which no front point lies
    df.attrs["gap_slack"] = slack if tolerance > 0 else 0.0
    return df


# The complete sweep's enumeration switch (``backend="auto"``): above the per-point
# enumeration limit and up to FRONT_ENUM_MAX selections, the MILP sweep first gets as long as
# enumerating every selection is estimated to take (ENUM_SECONDS_PER_SELECTION: an upper
# estimate of exhaustive.exact_front's time per selection); if it has not proven the whole
# front by then, the front is enumerated. Time is then at most about twice the better of the
# two (the near-tied N = 50 front is enumerated: results/benchmarks/exact_peers.md).
# Which of the two finishes depends on the machine's speed: both fronts are exact (the same
# (U, gap) points), but tied points may be represented by different selections; the rows'
# backend and route_reason say which one ran. With a caller's ``max_seconds`` below twice the
# estimate there is no switch (the budget would not hold both).
FRONT_ENUM_MAX = 5_000_000
# No point of the complete sweep caps U by the previous point's bound (max U cannot grow as ε
# shrinks): a row parallel to the objective slowed the MILP search on most instances (the
# rows "exact, U cap" of results/benchmarks/certified_fronts.md as committed in 87521d7,
# dropped from it since: slower on 7 of the 8 fronts both variants finished).
ENUM_SECONDS_PER_SELECTION = 1e-6


# ``auto``'s complete sweep within a tolerance takes the bi-objective branch-and-bound from
# this N on (linear surrogates, no f_min / b_max): from here on it finished first on all but
# one measured instance, below it not as often (results/benchmarks/biobj_tolerance.md,
# benchmarks/biobj_tolerance.py)
BB_TOLERANCE_MIN_N = 200


def _bb_tolerant(problem, f_min, b_max, tolerance: float) -> bool:
    """Whether ``auto``'s complete sweep takes ``bb`` (see :data:`BB_TOLERANCE_MIN_N`)."""
    return (
        tolerance > 0
        and f_min is None
        and b_max is None
        and problem.structure == Structure.LINEAR
        and problem.n >= BB_TOLERANCE_MIN_N
    )


def front_step(problem: SelectionProblem, quantum: float | None = None) -> float:
    """The complete ε sweep's default step (points of the mean).

    Where every U_d is a whole multiple of q (:func:`~selection.solvers.milp.portfolio.value_quantum`:
    2-decimal data, accuracies on n validation images) every gap is a multiple of q/K, so no
    gap lies strictly between g − q/K and g: the next ε at g − q/(2K) misses no front point
    and stays far from the rows' tolerances (SCIP misjudged ε rows 1e-6 pp below an
    attainable gap). Elsewhere (and for surrogates that are not linear) DEFAULT_STEP.
    ``quantum``: q as the route sees it
    (:meth:`~selection.solvers.milp.exact.ExactSolver.quantum`; 0 off the grid); None: from the
    true rows.

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.sweeps import front_step
        >>> problem = tied_problem()
        >>> front_step(problem)  # every U_d a multiple of q = 10, K = 2: q/(2K)
        2.5
        >>> front_step(problem, quantum=0.0)  # off a value grid: DEFAULT_STEP
        1e-06
    """
    from selection.solvers.milp.portfolio import value_quantum

    if problem.structure != Structure.LINEAR or problem.d == 0:
        return DEFAULT_STEP
    q = value_quantum(problem.linear_view().Ud) if quantum is None else quantum
    return max(DEFAULT_STEP, q / (2 * problem.k)) if q > 0 else DEFAULT_STEP


def _enumeration_budget(problem, backend, f_min, b_max) -> float | None:
    """The MILP sweep's budget before enumeration takes over, or None (no switch)."""
    from selection.solvers.milp.portfolio import DEFAULT_ENUM_LIMIT

    if backend != Route.AUTO or f_min is not None or b_max is not None:
        return None
    count = math.comb(problem.n, problem.k)
    if not DEFAULT_ENUM_LIMIT < count <= FRONT_ENUM_MAX:
        return None
    return count * ENUM_SECONDS_PER_SELECTION


def _enumerated_front(problem, step: float, spent: float, budget: float) -> pd.DataFrame:
    """The complete ε sweep's table from :func:`~selection.solvers.exhaustive.exact_front`.

    Rows as the MILP sweep gives them: method ``eps``, the first point at ε = inf and each
    next one at the last gap − ``step`` (the ε at which the sweep finds it), backend ``enum``.
    """
    from selection.solvers.exhaustive import exact_front

    t0 = time.perf_counter()
    front = exact_front(problem, ("utility", "gap"), max_count=FRONT_ENUM_MAX)
    front = front.sort_values(["utility", "gap"], ascending=[False, True]).reset_index(drop=True)
    eps = [math.inf, *(front["gap"].to_numpy()[:-1] - step)]
    front["method"] = "eps"
    front["param"] = [f"eps={e:g}" if math.isfinite(e) else "eps=inf" for e in eps]
    front["bound"] = front["utility"]
    count = math.comb(problem.n, problem.k)
    front["route_reason"] = (
        f"complete front by enumeration of C(N, K) = {count:,} selections: the MILP sweep had "
        f"not proven it within the enumeration's estimated {budget:.1f} s"
    )
    front["seconds"] = time.perf_counter() - t0 + spent
    front.attrs.update(
        complete=True, unproven=0, exact=True, max_off=0.0, tolerance=0.0, gap_slack=0.0
    )
    return front


def _bb_sweep(problem, f_min, b_max, step, tolerance, seconds, progress) -> pd.DataFrame:
    """The complete sweep by the bi-objective branch-and-bound (:mod:`selection.solvers.bb`):
    ``seconds`` for the whole front, within ``tolerance`` points in both objectives (its
    certificate in ``attrs["certified"]``, also where ``seconds`` stopped it)."""
    from selection.solvers.bb import bb_front

    if f_min is not None or b_max is not None:
        raise ValueError("backend bb takes no f_min or b_max; use backend auto")
    step = front_step(problem) if step is None else step
    return bb_front(
        problem,
        time_limit=seconds,
        method="eps",
        step=step,
        tolerance=tolerance,
        progress=progress,
    )


def _merged_bound(a: float, b: float) -> float:
    """The larger of two bounds; NaN (unknown) when either is."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


def max_off(front: pd.DataFrame, objective: str) -> float:
    """How far above the front's points the exact front may lie, at most (``bound`` − value).

    0 when every point is proven; NaN when a point with a selection has no bound. On the
    complete ε sweep the statement covers every ε the sweep passed: point j, solved at ε_j,
    has gap g_j; for ε in [g_j, ε_j] the exact max-U front f(ε) satisfies
    U_j <= f(ε) <= bound_j, and the next ε is g_j − step.

    Examples:
        >>> import pandas as pd
        >>> from selection.solvers.sweeps import max_off
        >>> front = pd.DataFrame({"status": ["optimal", "time_limit", "infeasible"],
        ...     "selected": ["a0;b0", "b0;a1", ""], "utility": [70.0, 72.5, None],
        ...     "bound": [70.0, 74.0, None]})
        >>> max_off(front, "utility")  # the point stopped by its time limit: 74 - 72.5
        1.5
        >>> max_off(front.iloc[[0, 2]], "utility")  # every point proven
        0.0
    """
    pts = front[point_rows(front)]
    if not len(pts) or "bound" not in pts:
        return math.nan
    off = pts["bound"].astype(float) - pts[objective].astype(float)
    if off.isna().any():
        return math.nan
    worst = float(off.max())
    # below 1e-9 points: float noise of tied points' merged bounds, not a gap
    return worst if worst > 1e-9 else 0.0


def _tied(prev: SolveResult, new: SolveResult, k: int) -> bool:
    """Whether ``new`` (solved at an ε below ``prev``'s gap) has ``prev``'s U or more (more
    only where points are solved within a tolerance).

    The complete sweep solves max U alone at each ε (one MILP per point instead of two: the
    next, tighter ε finds a lower gap at the same U if there is one). A point whose U the
    next, tighter ε still reaches was weakly dominated, so it is dropped: the last point of a
    run of equal U is the one with the smallest gap. Equal means within the lexicographic stage
    tolerance (1e-6 + 1e-9·|K·U| in sum units).
    """
    if not (prev.ok and new.ok):
        return False
    u0, u1 = prev.objectives["utility"], new.objectives["utility"]
    return u1 >= u0 - (1e-6 + 1e-9 * abs(k * u0)) / k


def sweep_delta(
    problem: SelectionProblem,
    delta: Sequence[float],
    *,
    options: SweepOptions | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Max-min points (max worst s.t. U >= U* − δ) for each δ of a grid (percentage points);
    each within ``tolerance`` points of its max worst (see :func:`sweep_eps`).

    Args:
        problem: the round's selection problem.
        delta: δ values, percentage points (>= 0).
        options: the sweep's options (:class:`SweepOptions`; its route options for every
            point, ``n_jobs`` threads and ``progress`` per point); ``settings``: any of its
            fields as keywords, over ``options``.

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.sweeps import sweep_delta
        >>> problem = tied_problem()
        >>> front = sweep_delta(problem, [0.0, 5.0])  # U* = 72.5
        >>> front[["param", "selected", "utility", "worst"]].values.tolist()
        [['delta=0', 'b0;a1', 72.5, 65.0], ['delta=5', 'a0;b0', 70.0, 70.0]]
    """
    grid = as_float_list("delta", delta)
    o = SweepOptions.of(options, **settings)
    point_options = RouteOptions.of(o)

    def make():
        return make_solver("maxmin", options=point_options)

    results = _run_grid(make, problem, grid, o.n_jobs, o.progress, "δ sweep")
    return results_to_frame(problem, results)


def sweep_weighted(
    problem: SelectionProblem,
    weights: Sequence[Sequence[float]],
    *,
    composite: bool = False,
    progress: ProgressFn | None = None,
) -> pd.DataFrame:
    """One weighted-sum point per weight vector (w_U, w_R, w_F, w_cos, w_B), or per (α, β, γ)
    of the composite score when ``composite`` is true.

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.sweeps import sweep_weighted
        >>> problem = tied_problem()
        >>> front = sweep_weighted(problem, [(1, 0), (0, 1)])  # w_U alone, then w_R alone
        >>> front[["param", "selected", "utility", "gap"]].values.tolist()
        [['w=1,0', 'a0;a1', 72.5, 25.0], ['w=0,1', 'b0;a1', 72.5, 15.0]]
    """
    if len(weights) == 0:
        raise ValueError("sweep_weighted: the weight list is empty")
    key = "composite" if composite else "weights"
    solvers = [make_solver("weighted", **{key: w}) for w in weights]
    results = []
    advance = _Counter(progress, len(solvers), "weighted sweep")
    for s in solvers:
        results.append(s.solve(problem))
        advance()
    return results_to_frame(problem, results)
