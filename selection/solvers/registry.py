"""The registry of formulations every caller reads (``fedsel solve/sweep/compare``,
``make_selector``, the conformance suite).

A formulation module decorates its :class:`~selection.solvers.base.Solver` subclass with
:func:`register`; importing the package :mod:`selection.solvers` imports every module in it,
so :func:`solvers` lists them all (the package is always imported before this module, being
its parent, so no import happens here).
"""

from __future__ import annotations

from typing import Any

from selection.errors import SelectionError
from selection.solvers.base import Solver

__all__ = ["SOLVERS", "register", "solvers", "make_solver", "param_symbols"]


SOLVERS: dict[str, type[Solver]] = {}


def register(cls: type[Solver]) -> type[Solver]:
    """Class decorator adding a solver to the registry under ``cls.name``.

    Examples:
        >>> import numpy as np
        >>> from selection.example import tied_problem
        >>> from selection.solvers.base import Solver
        >>> from selection.solvers.registry import SOLVERS, make_solver, register, solvers
        >>> from selection.solvers.result import RawResult, Status
        >>> @register
        ... class TopU(Solver):  # the K clients of highest U (ties: the lower index)
        ...     name = "top-u"
        ...     def _solve(self, problem):
        ...         top = np.argsort(-problem.U, kind="stable")[: problem.k]
        ...         return RawResult(tuple(top), Status.OPTIMAL)
        >>> problem = tied_problem()
        >>> "top-u" in solvers(), make_solver("top-u").solve(problem).ids
        (True, ('a0', 'a1'))
        >>> del SOLVERS["top-u"]  # leave the registry as it was
    """
    if not cls.name or not str(cls.name).strip():
        raise TypeError(f"{cls.__name__} has no name")
    from selection.plugins import guard_builtin

    guard_builtin(SOLVERS, cls.name, cls, "formulation")
    SOLVERS[cls.name] = cls
    return cls


def solvers() -> dict[str, type[Solver]]:
    """Every registered solver by name, in display order (``order``, then name); the
    installed plugins' formulations included (:mod:`selection.plugins`).

    Examples:
        >>> from selection.solvers.registry import solvers
        >>> known = solvers()
        >>> list(known)[:4], known["maxmin"].param
        (['weighted', 'eps', 'eps-rel', 'maxmin'], 'delta')
    """
    from selection.plugins import plugin_classes

    for cls in plugin_classes("fedsel.formulations", Solver):
        SOLVERS.setdefault(cls.name, cls)
    return dict(sorted(SOLVERS.items(), key=lambda kv: (kv[1].order, kv[0])))


def param_symbols() -> dict[str, str]:
    """How labels write each formulation parameter, as the solvers declare it (``param`` ->
    ``symbol``).

    Examples:
        >>> from selection.solvers.registry import param_symbols
        >>> symbols = param_symbols()
        >>> symbols["eps"], symbols["delta"], symbols["alpha"], symbols["weights"]
        ('ε', 'δ', 'α', 'w')
    """
    out: dict[str, str] = {}
    for cls in solvers().values():
        if cls.param and cls.symbol:
            out.setdefault(cls.param, cls.symbol)
    return out


def make_solver(name: str, **kwargs: Any) -> Solver:
    """Instantiate a registered solver by name.

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> problem = SelectionProblem.from_stats(example_stats(), k=5)
        >>> result = make_solver("eps", eps=25.0).solve(problem)
        >>> result.status.value, sorted(problem.ids_of(result.selected))
        ('optimal', ['svhn-3', 'syn-0', 'syn-2', 'syn-4', 'usps-3'])
    """
    known = solvers()
    if name not in known:
        raise SelectionError(f"unknown method {name!r}; choose one of {', '.join(known)}")
    return known[name](**kwargs)
