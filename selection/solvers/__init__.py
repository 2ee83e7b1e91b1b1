"""Solvers, one module per formulation, behind :class:`selection.solvers.base.Solver`.

Importing this package imports every module in it, and each formulation module registers its
class with ``@register``: adding a formulation means adding one module (and its tests), no
other file.
"""

import importlib
import pkgutil

from selection.solvers.base import Solver
from selection.solvers.registry import SOLVERS, make_solver, register
from selection.solvers.result import SolveResult, Status

_INFRASTRUCTURE = {"base", "result", "registry", "grid", "params", "options", "sweeps", "milp"}

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name not in _INFRASTRUCTURE and not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["SOLVERS", "SolveResult", "Solver", "Status", "make_solver", "register"]
