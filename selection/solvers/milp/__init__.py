"""Exact ε-constraint and max-min routes as lexicographic MILPs.

* :mod:`.spec` — :class:`MilpSpec` (a backend-neutral model as arrays);
* :mod:`.model` — :class:`LexBackend` (the lexicographic stage loop over one persistent model;
  it re-exports the public names of :mod:`.spec` and :mod:`.registry`);
* :mod:`.descent` — the gap descent of the ε model's last stage (a mixin of :class:`LexBackend`);
* :mod:`.registry` — the backend registry (:func:`register_backend`, :func:`make_backend`);
* :mod:`.fixing` — exact LP reduced-cost fixing before the first stage;
* :mod:`.formulations` — the ε-constraint and max-min models;
* :mod:`.highs`, :mod:`.cbc`, :mod:`.cpsat`, :mod:`.scip` — backends; each registers itself with
  :func:`register_backend` when imported. Every module of this package is imported here (found
  by discovery, as the surrogates and formulations are): adding a backend is adding one module;
* :mod:`.exact` — :class:`ExactSolver`, the base of the ``eps`` and ``maxmin`` solvers (route
  choice, model cache).
"""

import importlib
import pkgutil

from selection.solvers.milp.exact import ExactSolver
from selection.solvers.milp.model import LexBackend
from selection.solvers.milp.portfolio import AUTO_MILP, DEFAULT_ENUM_LIMIT, backends
from selection.solvers.milp.registry import make_backend, milp_backends, register_backend
from selection.solvers.milp.spec import MilpSpec

for _mod in pkgutil.iter_modules(__path__):  # backend registration (and the other modules)
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = [
    "AUTO_MILP",
    "DEFAULT_ENUM_LIMIT",
    "ExactSolver",
    "LexBackend",
    "MilpSpec",
    "backends",
    "make_backend",
    "milp_backends",
    "register_backend",
]
