"""The route's public face: the complete (U, gap) or (U, worst) front of a problem as a table.

:func:`bb_front` runs :class:`.search.BoxSearch` on the problem's linear view (``mean`` and
every linear surrogate) and returns the front table of :func:`selection.solvers.result.
results_to_frame`, one row per front point, best U first, with the attributes the complete
ε sweep sets (``complete``, ``exact``, ``max_off``...).
"""

from __future__ import annotations

import math
import time

import pandas as pd

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.solvers.bb.planes import PLANES
from selection.solvers.bb.search import BoxSearch, SearchOutcome

__all__ = ["bb_front", "bb_search", "BB_REASON"]

BB_REASON = "complete front by the bi-objective branch-and-bound (--backend bb)"


def bb_search(
    problem: SelectionProblem, plane: str = "gap", *, time_limit: float | None = None
) -> SearchOutcome:
    """The search itself on ``problem`` (sum units; see :class:`.search.BoxSearch`).

    Raises:
        SelectionError: the surrogate is not linear, or ``plane`` is unknown.
    """
    from selection.solvers.milp.exact import value_quantum

    if plane not in PLANES:
        raise SelectionError(f"bb: unknown plane {plane!r}; choose one of {', '.join(PLANES)}")
    if problem.structure != "linear":
        raise SelectionError(
            f"bb: the {problem.surrogate} surrogate is {problem.structure}; the bi-objective "
            "branch-and-bound takes linear surrogates (mean) only: use --backend auto"
        )
    view = problem.linear_view()
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    search = BoxSearch(
        view.U,
        view.Ud,
        view.k,
        PLANES[plane],
        qu=value_quantum(view.U),
        qg=value_quantum(view.Ud),
        deadline=deadline,
        box_solver=_eps_point(problem) if plane == "gap" else None,
    )
    return search.run()


def _eps_point(problem: SelectionProblem):
    """The (U, gap) plane's box solver: the ε route's own MILP (``auto``: the measured
    portfolio) asked max U at ε = t/K, first stage only, one persistent model for the search."""
    from selection.solvers.registry import make_solver
    from selection.solvers.result import Status

    solver = make_solver("eps", backend="auto")  # by name: no import cycle with the sweeps
    solver.first_stage_only = True

    def solve(t: float, floor: float, left: float | None):
        if t < 0:  # no gap is negative
            return None
        point = solver.with_param(t / problem.k)
        point.time_limit = left
        r = point.solve(problem)
        if r.status == Status.INFEASIBLE:
            return None
        if r.status != Status.OPTIMAL or not r.selected:
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
) -> pd.DataFrame:
    """The complete front of (max U, min gap) or (max U, max worst).

    Args:
        problem: the round's problem (a linear surrogate).
        objectives: ``("utility", "gap")`` or ``("utility", "worst")``.
        time_limit: seconds for the whole front (None: none); a stopped search returns the
            incumbent front with ``attrs["complete"]`` false.
        method: the rows' ``method`` (``eps`` where the complete ε sweep asks).
        step: with ``method="eps"``: the rows' ``param`` are the ε at which the complete
            sweep meets each point (inf, then the last gap − step), as the sweep labels them.

    Returns:
        One row per front point, best U first, backend ``bb``, status ``optimal`` (``feasible``
        where the search was stopped), ``bound`` the point's U where proven.
    """
    from selection.objectives import evaluate
    from selection.solvers.result import SolveResult, Status, results_to_frame

    objectives = tuple(objectives)
    planes = {("utility", p.column): name for name, p in PLANES.items()}
    if objectives not in planes:
        raise SelectionError(f"bb: objectives {objectives!r}: (utility, gap) or (utility, worst)")
    t0 = time.perf_counter()
    out = bb_search(problem, planes[objectives], time_limit=time_limit)
    seconds = time.perf_counter() - t0
    status = Status.OPTIMAL if out.complete else Status.FEASIBLE
    pts = sorted(out.points, key=lambda p: -p[1])  # best U first
    results = []
    last_gap = math.inf
    for _, _, sel in pts:
        obj = evaluate(problem, sel)
        if step is not None:
            param = "eps=inf" if not math.isfinite(last_gap) else f"eps={last_gap - step:.12g}"
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
                backend="bb",
                message=f"{out.boxes} boxes, {out.lps} LPs, {out.nodes} nodes, {out.mips} MIPs",
                bound=obj["utility"] if out.complete else math.nan,
                route_reason=BB_REASON,
            )
        )
    df = results_to_frame(problem, results)
    df.attrs.update(
        complete=out.complete,
        unproven=0 if out.complete else 1,
        exact=out.complete,
        max_off=0.0 if out.complete else math.nan,
        tolerance=0.0,
        gap_slack=0.0,
        boxes=out.boxes,
        lps=out.lps,
        nodes=out.nodes,
        mips=out.mips,
    )
    return df
