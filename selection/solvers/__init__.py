"""Solvers, one module per formulation, behind :class:`selection.solvers.base.Solver`.

Importing this package registers every built-in solver in ``SOLVERS``.
"""

from selection.solvers.base import SOLVERS, SolveResult, Solver, Status, make_solver, register

__all__ = ["SOLVERS", "SolveResult", "Solver", "Status", "make_solver", "register"]

# Built-in solvers register themselves on import; each module is optional while it is being built.
import importlib as _importlib

for _mod in ("exhaustive", "weighted", "eps", "maxmin", "nsga2"):
    try:
        _importlib.import_module(f"selection.solvers.{_mod}")
    except ModuleNotFoundError as _exc:  # pragma: no cover - only while a module does not exist yet
        if _exc.name != f"selection.solvers.{_mod}":
            raise
