"""What a solve returns: the status vocabulary, :class:`SolveResult` and the front table.

Kept apart from :mod:`selection.solvers.base` (the :class:`~selection.solvers.base.Solver`
interface) and :mod:`selection.solvers.registry` (the registry), so that reports and tables
read results without importing solvers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd

from selection.problem import SelectionProblem

__all__ = [
    "Status",
    "SOLVED",
    "point_rows",
    "FRONT_COLUMNS",
    "results_to_frame",
    "SolveResult",
    "RawResult",
]


class Status(StrEnum):
    """One status vocabulary for every backend.

    Examples:
        >>> from selection.solvers.result import SOLVED, Status
        >>> Status("time_limit") is Status.TIME_LIMIT, str(Status.OPTIMAL)
        (True, 'optimal')
        >>> sorted(str(s) for s in SOLVED)  # the statuses whose selection is a front point
        ['feasible', 'optimal', 'time_limit']
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    TIME_LIMIT = "time_limit"
    INFEASIBLE = "infeasible"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


# Statuses whose selection (when one was returned) is a point of a front.
SOLVED: frozenset[Status] = frozenset({Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT})


def point_rows(front: pd.DataFrame) -> np.ndarray:
    """Mask of the rows of a front table that are points: a SOLVED status and a selection.

    A ``time_limit`` row without an incumbent (``selected`` empty, objectives NaN) is not a
    point of any front, and neither is an ``infeasible`` or ``error`` row.

    Examples:
        >>> import pandas as pd
        >>> from selection.solvers.result import point_rows
        >>> front = pd.DataFrame({"status": ["optimal", "time_limit", "time_limit", "infeasible"],
        ...                       "selected": ["a0;a1", "b0;a1", "", ""]})
        >>> point_rows(front)
        array([ True,  True, False, False])
    """
    solved = front["status"].astype(str).isin([s.value for s in SOLVED]).to_numpy()
    chosen = front["selected"].fillna("").astype(str).str.len().to_numpy() > 0
    return solved & chosen


@dataclass(frozen=True)
class SolveResult:
    """Outcome of one solve.

    Attributes:
        method: solver name (``eps``, ``maxmin``, ...).
        param: the sweep parameter as text (``eps=5``, ``delta=2``, ``w=1,0,0``), or "".
        status: normalized status.
        selected: indices of the chosen clients, sorted; empty when none was found.
        ids: client ids of ``selected``.
        objectives: every objective of :func:`selection.objectives.evaluate` (empty if none).
        seconds: wall time of ``_solve``.
        backend: the backend that solved it (``highs``, ``cbc``, ``cpsat``, ``enum``, ...).
        message: free text from the backend.
        bound: a proven upper bound on the formulation's first objective (its
            ``bound_objective``: U for ``eps``, worst for ``maxmin``, Σ F_z for
            ``fisher-fair``) over every selection the point admits; equal to the objective
            on a proven optimum, above it on a point stopped by its time limit (the exact
            optimum lies between the two), NaN where the route proves nothing (heuristics;
            CP-SAT on data that are not multiples of 1/scale, whose rounded rows may cut off
            true selections).
        route_reason: why ``backend`` was the route (``auto``'s portfolio), or "".

    Examples:
        >>> from selection.solvers.result import SolveResult, Status
        >>> found = SolveResult("eps", Status.TIME_LIMIT, selected=(0, 2), ids=("a0", "a1"))
        >>> found.ok, SolveResult("eps", Status.INFEASIBLE).ok  # ok: a selection to use
        (True, False)
    """

    method: str
    status: Status
    selected: tuple[int, ...] = ()
    ids: tuple[str, ...] = ()
    objectives: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    param: str = ""
    backend: str = ""
    message: str = ""
    bound: float = math.nan
    route_reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status in SOLVED and bool(self.selected)


FRONT_COLUMNS = (
    "method",
    "param",
    "utility",
    "gap",
    "worst",
    "selected",
    "status",
    "seconds",
    "backend",
    "bound",
)
_EXTRA = ("mean_minus_worst", "var_d", "sum_B", "sum_Fz", "sum_cos")


def results_to_frame(problem: SelectionProblem, results: Sequence[SolveResult]) -> pd.DataFrame:
    """One row per result: FRONT_COLUMNS, ``U_<domain>`` per domain, the other objectives,
    ``n_selected``, ``message`` and ``route_reason``.

    Args:
        problem: the problem the results belong to (its domains name the U_<d> columns).
        results: solve results in the order the rows should have.

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.registry import make_solver
        >>> from selection.solvers.result import results_to_frame
        >>> problem = tied_problem()
        >>> results = [make_solver("eps", eps=e).solve(problem) for e in (None, 10.0)]
        >>> frame = results_to_frame(problem, results)
        >>> frame[["param", "selected", "utility", "gap", "U_a", "U_b"]].values.tolist()
        [['eps=inf', 'b0;a1', 72.5, 15.0, 65.0, 80.0], ['eps=10', 'a0;b0', 70.0, 0.0, 70.0, 70.0]]
    """
    dcols = [f"U_{d}" for d in problem.domains]
    names = ["utility", "gap", "worst", *dcols, *_EXTRA]
    rows = []
    for r in results:
        row = {
            "method": r.method,
            "param": r.param,
            "status": str(r.status),
            "selected": ";".join(r.ids),
            "seconds": float(r.seconds),
            "backend": r.backend,
            "bound": float(r.bound),
            "n_selected": len(r.selected),
            "message": r.message,
            "route_reason": r.route_reason,
        }
        for name in names:
            row[name] = float(r.objectives[name]) if name in r.objectives else math.nan
        rows.append(row)
    order = [*FRONT_COLUMNS, *dcols, *_EXTRA, "n_selected", "message", "route_reason"]
    return pd.DataFrame(rows, columns=order)


@dataclass(frozen=True)
class RawResult:
    """What a formulation's ``_solve`` hands back: selected indices, status and extras
    (:meth:`Solver.solve` turns it into a :class:`SolveResult`, computing the objectives).

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.base import Solver
        >>> from selection.solvers.result import RawResult, Status
        >>> class FirstK(Solver):  # a formulation: _solve hands back a RawResult
        ...     name = "first-k"
        ...     def _solve(self, problem):
        ...         return RawResult(tuple(range(problem.k))[::-1], Status.FEASIBLE, backend="hand")
        >>> result = FirstK().solve(tied_problem())
        >>> result.selected, result.ids, str(result.status), result.backend
        ((0, 1), ('a0', 'b0'), 'feasible', 'hand')
        >>> result.objectives["utility"], result.objectives["gap"]
        (70.0, 0.0)
    """

    selected: tuple[int, ...]
    status: Status
    backend: str = ""
    message: str = ""
    param: str = ""
    bound: float = math.nan  # proven bound on ``bound_objective`` (its units), NaN: none
    reason: str = ""  # why this route (``auto``'s portfolio), "" where there is no choice
    exact: bool = True  # False: "optimal" for rounded data only (CP-SAT), no bound from it
