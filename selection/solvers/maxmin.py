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

import numpy as np
import pandas as pd

from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions, _Raw, register
from selection.solvers.exhaustive import DEFAULT_MAX_COUNT, best_delta, delta_rule, u_star_of
from selection.solvers.milp.cpsat import DEFAULT_SCALE
from selection.solvers.milp.exact import DEFAULT_ENUM_LIMIT, ExactSolver
from selection.solvers.milp.formulations import maxmin_spec, top_k_sum
from selection.solvers.milp.model import INF, LexBackend
from selection.solvers.params import check_nonneg, fmt_param

__all__ = ["MaxminSolver"]


@register
class MaxminSolver(ExactSolver):
    """max worst(S) s.t. U(S) >= U* − delta, then max U (lexicographic).

    Args:
        delta: allowed loss of average utility below U*, percentage points, >= 0 (default 0).
        backend, time_limit, seed, threads, scale, enum_limit, mip_gap: see
            :class:`selection.solvers.milp.exact.ExactSolver`.
    """

    name = "maxmin"
    summary = "max worst-domain utility s.t. U >= U* − δ, ties to higher U"
    param = "delta"
    default_grid = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0)
    spec_form = "maxmin:D"
    order = 30

    @classmethod
    def sweep_front(cls, problem: SelectionProblem, options: SweepOptions) -> pd.DataFrame:
        """One point per δ of the grid (default :attr:`default_grid`)."""
        from selection.solvers.sweeps import sweep_delta

        grid = cls.default_grid if options.grid is None else options.grid
        return sweep_delta(
            problem,
            list(grid),
            backend=options.backend,
            n_jobs=options.n_jobs,
            time_limit=options.time_limit,
            seed=options.seed,
            progress=options.progress,
        )

    def __init__(
        self,
        *,
        delta: float = 0.0,
        backend: str = "auto",
        time_limit: float | None = None,
        seed: int = 0,
        threads: int | None = None,
        scale: int = DEFAULT_SCALE,
        enum_limit: int = DEFAULT_ENUM_LIMIT,
        mip_gap: float = 0.0,
    ) -> None:
        super().__init__(
            backend=backend,
            time_limit=time_limit,
            seed=seed,
            threads=threads,
            scale=scale,
            enum_limit=enum_limit,
            mip_gap=mip_gap,
        )
        self._set_param(delta)

    def _set_param(self, value: float | None) -> None:
        self.delta = check_nonneg("delta", value, allow_none=False)

    def _param(self) -> str:
        return fmt_param("delta", self.delta)

    def _spec(self, data, problem: SelectionProblem):
        return maxmin_spec(data, problem.k)

    def _apply(self, model: LexBackend, problem: SelectionProblem) -> None:
        k = problem.k
        top = top_k_sum(self.model_data(problem)["U"], k)
        lo = -INF if self.delta == INF else top - k * self.delta
        if self.route(problem) != "cpsat":
            lo -= 1e-7
        model.set_row_bounds("floor", lo, INF)

    def _rule(self, problem: SelectionProblem):
        return delta_rule(u_star_of(problem), self.delta)

    def realized_rule(self, problem: SelectionProblem, table):
        return delta_rule(float(np.max(table["utility"])), self.delta)

    def _solve_enum(self, problem: SelectionProblem) -> _Raw:
        return self._enum_raw(best_delta(problem, self.delta, max_count=DEFAULT_MAX_COUNT))
