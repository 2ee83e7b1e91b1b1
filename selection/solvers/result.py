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
    """One status vocabulary for every backend."""

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
    (:meth:`Solver.solve` turns it into a :class:`SolveResult`, computing the objectives)."""

    selected: tuple[int, ...]
    status: Status
    backend: str = ""
    message: str = ""
    param: str = ""
    bound: float = math.nan  # proven bound on ``bound_objective`` (its units), NaN: none
    reason: str = ""  # why this route (``auto``'s portfolio), "" where there is no choice
    exact: bool = True  # False: "optimal" for rounded data only (CP-SAT), no bound from it
