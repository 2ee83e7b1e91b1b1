"""Exact ε-constraint and max-min routes as lexicographic MILPs.

* :mod:`.model` — :class:`MilpSpec` (a backend-neutral model as arrays), :class:`LexBackend`
  (the lexicographic stage loop over one persistent model) and the backend registry;
* :mod:`.fixing` — exact LP reduced-cost fixing before the first stage;
* :mod:`.formulations` — the ε-constraint and max-min models;
* :mod:`.highs`, :mod:`.cbc`, :mod:`.cpsat`, :mod:`.scip` — backends; each registers itself with
  :func:`register_backend` when imported here;
* :mod:`.exact` — :class:`ExactSolver`, the base of the ``eps`` and ``maxmin`` solvers (route
  choice, model cache).
"""

from selection.solvers.milp import cbc, cpsat, highs, scip  # noqa: F401  (backend registration)
from selection.solvers.milp.exact import AUTO_MILP, DEFAULT_ENUM_LIMIT, ExactSolver, backends
from selection.solvers.milp.model import LexBackend, MilpSpec, make_backend, milp_backends

__all__ = [
    "AUTO_MILP",
    "DEFAULT_ENUM_LIMIT",
    "ExactSolver",
    "LexBackend",
    "MilpSpec",
    "backends",
    "make_backend",
    "milp_backends",
]
