"""The one interface every solver implements (its results: :mod:`.result`; the registry of
formulations: :mod:`.registry`).

``Solver.solve(problem)`` validates, times the run and normalizes the status; each solver
module writes only ``_solve`` (pymoo's ``evaluate``/``_evaluate`` split). Solvers are
configured with keyword-only arguments, validated at construction. Backend objects never
leave ``selection/solvers/``.

A formulation is one module: a :class:`Solver` subclass decorated with
:func:`~selection.solvers.registry.register` that
declares, as class attributes, what the rest of fedsel needs to know about it —

* ``param``: its sweep parameter (``eps``, ``delta``, ``weights`` or None) and
  ``default_grid``; :meth:`Solver.sweep_front` turns a grid into a front table (override it
  for a dedicated sweep: the complete ε sweep, NSGA-II's population, enumeration);
* ``spec_form`` / :meth:`Solver.spec_kwargs`: how ``make_selector`` reads ``name:arg``;
* ``order`` (position in lists and in ``fedsel compare``), ``in_compare``,
  ``any_objectives`` (its front can be drawn in any objectives), ``gives_exact_front``
  (its front is the exact one, the reference of ``compare``), ``summary`` (one help line).

``fedsel solve/sweep/compare`` and ``make_selector`` derive their method lists and the options
each method takes (the keywords of its ``__init__``, :func:`solver_options`) from
:func:`~selection.solvers.registry.solvers`.
"""

from __future__ import annotations

import inspect
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from selection.errors import SelectionError
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.options import RouteOptions
from selection.solvers.params import check_int
from selection.solvers.result import RawResult, SolveResult, Status, results_to_frame

__all__ = ["SweepOptions", "Solver", "solver_options"]


@dataclass(frozen=True, kw_only=True)
class SweepOptions(RouteOptions):
    """Settings of one front sweep (:meth:`Solver.sweep_front`): the route options every
    point takes (:class:`~selection.solvers.options.RouteOptions`, whose fields and defaults it
    inherits) and the sweep's own.

    Attributes:
        grid: values of the solver's sweep parameter; None = its default (for ``eps``: the
            complete sweep).
        objectives: objectives of solvers with ``any_objectives`` (default utility, gap).
        n_jobs: parallel grid points.
        max_count: enumeration limit (None = the enumerator's default).
        progress: ``(done, total, label)`` callback, or None.
        f_min, b_max: the optional Σ F_z >= f_min and Σ B <= b_max of solvers that take them
            (``eps``); None = no such constraint.

    Of the route options: ``backend`` may also be ``bb`` (the complete ε front in one search);
    ``time_limit`` is seconds per point, kept as given (None: the sweep's default, which the
    complete ε sweep takes as its per-point budget; inf: none); ``seed`` seeds every
    stochastic piece; ``tolerance`` is the exact routes' absolute gap per point, on the
    complete ε sweep also its step in the gap (a front certified within ``tolerance`` in both
    objectives).

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.base import SweepOptions
        >>> from selection.solvers.registry import solvers
        >>> problem = tied_problem()
        >>> front = solvers()["maxmin"].sweep_front(problem, SweepOptions(grid=[0.0, 5.0]))
        >>> front[["param", "selected", "utility", "worst"]].values.tolist()
        [['delta=0', 'b0;a1', 72.5, 65.0], ['delta=5', 'a0;b0', 70.0, 70.0]]
        >>> SweepOptions(n_jobs=0)  # bad route options are refused before any point is solved
        Traceback (most recent call last):
        ...
        ValueError: n_jobs=0 must be an integer >= 1
    """

    grid: Sequence | None = None
    objectives: tuple[str, ...] = ("utility", "gap")
    n_jobs: int = 1
    max_count: int | None = None
    progress: Callable[[int, int | None, str], None] | None = None
    f_min: float | None = None
    b_max: float | None = None

    whole_front = True

    def _checked(self) -> dict[str, Any]:
        """Every method's sweep refuses bad route options alike, before any point is solved
        (``bb`` takes a whole front); ``time_limit`` is kept as given (the class docstring)."""
        checked = super()._checked()
        checked["n_jobs"] = check_int("n_jobs", self.n_jobs)
        checked["time_limit"] = self.time_limit
        return checked


class _PerValue:
    """``with_param(v)`` for a solver without one: a fresh instance per grid value."""

    def __init__(self, cls, kw: dict) -> None:
        self.cls, self.kw = cls, kw

    def with_param(self, value):
        return self.cls(**{**self.kw, self.cls.param: value})


class Solver(ABC):
    """Base class: subclasses set ``name`` and implement ``_solve`` (module docstring).

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.base import Solver
        >>> from selection.solvers.registry import solvers
        >>> problem = tied_problem()
        >>> solver = solvers()["eps"](eps=10.0)  # a registered formulation
        >>> isinstance(solver, Solver), solver.spec_kwargs("5")
        (True, {'eps': 5.0})
        >>> result = solver.solve(problem)
        >>> str(result.status), result.ids, result.objectives["utility"], result.objectives["gap"]
        ('optimal', ('a0', 'b0'), 70.0, 0.0)
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    param: ClassVar[str | None] = None
    #: how a selector spec's ``name:arg`` gives ``param`` (:meth:`spec_kwargs`): ``float``, a
    #: number (or a one-line error); ``str``, the text as written; None (the default, what a
    #: formulation from a plugin gets), a number where the text is one, else the text
    param_type: ClassVar[type | None] = None
    #: how figures and labels write ``param`` (``ε=5``, ``δ=2``); None: the name itself
    symbol: ClassVar[str | None] = None
    default_grid: ClassVar[tuple | None] = None
    spec_form: ClassVar[str] = ""
    #: the default of each comma-separated argument of a spec, in order (None: none): trailing
    #: arguments equal to theirs are dropped from the canonical spec (``eps-lt:5,10`` is
    #: ``eps-lt:5``), so one selector has one spelling
    arg_defaults: ClassVar[tuple[str | None, ...]] = ()
    #: the surrogate structures the formulation takes (empty: any); a spec naming another
    #: is refused when it is parsed, before any run
    surrogate_structures: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[int] = 100
    in_compare: ClassVar[bool] = True
    any_objectives: ClassVar[bool] = False
    gives_exact_front: ClassVar[bool] = False
    #: the plane the formulation optimizes (y, x): where its front is drawn by default, and
    #: why its points lie off a reference front drawn in another plane
    plane: ClassVar[tuple[str, str]] = ("utility", "gap")
    #: the objective a point's ``bound`` bounds from above (None: the solver proves nothing)
    bound_objective: ClassVar[str | None] = None
    #: the formulation keeps a run's state between rounds (``state``/``load_state``): a
    #: selector keeps one instance for the run instead of one per round
    stateful: ClassVar[bool] = False
    #: what a user must give for one solve (``fedsel solve``): None, or how to write
    #: ``param`` (e.g. ``E, the bound on gap(S) in pp``) where the formulation has no default
    param_required: ClassVar[str | None] = None
    #: the side constraints its fronts honour (:class:`SweepOptions` ``f_min``, ``b_max``)
    front_constraints: ClassVar[tuple[str, ...]] = ()
    #: without a grid, its sweep walks the whole front point by point (the complete ε sweep),
    #: so a point stopped at a time limit may hide the points near it
    adaptive_front: ClassVar[bool] = False
    #: the :class:`~selection.solvers.options.RouteOptions` fields the constructor honours,
    #: given as ``options=`` or as keywords (:meth:`RouteOptions.of`); empty: none
    route_options: ClassVar[frozenset[str]] = frozenset()

    @property
    def gap_bound(self) -> float | None:
        """The bound on gap(S) this instance imposes (None: none): an infeasible answer then
        proves that every selection's gap exceeds it, which a fallback to the smallest-gap
        point starts from (:class:`selection.selectors.Selector`)."""
        return None

    @classmethod
    def reachable(cls, problem: SelectionProblem, **constraints: float | None) -> dict | None:
        """What ``param`` can reach on ``problem`` under ``constraints`` (told after an
        infeasible point, with values to try); None: the formulation says nothing.

        Examples:
            >>> from selection.example import example_stats
            >>> from selection.problem import SelectionProblem
            >>> from selection.solvers.registry import solvers
            >>> problem = SelectionProblem.from_stats(example_stats(), k=5)
            >>> solvers()["maxmin"].reachable(problem) is None
            True
            >>> sorted(solvers()["eps"].reachable(problem))
            ['grid', 'max_gap', 'min_gap', 'u_star']
        """
        return None

    @classmethod
    def sweep_front(cls, problem: SelectionProblem, options: SweepOptions) -> pd.DataFrame:
        """The front table of this formulation over its parameter grid (one row per point).

        The default solves once per grid value (once when ``param`` is None), in
        ``options.n_jobs`` threads with ``options.progress`` reported per point; a solver with
        ``with_param`` (the exact ones) is built once per thread and copied per point, so what
        it caches per problem (persistent models, worst*) serves the whole sweep. Columns as
        :func:`results_to_frame`.
        """
        from selection.solvers.grid import _run_grid

        taken = solver_options(cls)
        run = {name: getattr(options, name) for name in (*RouteOptions.names(), "objectives")}
        kw = {name: value for name, value in run.items() if name in taken}
        if "objectives" in kw:
            kw["objectives"] = tuple(kw["objectives"])
        if cls.param is None:
            return results_to_frame(problem, [cls(**kw).solve(problem)])
        grid = options.grid if options.grid is not None else cls.default_grid
        if grid is None:
            raise SelectionError(f"{cls.name}: give a grid of {cls.param}")
        grid = list(grid)
        if not grid:
            return results_to_frame(problem, [])
        if hasattr(cls, "with_param"):
            make = lambda: cls(**{**kw, cls.param: grid[0]})  # noqa: E731
        else:
            make = lambda: _PerValue(cls, kw)  # noqa: E731
        results = _run_grid(make, problem, grid, options.n_jobs, options.progress, cls.name)
        return results_to_frame(problem, results)

    @classmethod
    def spec_kwargs(cls, arg: str | None) -> dict[str, Any]:
        """Constructor keywords of the selector spec ``name:arg`` (``arg`` None: no ``:``).

        The default reads ``arg`` as the value of ``param``, converted as ``param_type`` says,
        and takes no argument when ``param`` is None.
        """
        if arg is None:
            return {}
        if cls.param is None:
            raise ValueError(f"{cls.name} takes no argument")
        if cls.param_type is str:
            return {cls.param: arg}
        try:
            return {cls.param: (cls.param_type or float)(arg)}
        except ValueError:
            if cls.param_type is None:
                return {cls.param: arg}
            raise ValueError(f"{arg!r} is not a number") from None

    def solve(self, problem: SelectionProblem) -> SolveResult:
        """Solve one problem; never raises for infeasibility (status says it)."""
        if not isinstance(problem, SelectionProblem):
            raise SelectionError(
                f"{self.name}: expected a SelectionProblem, got {type(problem).__name__}"
            )
        t0 = time.perf_counter()
        raw = self._solve(problem)
        seconds = time.perf_counter() - t0
        status = Status(raw.status)
        if len(raw.selected) and len(raw.selected) != problem.k:
            return SolveResult(
                self.name,
                Status.ERROR,
                seconds=seconds,
                param=raw.param,
                backend=raw.backend,
                message=f"solver returned {len(raw.selected)} clients, expected k={problem.k}",
            )
        # distinct whole indices in range, as every built-in returns (a plugin's too)
        sel = (
            checked_selection(raw.selected, problem.n, None, self.name)  # K: checked above
            if len(raw.selected)
            else ()
        )
        objectives = evaluate(problem, sel) if sel else {}
        bound = float(raw.bound)
        if self.bound_objective and sel:
            value = objectives[self.bound_objective]
            if status == Status.OPTIMAL and math.isnan(bound) and raw.exact:
                bound = value  # a proven optimum bounds itself (enumeration, fractional MILPs)
            elif not math.isnan(bound):
                bound = max(bound, value)  # a selection attains its value: never below it
        return SolveResult(
            method=self.name,
            status=status,
            selected=sel,
            ids=tuple(problem.ids_of(sel)),
            objectives=objectives,
            seconds=seconds,
            param=raw.param,
            backend=raw.backend,
            message=raw.message,
            bound=bound,
            route_reason=raw.reason,
        )

    @abstractmethod
    def _solve(self, problem: SelectionProblem) -> RawResult:
        """Compute a selection; return it with a normalized status."""


def checked_selection(idx, n: int, k: int | None, who: str) -> tuple[int, ...]:
    """A rule's or formulation's answer as sorted client indices, checked as the built-ins'
    are: whole numbers (integer types, not floats), each in 0..n-1 (numpy would wrap a negative
    one), K of them, distinct. SelectionError naming ``who`` and the first offence.

    Examples:
        >>> checked_selection([3, 0, 1], 5, 3, "toy")
        (0, 1, 3)
        >>> checked_selection([0, 0, 1], 5, 3, "toy")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: toy: returned client 0 twice (a selection is K distinct clients)
        >>> checked_selection([0, -1, 2], 5, 3, "toy")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: toy: returned client index -1, outside 0..4
    """
    try:
        values = list(idx)
    except TypeError:
        raise SelectionError(f"{who}: returned {idx!r}, not a sequence of client indices") from None
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise SelectionError(f"{who}: returned {v!r}, not a whole client index")
        if not 0 <= int(v) < n:
            raise SelectionError(f"{who}: returned client index {int(v)}, outside 0..{n - 1}")
        out.append(int(v))
    if len(set(out)) != len(out):
        twice = next(v for v in out if out.count(v) > 1)
        raise SelectionError(
            f"{who}: returned client {twice} twice (a selection is K distinct clients)"
        )
    if k is not None and len(out) != k:  # None: any count (``all``, full participation)
        raise SelectionError(f"{who}: returned {len(out)} clients, expected k={k}")
    return tuple(sorted(out))


def solver_options(cls: type[Solver]) -> frozenset[str]:
    """The keyword arguments a solver's constructor takes: its keyword-only parameters and
    the route options it honours (:attr:`Solver.route_options`; ``options`` itself is not
    one a command sets by name).

    Examples:
        >>> from selection.solvers.base import solver_options
        >>> from selection.solvers.registry import solvers
        >>> sorted(solver_options(solvers()["eps-rel"]))
        ['alpha', 'backend', 'seed', 'time_limit']
    """
    params = inspect.signature(cls.__init__).parameters.items()
    named = {n for n, p in params if p.kind is p.KEYWORD_ONLY and n != "options"}
    return frozenset(named | cls.route_options)
