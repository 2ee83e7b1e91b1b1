"""Solvers, one module per formulation, behind :class:`selection.solvers.base.Solver`.

Importing this package registers every built-in solver in ``SOLVERS``: adding a formulation
means adding one module that decorates its class with ``@register`` and importing it here.
"""

from selection.solvers import eps, exhaustive, maxmin, nsga2, weighted  # noqa: F401  (registration)
from selection.solvers.base import SOLVERS, Solver, SolveResult, Status, make_solver, register

__all__ = ["SOLVERS", "SolveResult", "Solver", "Status", "make_solver", "register"]
