"""Common machinery of the ε-constraint and max-min solvers.

An :class:`ExactSolver` picks its route per problem (``auto``: enumeration when C(N, K) is at
most ``enum_limit``, else the measured :func:`portfolio`: CBC, except SCIP below 500 clients
where the clients' own domains determine the domain rows; for a black-box surrogate the swap
local search of :mod:`selection.solvers.black_box`, route ``search``), records why
(``route_reason`` in front tables), keeps one persistent backend model per problem (weakly
keyed, shared by the copies :meth:`ExactSolver.with_param` makes for the points of a sweep) and
only changes row bounds between points.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import weakref
from abc import abstractmethod
from typing import Any

import numpy as np

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.solvers.base import Solver
from selection.solvers.milp.cpsat import exact_at
from selection.solvers.milp.formulations import count_groups, model_data
from selection.solvers.milp.model import LexBackend
from selection.solvers.milp.portfolio import (
    MAX_WEIGHT_SPREAD,
    check_backend,
    fixing_from,
    ill_conditioned,
    portfolio,
    route_refusal,
    tolerance_gap,
    value_quantum,
    weight_spread,
)
from selection.solvers.milp.registry import (
    integer_data,
    make_backend,
    milp_backend_class,
)
from selection.solvers.options import Counts, RouteOptions
from selection.solvers.params import Route
from selection.solvers.result import RawResult, Status
from selection.surrogates.base import Structure

__all__ = ["ExactSolver"]


class ExactSolver(Solver):
    """Base of ``eps``, ``maxmin`` and ``fisher-fair``: the route options and the model cache.

    Args:
        options: how a point is solved (:class:`~selection.solvers.options.RouteOptions`:
            ``backend``, ``time_limit``, ``seed``, ``threads``, ``scale``, ``enum_limit``,
            ``mip_gap``, ``counts``, ``tolerance``; ``backend`` one of the registered routes).
        route: any of those fields as keywords, over ``options``.
    """

    route_options = frozenset(RouteOptions.names())

    def __init__(self, *, options: RouteOptions | None = None, **route: Any) -> None:
        self.options = RouteOptions.of(
            options, takes=self.route_options, who=f"{type(self).__name__}.__init__", **route
        )
        check_backend(self.options.backend)
        self._models: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._routes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._quanta: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    #: True where the formulation's MILP takes a linear-fractional surrogate (``weighted``)
    fractional = False

    def route(self, problem: SelectionProblem) -> str:
        """The backend this solver uses on ``problem`` (``auto`` resolved)."""
        return self.route_choice(problem)[0]

    def route_choice(self, problem: SelectionProblem) -> tuple[str, str]:
        """(route, why): the backend used on ``problem`` and the reason it was chosen."""
        problem = problem.linear_view()
        o = self.options
        if o.backend != Route.AUTO:
            return o.backend, "given by --backend"
        count = math.comb(problem.n, problem.k)
        if count <= o.enum_limit:
            return Route.ENUM, f"C(N, K) = {count:,} <= enum_limit {o.enum_limit:,}: enumeration"
        from selection.solvers.exhaustive import DEFAULT_MAX_COUNT

        if ill_conditioned(problem) and count <= DEFAULT_MAX_COUNT:
            return Route.ENUM, (
                f"the {problem.surrogate} surrogate's weights span {weight_spread(problem):.3g}x, "
                "beyond what a MILP route resolves exactly; C(N, K) = "
                f"{count:,}: enumeration"
            )
        if (
            problem.structure == Structure.BLACK_BOX
        ):  # no MILP takes it: selection.solvers.black_box
            return Route.SEARCH, (
                f"C(N, K) = {count:,} > enum_limit {o.enum_limit:,} and the "
                f"{problem.surrogate} surrogate is black-box: swap local search"
            )
        # the portfolio reads the whole table (alignment, grid step): once per problem, shared
        # by the copies a sweep makes, as the models are
        if problem not in self._routes:
            self._routes[problem] = portfolio(problem, self.small_n_scip, self.max_min)
        return self._routes[problem]

    #: whether ``auto`` may take SCIP below :data:`PORTFOLIO_MIN_N` clients (:func:`portfolio`)
    small_n_scip = False
    #: whether the first stage maximizes the worst domain row (:func:`portfolio`)
    max_min = False

    def quantum(self, problem: SelectionProblem) -> float:
        """q where every U_d of the data this route solves is a whole multiple of q, else 0
        (:func:`value_quantum`; CP-SAT's rounded data: 0 unless they are exact)."""
        problem = problem.linear_view()
        if problem not in self._quanta:
            off_grid = self.integer_route(problem) and not self.exact_on_cpsat(problem)
            mean = problem.structure == Structure.LINEAR and problem.d > 0
            self._quanta[problem] = value_quantum(problem.Ud) if mean and not off_grid else 0.0
        return self._quanta[problem]

    #: what each lexicographic objective sums (``U``: Σ U_i, ``Ud``: a domain row's sum or
    #: a difference of two, None: neither), for :meth:`objective_quanta`
    objective_kinds: tuple[str | None, ...] = ()

    def objective_quanta(self, problem: SelectionProblem) -> list[float]:
        """Per objective, the grid its values lie on (sum units; 0: none), for
        ``MilpSpec.quanta``: the U column's and the domain rows' :func:`value_quantum`."""
        mean = problem.structure == Structure.LINEAR and problem.d > 0
        q = {"U": value_quantum(problem.U) if mean else 0.0, "Ud": self.quantum(problem), None: 0.0}
        return [q[kind] for kind in self.objective_kinds]

    def model(self, problem: SelectionProblem) -> LexBackend:
        """The persistent backend model of ``problem`` (built on first use)."""
        route = self.route(problem)
        if route == Route.ENUM:
            raise ValueError("the enum route has no MILP model")
        models = self._models.setdefault(problem, {})
        if route not in models:
            o = self.options
            spec = self._spec(model_data(problem, route, o.scale), problem)
            integer = integer_data(route)
            if not integer:  # integer data: the objectives are integers already
                spec.quanta = self.objective_quanta(problem)[: len(spec.objectives)]
            scaled = {"scale": o.scale} if integer else {}
            abs_gap = tolerance_gap(o.tolerance, problem.k if self.bound_per_client else 1)
            backend = make_backend(
                route,
                spec,
                seed=o.seed,
                threads=o.threads,
                mip_gap=o.mip_gap,
                abs_gap=abs_gap,
                **scaled,
            )
            backend.core_min_n = min(backend.core_min_n, fixing_from(problem))
            models[route] = backend
        return models[route]

    def groups(self, problem: SelectionProblem) -> np.ndarray | None:
        """The count columns' groups on ``problem`` (None: the model has none)."""
        if self.options.counts == Counts.OFF:
            return None
        if self.options.counts == Counts.AUTO:
            route = self.route(problem)
            if route == Route.ENUM or not milp_backend_class(route).counts_default:
                return None
        return count_groups(problem)

    def model_data(self, problem: SelectionProblem) -> dict[str, np.ndarray]:
        """The data the route solves with (CP-SAT: rounded to 1/scale; others: exact)."""
        return model_data(problem, self.route(problem), self.options.scale)

    def with_param(self, value: float | None) -> ExactSolver:
        """A copy for another ε/δ that shares this solver's persistent models."""
        other = copy.copy(self)
        other._set_param(value)
        return other

    def integer_route(self, problem: SelectionProblem) -> bool:
        """Whether the route this solver takes on ``problem`` solves rounded integer data."""
        return integer_data(self.route(problem))

    def _solve(self, problem: SelectionProblem) -> RawResult:
        # a linear surrogate: the mean problem over its per-client values (same objectives)
        problem = problem.linear_view()
        route, why = self.route_choice(problem)
        if route not in (Route.ENUM, Route.SEARCH) and not integer_data(route):
            if ill_conditioned(problem):  # a float MILP is not exact here: enumeration is
                route, why = self._exact_instead(problem, route)
        exact = route != Route.SEARCH and (not integer_data(route) or self.exact_on_cpsat(problem))
        return dataclasses.replace(self._solve_route(problem, route), reason=why, exact=exact)

    def _exact_instead(self, problem: SelectionProblem, route: str) -> tuple[str, str]:
        """(enum, why) for a float MILP route asked on an ill-conditioned linear-fractional
        round (:func:`~.portfolio.ill_conditioned`); SelectionError, naming the reason, where
        C(N, K) is beyond enumeration."""
        from selection.solvers.exhaustive import DEFAULT_MAX_COUNT

        count = math.comb(problem.n, problem.k)
        spread = weight_spread(problem)
        if count > DEFAULT_MAX_COUNT:
            raise SelectionError(
                f"{self.name}: the {problem.surrogate} surrogate's weights span {spread:.3g}x, "
                f"beyond the {MAX_WEIGHT_SPREAD:.0e} a MILP route resolves exactly, and C(N, K) = "
                f"{count:,} is beyond enumeration; use --surrogate mean, or fewer clients"
            )
        return Route.ENUM, (
            f"--backend {route} asked, but the {problem.surrogate} surrogate's weights span "
            f"{spread:.3g}x, beyond what a MILP route resolves exactly: answered by enumeration "
            f"(C(N, K) = {count:,})"
        )

    def _solve_route(self, problem: SelectionProblem, route: str) -> RawResult:
        t0 = time.perf_counter()
        if route == Route.ENUM:
            return self._solve_enum(problem)
        if route == Route.SEARCH:
            return self._solve_search(problem)
        o = self.options
        refusal = route_refusal(route, problem, fractional=self.fractional)
        if not refusal and o.tolerance > 0 and integer_data(route):
            if not self.exact_on_cpsat(problem):
                refusal = (
                    f"--tolerance {o.tolerance:g}: CP-SAT solves the data rounded to "
                    f"1/{o.scale}, so its bound certifies nothing about the true problem; "
                    "use --backend highs, cbc, scip or auto for a certified tolerance"
                )
        if refusal:  # a request this route cannot answer: bad input, not a failed solve
            raise SelectionError(refusal)
        if problem.structure == Structure.LINEAR_FRACTIONAL:  # milp.fractional, fresh models
            left = None if o.time_limit is None else o.time_limit
            return self._solve_fractional(problem, route, left)
        model = self.model(problem)  # building the model counts against the time limit
        left = None if o.time_limit is None else o.time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            msg = "time limit reached while building the model; no incumbent"
            return RawResult((), Status.TIME_LIMIT, route, msg, self._param())
        self._apply(model, problem)
        out = model.solve(left, start=self._start_of(problem))
        bound = self._bound_units(out.bound, problem, route)
        return RawResult(out.selected, out.status, route, out.message, self._param(), bound)

    #: client ids of a selection the MILP routes give stage 1 as a starting solution (e.g.
    #: the previous round's choice), where the model takes one and it is feasible; None: none.
    #: The answer is the same optimum; among selections tied in both stages (on the data the
    #: route solves: CP-SAT's rounded data tie more often) a start, like the seed, may pick
    #: another. Not used by the selectors: on the study's rounds it saved no backend time
    #: (results/benchmarks/eps_warm_start.md).
    start: tuple[str, ...] | None = None

    def _start_of(self, problem: SelectionProblem) -> list[int] | None:
        """:attr:`start` as indices into ``problem`` (None where a client is not in it)."""
        if self.start is None:
            return None
        where = {str(c): i for i, c in enumerate(problem.ids)}
        idx = [where.get(str(c)) for c in self.start]
        return None if any(i is None for i in idx) else idx

    #: whether the first stage's objective is a sum over the K selected (U, worst: divided
    #: by K into the reported mean) or reported as the sum itself (Σ F_z)
    bound_per_client = True

    def _bound_units(self, bound: float, problem: SelectionProblem, route: str) -> float:
        """The model's stage-1 bound in the units of ``bound_objective``.

        CP-SAT solves the data rounded to 1/scale, objective *and* constraint rows: where the
        data are not multiples of 1/scale a selection the true rows admit may be cut off, so
        its bound proves nothing about the true problem (NaN); where they are, it is exact.
        """
        if not np.isfinite(bound):
            return math.nan
        if integer_data(route) and not self.exact_on_cpsat(problem):
            return math.nan
        return bound / problem.k if self.bound_per_client else bound

    def _cpsat_fields(self, problem: SelectionProblem) -> list[np.ndarray]:
        """The data this formulation's model reads (CP-SAT rounds them)."""
        return [problem.U, problem.Ud]

    def exact_on_cpsat(self, problem: SelectionProblem) -> bool:
        """Whether the data this formulation reads are multiples of 1/scale (then CP-SAT's
        rounded model is the true problem)."""
        return all(exact_at(a, self.options.scale) for a in self._cpsat_fields(problem))

    def _enum_raw(self, selected: tuple[int, ...]) -> RawResult:
        """The enumeration route's answer: ``selected``, or infeasible when it is empty."""
        if not selected:
            msg = "no selection satisfies the constraints"
            return RawResult((), Status.INFEASIBLE, Route.ENUM, msg, self._param())
        return RawResult(selected, Status.OPTIMAL, Route.ENUM, "", self._param())

    def candidates(self, problem: SelectionProblem, m: int) -> list[tuple[int, ...]]:
        """The ``m`` best selections by this formulation's criterion, best first (enumeration;
        the first is the one :meth:`solve` returns there)."""
        from selection.solvers.exhaustive import top_selections

        if self.route(problem) != Route.ENUM:
            raise SelectionError(
                f"{self.name}: verified picks rank candidates by enumeration; C(N, K) = "
                f"{math.comb(problem.n, problem.k):,} is above enum_limit={self.options.enum_limit:,}"
                " (or choose backend enum)"
            )
        return top_selections(problem, self._rule(problem), m)

    def _frac_options(self, problem: SelectionProblem) -> dict:
        o = self.options
        return dict(seed=o.seed, threads=o.threads, scale=o.scale, groups=self.groups(problem))

    def _solve_fractional(self, problem: SelectionProblem, route: str, time_limit) -> RawResult:
        """The formulation on a linear-fractional surrogate (:mod:`.fractional`)."""
        raise NotImplementedError

    def _solve_search(self, problem: SelectionProblem) -> RawResult:
        """The formulation on a black-box surrogate above the enumeration limit
        (:mod:`selection.solvers.black_box`)."""
        raise SelectionError(f"{self.name}: no search route for the {problem.surrogate} surrogate")

    def _rule(self, problem: SelectionProblem):
        """The formulation's question on the enumeration table (:mod:`..exhaustive` rules)."""
        raise NotImplementedError(f"{self.name} has no enumeration rule")

    def realized_rule(self, problem: SelectionProblem, table: dict[str, np.ndarray]):
        """The formulation's question on candidates' realized values (thresholds taken
        relative to the candidates where the formulation's are relative to the round)."""
        raise NotImplementedError(f"{self.name} has no realized rule")

    @abstractmethod
    def _set_param(self, value: float | None) -> None:
        """Validate and store the sweep parameter (ε or δ)."""

    @abstractmethod
    def _param(self) -> str:
        """The parameter as text for ``SolveResult.param``."""

    @abstractmethod
    def _spec(self, data: dict[str, np.ndarray], problem: SelectionProblem):
        """The MILP of this formulation on ``data``."""

    @abstractmethod
    def _apply(self, model: LexBackend, problem: SelectionProblem) -> None:
        """Set the parameter's row bounds on the persistent model."""

    @abstractmethod
    def _solve_enum(self, problem: SelectionProblem) -> RawResult:
        """Answer by enumeration."""
