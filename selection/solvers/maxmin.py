"""Max-min with an average floor: max worst(S) s.t. U(S) >= U* − δ, |S| = K.

Model (sum units, see :func:`selection.solvers.milp.formulations.maxmin_spec`): binaries x_i and
one continuous t <= Σ_i x_i U_id for every domain d; the row ``floor`` is
Σ x_i U_i >= K·(U* − δ) − 1e-7 (U* = mean of the K largest U of the data the route solves
with; on CP-SAT the rounded data, so δ = 0 stays feasible).

Ties go to higher U by a **lexicographic second stage**: stage 1 maximizes t (= K·worst),
stage 2 fixes t >= opt − tol and maximizes Σ x_i U_i, so each point is Pareto-optimal in
(U, worst). An infeasible δ cannot occur (δ >= 0 admits the U* selection); the status
vocabulary is the same as ``eps``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions
from selection.solvers.black_box import Goal, answer, first_bound, search
from selection.solvers.exhaustive import DEFAULT_MAX_COUNT, best_delta, delta_rule, u_star_of
from selection.solvers.milp.exact import ExactSolver
from selection.solvers.milp.formulations import maxmin_spec, top_k_sum
from selection.solvers.milp.model import INF, LexBackend, integer_data
from selection.solvers.options import RouteOptions
from selection.solvers.params import check_nonneg, fmt_param
from selection.solvers.registry import register
from selection.solvers.result import RawResult, Status

__all__ = ["MaxminSolver"]


@register
class MaxminSolver(ExactSolver):
    """max worst(S) s.t. U(S) >= U* − delta, then max U (lexicographic).

    Args:
        delta: allowed loss of average utility below U*, percentage points, >= 0 (default 0).
        options: the route options (:class:`~selection.solvers.options.RouteOptions`);
            ``route``: any of them as keywords.
    """

    max_min = True  # auto: a max-min first stage (milp.portfolio.portfolio)

    name = "maxmin"
    summary = "max worst-domain utility s.t. U >= U* − δ, ties to higher U"
    param = "delta"
    param_type = float
    symbol = "δ"
    plane = ("utility", "worst")
    default_grid = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0)
    spec_form = "maxmin:D"
    order = 30
    bound_objective = "worst"

    @classmethod
    def sweep_front(cls, problem: SelectionProblem, options: SweepOptions) -> pd.DataFrame:
        """One point per δ of the grid (default :attr:`default_grid`)."""
        from selection.solvers.sweeps import sweep_delta

        grid = cls.default_grid if options.grid is None else options.grid
        return sweep_delta(problem, list(grid), options=options)

    def __init__(
        self, *, delta: float = 0.0, options: RouteOptions | None = None, **route: Any
    ) -> None:
        super().__init__(options=options, **route)
        self._set_param(delta)

    def _set_param(self, value: float | None) -> None:
        self.delta = check_nonneg("delta", value, allow_none=False)

    def _param(self) -> str:
        return fmt_param("delta", self.delta)

    objective_kinds = ("Ud", "U")

    def _spec(self, data, problem: SelectionProblem):
        return maxmin_spec(data, problem.k, self.groups(problem))

    def _apply(self, model: LexBackend, problem: SelectionProblem) -> None:
        k = problem.k
        top = top_k_sum(self.model_data(problem)["U"], k)
        lo = -INF if self.delta == INF else top - k * self.delta
        if not self.integer_route(problem):
            lo -= 1e-7
        model.set_row_bounds("floor", lo, INF)

    fractional = True

    def _solve_fractional(self, problem: SelectionProblem, route: str, time_limit) -> RawResult:
        from selection.solvers.milp.fractional import (
            FracStage,
            lex_fractional,
            ratio_star,
            raw_of,
            threshold_row,
            weighted_data,
        )

        data = weighted_data(problem, route, self.options.scale)
        nU, nUd, n = data["nU"], data["nUd"], data["n"]
        N, D = nUd.shape
        exact = integer_data(route)
        rows = [("card", np.r_[np.ones(N), 0.0], float(problem.k), float(problem.k))]
        rows += [(f"w{d}", np.r_[nUd[:, d], -1.0], 0.0, INF) for d in range(D)]
        if self.delta != INF:
            star = ratio_star(route, data, problem.k, "nU", **self._frac_options(problem))
            if star is None:
                return raw_of((), Status.ERROR, "no U* selection", route, self._param())
            rows.append(
                threshold_row("floor", np.r_[nU, 0.0], np.r_[n, 0.0], star, self.delta, exact)
            )
        den = np.r_[n, 0.0]
        stages = [
            FracStage(
                np.r_[np.zeros(N), 1.0], den, lambda x: (float((x @ nUd).min()), float(x @ n))
            ),
            FracStage(np.r_[nU, 0.0], den, lambda x: (float(x @ nU), float(x @ n))),
        ]
        sel, status, msg, _ = lex_fractional(
            route,
            N,
            problem.k,
            [(0.0, 100.0 * float(n.sum()))],
            rows,
            stages,
            time_limit=time_limit,
            **self._frac_options(problem),
        )
        return raw_of(sel, status, msg, route, self._param())

    def _solve_search(self, problem: SelectionProblem) -> RawResult:
        floor, note = -INF, ""
        if self.delta != INF:  # U*: the search's best U stands in for it
            top = search(
                problem, Goal((("utility", 1.0),)), seed=self.options.seed, time_limit=self._half()
            )
            u_hat = -top.rank[1]
            floor = u_hat - self.delta - 1e-9
            note = (
                f"; U* taken as {u_hat:.4g} % (the search's best; proven U* <= "
                f"{first_bound(problem, 'utility'):.4g} %)"
            )
        goal = Goal((("worst", 1.0), ("utility", 1.0)), (("utility", floor, INF),))
        out = search(problem, goal, seed=self.options.seed, time_limit=self._half())
        raw = answer(out, self._param(), first_bound(problem, "worst"), "U >= U* − δ")
        return dataclasses.replace(raw, message=raw.message + note)

    def _half(self) -> float | None:
        """Half the time limit: the search for U*, then the formulation's own."""
        limit = self.options.time_limit
        return None if limit is None else limit / 2

    def _rule(self, problem: SelectionProblem):
        return delta_rule(u_star_of(problem), self.delta)

    def realized_rule(self, problem: SelectionProblem, table):
        return delta_rule(float(np.max(table["utility"])), self.delta)

    def _solve_enum(self, problem: SelectionProblem) -> RawResult:
        return self._enum_raw(best_delta(problem, self.delta, max_count=DEFAULT_MAX_COUNT))
