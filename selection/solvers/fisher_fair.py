"""Fisher within the fair set: max Σ F_z(S) s.t. worst(S) >= worst* − δ, |S| = K.

Why this formulation exists (the committed study, ``results/study``): the strongest baseline
of live training is ``fisher-topk`` (the K largest Fisher traces: the clients the model fits
worst, a signal that corrects itself as training moves), while every U-based formulation is
one-step myopic (U is *negatively* rank-correlated with F) and the fairness formulations buy
their worst-domain gains by starving the best domain. ``fisher-fair`` keeps Fisher as the
objective and asks only that the predicted worst-domain utility stay within δ points of the
best any K-selection reaches this round:

    worst* = max_{|S|=K} min_d U_d(S)
    max Σ_{i∈S} F_z,i  s.t.  U_d(S) >= worst* − δ for every domain d,  Σ x = K,

then, among the optima, max U (a lexicographic second stage). δ = 0 is the max-min point
(Fisher breaks its ties), δ = inf is ``fisher-topk`` (by Σ F_z, ties to higher U).

Model (sum units, :func:`selection.solvers.milp.formulations.fisher_fair_spec`): binaries x_i;
rows ``w<d>``: Σ_i x_i U_id >= K·(worst* − δ) − 1e-7 (exact on CP-SAT's rounded data).
worst* comes from the max-min solver (δ = inf) on the same route and data. Enumeration
answers the same question, ties compared at 1e-9.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from typing import Any

import numpy as np

from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.black_box import Goal, answer, first_bound, search
from selection.solvers.exhaustive import (
    DEFAULT_MAX_COUNT,
    best_fisher_fair,
    fisher_fair_rule,
    worst_star_of,
)
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.milp.exact import ExactSolver
from selection.solvers.milp.formulations import fisher_fair_spec
from selection.solvers.milp.model import INF, LexBackend, integer_data
from selection.solvers.options import RouteOptions
from selection.solvers.params import check_nonneg, fmt_param
from selection.solvers.registry import register
from selection.solvers.result import RawResult

__all__ = ["FisherFairSolver"]


@register
class FisherFairSolver(ExactSolver):
    """max Σ F_z s.t. worst >= worst* − delta, then max U (lexicographic).

    Args:
        delta: allowed loss of worst-domain utility below worst*, percentage points, >= 0
            (inf: no floor, the top-K by F_z).
        options: the route options (:class:`~selection.solvers.options.RouteOptions`);
            ``route``: any of them as keywords.
    """

    max_min = True  # auto: a max-min first stage (milp.portfolio.portfolio)

    name = "fisher-fair"
    summary = "max Σ F_z s.t. worst >= worst* − δ (Fisher within δ of the max-min point)"
    param = "delta"
    param_type = float
    symbol = "δ"
    plane = ("sum_Fz", "worst")
    default_grid = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
    spec_form = "fisher-fair:D"
    order = 35
    bound_objective = "sum_Fz"
    bound_per_client = False

    def __init__(
        self, *, delta: float = 1.0, options: RouteOptions | None = None, **route: Any
    ) -> None:
        super().__init__(options=options, **route)
        self._set_param(delta)
        # worst* is solved exactly: a tolerant worst* would widen the fair set itself
        self._maxmin = MaxminSolver(delta=INF, options=self.options, tolerance=0.0)
        # K·worst* per problem and route; shared by the copies with_param makes for a δ sweep,
        # so a sweep solves the max-min problem once, not once per point
        self._worst_star: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _set_param(self, value: float | None) -> None:
        self.delta = check_nonneg("delta", value, allow_none=False)

    def _param(self) -> str:
        return fmt_param("delta", self.delta)

    objective_kinds = (None, "U")

    def _spec(self, data, problem: SelectionProblem):
        return fisher_fair_spec(data, problem.k, self.groups(problem))

    def _cpsat_fields(self, problem: SelectionProblem) -> list[np.ndarray]:
        return [problem.U, problem.Ud, problem.F_z]

    def worst_star_sum(self, problem: SelectionProblem) -> float:
        """K·worst* on the data this route solves with (sum units); nan if no answer."""
        cache = self._worst_star.setdefault(problem, {})
        route = self.route(problem)
        if route not in cache:
            r = self._maxmin.solve(problem)
            if not r.ok:
                return float("nan")  # not kept: the next point tries again
            cache[route] = float(self.model_data(problem)["Ud"][list(r.selected)].sum(axis=0).min())
        return cache[route]

    def _apply(self, model: LexBackend, problem: SelectionProblem) -> None:
        top = self.worst_star_sum(problem)
        lo = -INF if self.delta == INF or np.isnan(top) else top - problem.k * self.delta
        if lo != -INF and not self.integer_route(problem):
            lo -= 1e-7
        for d in range(problem.Ud.shape[1]):
            model.set_row_bounds(f"w{d}", lo, INF)

    fractional = True

    def _solve_fractional(self, problem: SelectionProblem, route: str, time_limit) -> RawResult:
        from selection.solvers.milp.fractional import (
            FracStage,
            lex_fractional,
            raw_of,
            threshold_row,
            weighted_data,
        )

        data = weighted_data(problem, route, self.options.scale)
        nU, nUd, n, Fz = data["nU"], data["nUd"], data["n"], data["F_z"]
        N, D = nUd.shape
        rows = [("card", np.ones(N), float(problem.k), float(problem.k))]
        if self.delta != INF:
            top = self._maxmin._solve_fractional(problem, route, time_limit)
            if not top.selected:
                return raw_of((), top.status, top.message, route, self._param())
            x = np.zeros(N)
            x[list(top.selected)] = 1.0
            star = (float((x @ nUd).min()), float(x @ n))
            exact = integer_data(route)
            rows += [
                threshold_row(f"w{d}", nUd[:, d], n, star, self.delta, exact) for d in range(D)
            ]
        stages = [
            FracStage(np.asarray(Fz, dtype=float), None, lambda x: (float(x @ Fz), 1.0)),
            FracStage(nU, n, lambda x: (float(x @ nU), float(x @ n))),
        ]
        sel, status, msg, _ = lex_fractional(
            route,
            N,
            problem.k,
            [],
            rows,
            stages,
            time_limit=time_limit,
            **self._frac_options(problem),
        )
        return raw_of(sel, status, msg, route, self._param())

    def _solve_search(self, problem: SelectionProblem) -> RawResult:
        floor, note = -INF, ""
        if self.delta != INF:  # worst*: the search's best worst stands in for it
            top = self._maxmin._solve_search(problem)
            if not top.selected:
                return dataclasses.replace(top, param=self._param())
            w_hat = float(evaluate(problem, top.selected)["worst"])
            floor = w_hat - self.delta - 1e-9
            note = (
                f"; worst* taken as {w_hat:.4g} % (the search's best; proven worst* <= "
                f"{first_bound(problem, 'worst'):.4g} %)"
            )
        goal = Goal((("sum_Fz", 1.0), ("utility", 1.0)), (("worst", floor, INF),))
        out = search(problem, goal, seed=self.options.seed, time_limit=self.options.time_limit)
        raw = answer(out, self._param(), first_bound(problem, "sum_Fz"), "worst >= worst* − δ")
        return dataclasses.replace(raw, message=raw.message + note)

    def _rule(self, problem: SelectionProblem):
        star = worst_star_of(problem, self.delta)
        return fisher_fair_rule(-math.inf if star is None else star, self.delta)

    def realized_rule(self, problem: SelectionProblem, table):
        return fisher_fair_rule(float(np.max(table["worst"])), self.delta)

    def _solve_enum(self, problem: SelectionProblem) -> RawResult:
        return self._enum_raw(best_fisher_fair(problem, self.delta, max_count=DEFAULT_MAX_COUNT))
