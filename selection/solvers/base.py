"""The one interface every solver implements.

``Solver.solve(problem)`` validates, times the run and normalizes the status; each solver
module writes only ``_solve`` (pymoo's ``evaluate``/``_evaluate`` split). Solvers are
configured with keyword-only arguments, validated at construction. Backend objects never
leave ``selection/solvers/``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

from selection.errors import SelectionError
from selection.objectives import evaluate
from selection.problem import SelectionProblem

__all__ = ["Status", "SolveResult", "Solver", "register", "make_solver", "SOLVERS"]


class Status(StrEnum):
    """One status vocabulary for every backend."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    TIME_LIMIT = "time_limit"
    INFEASIBLE = "infeasible"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


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

    @property
    def ok(self) -> bool:
        return self.status in (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT) and bool(
            self.selected
        )


@dataclass(frozen=True)
class _Raw:
    """What ``_solve`` hands back: selected indices, status and extras."""

    selected: tuple[int, ...]
    status: Status
    backend: str = ""
    message: str = ""
    param: str = ""


class Solver(ABC):
    """Base class: subclasses set ``name`` and implement ``_solve``."""

    name: ClassVar[str] = ""

    def solve(self, problem: SelectionProblem) -> SolveResult:
        """Solve one problem; never raises for infeasibility (status says it)."""
        if not isinstance(problem, SelectionProblem):
            raise SelectionError(
                f"{self.name}: expected a SelectionProblem, got {type(problem).__name__}"
            )
        t0 = time.perf_counter()
        raw = self._solve(problem)
        seconds = time.perf_counter() - t0
        sel = tuple(sorted(int(i) for i in raw.selected))
        status = Status(raw.status)
        if sel and len(sel) != problem.k:
            return SolveResult(
                self.name,
                Status.ERROR,
                seconds=seconds,
                param=raw.param,
                backend=raw.backend,
                message=f"solver returned {len(sel)} clients, expected k={problem.k}",
            )
        return SolveResult(
            method=self.name,
            status=status,
            selected=sel,
            ids=tuple(problem.ids_of(sel)),
            objectives=evaluate(problem, sel) if sel else {},
            seconds=seconds,
            param=raw.param,
            backend=raw.backend,
            message=raw.message,
        )

    @abstractmethod
    def _solve(self, problem: SelectionProblem) -> _Raw:
        """Compute a selection; return it with a normalized status."""


SOLVERS: dict[str, type[Solver]] = {}


def register(cls: type[Solver]) -> type[Solver]:
    """Class decorator adding a solver to the registry under ``cls.name``."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    SOLVERS[cls.name] = cls
    return cls


def make_solver(name: str, **kwargs: Any) -> Solver:
    """Instantiate a registered solver by name."""
    import selection.solvers  # noqa: F401  (registers the built-in solvers)

    if name not in SOLVERS:
        raise SelectionError(f"unknown method {name!r}; choose one of {', '.join(sorted(SOLVERS))}")
    return SOLVERS[name](**kwargs)


def indices_from_vector(x: np.ndarray, k: int) -> tuple[int, ...]:
    """The k largest entries of a (relaxed) 0/1 vector, as sorted indices."""
    x = np.asarray(x, dtype=float)
    return tuple(sorted(int(i) for i in np.argsort(-x, kind="stable")[:k]))
