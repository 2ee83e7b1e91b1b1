"""The route's public face: the complete (U, gap) or (U, worst) front of a problem as a table.

:func:`bb_front` runs :class:`.search.BoxSearch` on the problem's linear view (``mean`` and
every linear surrogate) and returns the front table of
:func:`selection.solvers.result.results_to_frame`, one row per front point, best U first,
with the attributes the complete ε sweep sets (``complete``, ``exact``, ``max_off``...).

**The certificate.** Within ``tolerance`` τ (points), and at any moment of a stopped search,
the search proves a c (``attrs["certified"]``, points): every point (U*, g*) of the true
front has a row with U >= U* − c and its second objective within c of g* (gap <= gap* + c,
worst >= worst* − c). Read per row as the complete ε sweep does: each row's ``bound`` is
U + c and its ε (``param``) the previous row's value − c − step, at which the true front's
max U is at most that bound (a point within τ of its neighbour may carry an ε below its own
gap). ``max_off`` and ``gap_slack`` are c.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import pandas as pd

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.progress import ProgressFn, report
from selection.solvers.bb.certificate import Snapshot
from selection.solvers.bb.planes import PLANES
from selection.solvers.bb.search import BoxSearch, SearchOutcome, on_grid
from selection.solvers.params import Route
from selection.surrogates.base import Structure

__all__ = ["bb_front", "bb_search", "BB_REASON"]

BB_REASON = "complete front by the bi-objective branch-and-bound (--backend bb)"


def bb_search(
    problem: SelectionProblem,
    plane: str = "gap",
    *,
    time_limit: float | None = None,
    tolerance: float = 0.0,
    order: str | None = None,
    on_certificate: Callable[[Snapshot], None] | None = None,
) -> SearchOutcome:
    """The search itself on ``problem`` (sum units; see :class:`.search.BoxSearch`).

    Args:
        tolerance: τ, points (>= 0): stop once the true front is within τ of the incumbents
            in both objectives (K·τ in the search's sum units).
        time_limit: seconds for the whole search (None: none).
        order: the order of the boxes (:data:`.search.ORDERS`); None: ``anytime`` with a
            time limit, else ``sweep``.
        on_certificate: see :class:`.search.BoxSearch` (sum units).

    Raises:
        SelectionError: the surrogate is not linear, or ``plane`` is unknown.
    """
    from selection.solvers.milp.portfolio import value_quantum

    if plane not in PLANES:
        raise SelectionError(f"bb: unknown plane {plane!r}; choose one of {', '.join(PLANES)}")
    if problem.structure != Structure.LINEAR:
        raise SelectionError(
            f"bb: the {problem.surrogate} surrogate is {problem.structure}; the bi-objective "
            "branch-and-bound takes linear surrogates (mean) only: use --backend auto"
        )
    if not tolerance >= 0 or not math.isfinite(tolerance):
        raise ValueError(f"tolerance={tolerance!r} must be finite and >= 0")
    view = problem.linear_view()
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    qu = value_quantum(view.U)
    tau = float(tolerance) * view.k
    search = BoxSearch(
        view.U,
        view.Ud,
        view.k,
        PLANES[plane],
        qu=qu,
        qg=value_quantum(view.Ud),
        deadline=deadline,
        box_solver=_eps_point(problem, on_grid(tau, qu) / view.k) if plane == "gap" else None,
        tolerance=tau,
        order=order or ("sweep" if time_limit is None else "anytime"),
        on_certificate=on_certificate,
    )
    return search.run()


def _eps_point(problem: SelectionProblem, tolerance: float = 0.0):
    """The (U, gap) plane's box solver: the ε route's own MILP (``auto``: the measured
    portfolio) asked max U at ε = t/K, first stage only, one persistent model for the search;
    within ``tolerance`` points of it when the search has one."""
    from selection.solvers.registry import make_solver
    from selection.solvers.result import Status

    # by name: no import cycle with the sweeps
    solver = make_solver("eps", backend="auto", tolerance=tolerance)
    solver.first_stage_only = True
    done = (Status.OPTIMAL, Status.FEASIBLE) if tolerance > 0 else (Status.OPTIMAL,)

    def solve(t: float, floor: float, left: float | None):
        if t < 0:  # no gap is negative
            return None
        point = solver.with_param(t / problem.k)
        point.options = replace(point.options, time_limit=left)
        r = point.solve(problem)
        if r.status == Status.INFEASIBLE:
            return None
        if r.status not in done or not r.selected:
            return False
        return r.selected

    return solve


def bb_front(
    problem: SelectionProblem,
    objectives: tuple[str, str] = ("utility", "gap"),
    *,
    time_limit: float | None = None,
    method: str = "bb",
    step: float | None = None,
    tolerance: float = 0.0,
    progress: ProgressFn | None = None,
) -> pd.DataFrame:
    """The complete front of (max U, min gap) or (max U, max worst), or one within a tolerance.

    Args:
        problem: the round's problem (a linear surrogate).
        objectives: ``("utility", "gap")`` or ``("utility", "worst")``.
        time_limit: seconds for the whole front (None: none); a stopped search returns the
            incumbent front with ``attrs["complete"]`` false and the certificate it reached.
        method: the rows' ``method`` (``eps`` where the complete ε sweep asks).
        step: with ``method="eps"``: the rows' ``param`` are the ε at which the complete
            sweep meets each point (inf, then the last gap − c − step), as the sweep labels them.
        tolerance: τ, points: stop once the certificate is within τ (0: the exact front).
        progress: called as the front grows, ``(boxes, None, "bb front: within c pp of the
            true front, n points")``.

    Returns:
        One row per front point, best U first, backend ``bb``, status ``optimal`` where the
        front is exact (else ``feasible``), ``bound`` U + c. ``attrs``: ``certified`` c
        (points; the module's certificate), ``complete`` (the search finished: c <= τ),
        ``exact`` (finished with c = 0), ``max_off`` and ``gap_slack`` c, ``tolerance`` τ,
        ``history`` ((seconds, points, c) as the front grew), search statistics.

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> front = bb_front(SelectionProblem.from_stats(example_stats(), k=5))
        >>> len(front), bool(front.attrs["exact"]), front.attrs["certified"]
        (26, True, 0.0)
    """
    from selection.objectives import evaluate
    from selection.solvers.params import check_route_options
    from selection.solvers.result import SolveResult, Status, results_to_frame

    # the route options as every route checks them (a limit for the whole front here)
    opts = check_route_options(time_limit=time_limit, tolerance=tolerance)
    time_limit, tolerance = opts["time_limit"], opts["tolerance"]
    objectives = tuple(objectives)
    planes = {("utility", p.column): name for name, p in PLANES.items()}
    if objectives not in planes:
        raise SelectionError(f"bb: objectives {objectives!r}: (utility, gap) or (utility, worst)")
    k = problem.k

    def said(snap: Snapshot) -> None:
        text = f"bb front: within {snap.certified / k:.4g} pp of the true front"
        report(progress, snap.boxes, None, f"{text}, {len(snap.points)} points")

    t0 = time.perf_counter()
    out = bb_search(
        problem,
        planes[objectives],
        time_limit=time_limit,
        tolerance=tolerance,
        on_certificate=said if progress is not None else None,
    )
    seconds = time.perf_counter() - t0
    c = out.certified / k
    exact = out.complete and c == 0
    status = Status.OPTIMAL if exact else Status.FEASIBLE
    pts = sorted(out.points, key=lambda p: -p[1])  # best U first
    results = []
    last_gap = math.inf
    how = "" if out.complete else "stopped, "
    note = f"{how}certified within {c:.4g} pp" if not exact else "exact"
    for _, _, sel in pts:
        obj = evaluate(problem, sel)
        if step is not None:
            eps = last_gap - c - step
            param = "eps=inf" if not math.isfinite(last_gap) else f"eps={eps:.12g}"
            last_gap = obj["gap"]
        else:
            param = ",".join(objectives)
        results.append(
            SolveResult(
                method=method,
                status=status,
                selected=tuple(int(i) for i in sel),
                ids=tuple(problem.ids_of(sel)),
                objectives=obj,
                seconds=seconds,
                param=param,
                backend=Route.BB,
                message=f"{note}; {out.boxes} boxes, {out.lps} LPs, {out.nodes} nodes, "
                f"{out.mips} MIPs",
                bound=obj["utility"] + c,
                route_reason=BB_REASON,
            )
        )
    df = results_to_frame(problem, results)
    df.attrs.update(
        complete=out.complete,
        unproven=0 if out.complete else 1,
        exact=exact,
        certified=c,
        max_off=c,
        tolerance=float(tolerance),
        gap_slack=c,
        history=[(s, n, g / k) for s, n, g in out.history],
        boxes=out.boxes,
        lps=out.lps,
        nodes=out.nodes,
        mips=out.mips,
    )
    return df
