"""ε-constraint MILP: max U(S) s.t. gap(S) <= ε, |S| = K (optional Σ F_z >= F_min, Σ B <= b).

Model (sum units, see :func:`selection.solvers.milp.formulations.eps_spec`): binaries x_i, two
continuous columns hi, lo with lo <= Σ_i x_i U_id <= hi for every domain d, hi − lo <= K·ε.

Pareto-optimality by a **lexicographic second stage**: stage 1 maximizes Σ x_i U_i (= K·U);
stage 2 fixes Σ x_i U_i >= opt − tol and minimizes hi − lo, so the returned selection has the
smallest gap among the utility-optimal ones (no weakly dominated point). tol is 0 on CP-SAT
and 1e-6 (sum units) + 1e-9·|opt| on HiGHS/CBC. Enumeration answers the same question with
ties compared at 1e-9. Where the domain rows lie on a value grid q, CBC and SCIP answer stage 2 by
gap descent (:meth:`.milp.model.LexBackend._descend`: U kept, gap <= current − q/2, asked with
stage 1's objective until no selection is left).

On the HiGHS route ε sits on the D·(D−1) pairwise rows Σ_i (U_ia − U_ib) x_i <= K·ε
(same feasible set, faster there); the other routes use ``hi − lo <= K·ε``. HiGHS and CBC
reduce each stage by exact LP reduced-cost fixing first (:mod:`.fixing`); above the
enumeration limit ``auto`` takes the route of the measured portfolio
(:func:`selection.solvers.milp.portfolio.portfolio`; results/benchmarks/exact_families*.md).

An infeasible ε gives status ``infeasible`` (no exception).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from selection.objectives import gap as gap_of
from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions
from selection.solvers.black_box import Goal, answer, first_bound, search
from selection.solvers.exhaustive import DEFAULT_MAX_COUNT, best_eps, eps_rule
from selection.solvers.milp.exact import ExactSolver
from selection.solvers.milp.formulations import eps_spec
from selection.solvers.milp.fractional import FracStage
from selection.solvers.milp.model import INF, LexBackend, integer_data
from selection.solvers.milp.registry import milp_backend_class, milp_backends
from selection.solvers.min_gap import MinGapSolver
from selection.solvers.options import RouteOptions
from selection.solvers.params import check_finite, check_nonneg, fmt_param
from selection.solvers.registry import register
from selection.solvers.result import RawResult, SolveResult

__all__ = ["EpsSolver", "min_gap_point"]


@register
class EpsSolver(ExactSolver):
    """max U(S) s.t. gap(S) <= eps, then min gap (lexicographic).

    Args:
        eps: largest admissible gap, percentage points, >= 0; None or inf: unconstrained.
        f_min: require Σ_{i∈S} F_z,i >= f_min (sum of Fisher z-scores), optional.
        b_max: require Σ_{i∈S} B_i <= b_max (nats), optional.
        options: the route options (:class:`~selection.solvers.options.RouteOptions`:
            ``backend``, ``time_limit``, ``seed``, ``threads``, ``scale``, ``enum_limit``,
            ``mip_gap``, ``counts``, ``tolerance``); ``route``: any of them as keywords.

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.eps import EpsSolver
        >>> problem = tied_problem()
        >>> result = EpsSolver().solve(problem)  # a0+a1 and b0+a1 tie at U = 72.5
        >>> result.ids, result.objectives["utility"], result.objectives["gap"]  # the smaller gap
        (('b0', 'a1'), 72.5, 15.0)
        >>> result = EpsSolver(eps=10.0).solve(problem)
        >>> result.param, result.ids, result.objectives["utility"], result.objectives["gap"]
        ('eps=10', ('a0', 'b0'), 70.0, 0.0)
        >>> str(EpsSolver(eps=10.0, f_min=1.0).solve(problem).status)  # a0+b0: Σ F_z = -1.22
        'infeasible'
    """

    name = "eps"
    summary = "ε-constraint MILP: max U s.t. gap <= ε, then min gap (Pareto-optimal points)"
    param = "eps"
    param_type = float
    symbol = "ε"
    spec_form = "eps:E"
    order = 20
    bound_objective = "utility"
    param_required = "E, the bound on gap(S) in pp (--eps inf: max U alone)"
    front_constraints = ("f_min", "b_max")
    adaptive_front = True

    @property
    def gap_bound(self) -> float | None:
        """ε, the bound on gap(S) (None: unconstrained).

        Examples:
            >>> from selection.solvers.eps import EpsSolver
            >>> EpsSolver(eps=5.0).gap_bound, EpsSolver().gap_bound
            (5.0, None)
        """
        return self.eps

    @classmethod
    def reachable(
        cls, problem: SelectionProblem, f_min: float | None = None, b_max: float | None = None
    ) -> dict:
        """What ε can reach on ``problem``: the smallest gap any selection has, the gap at the
        highest reachable U, and that U (under the optional Σ F_z / Σ B constraints); a grid
        of four ε inside the range. Empty dict when the constraints alone are infeasible.

        Examples:
            >>> from selection.example import example_stats
            >>> from selection.problem import SelectionProblem
            >>> from selection.solvers.eps import EpsSolver
            >>> reach = EpsSolver.reachable(SelectionProblem.from_stats(example_stats(), k=5))
            >>> reach["min_gap"] <= reach["max_gap"], len(reach["grid"].split(","))
            (True, 4)
        """
        import math

        solver = cls(f_min=f_min, b_max=b_max)
        top = solver.solve(problem)
        if not top.ok:
            return {}
        best = min_gap_point(problem, solver=solver, highest_u=False)
        g_min, g_max = float(best.objectives["gap"]), float(top.objectives["gap"])
        up = [math.ceil(v * 100 - 1e-9) / 100 for v in (g_min, g_max)]
        grid = sorted({round(up[0] + (up[1] - up[0]) * i / 3, 2) for i in range(4)})
        return {
            "min_gap": g_min,
            "max_gap": g_max,
            "u_star": float(top.objectives["utility"]),
            "grid": ",".join(format(v, "g") for v in grid),
        }

    @classmethod
    def sweep_front(cls, problem: SelectionProblem, options: SweepOptions) -> pd.DataFrame:
        """The ε grid, or (no grid) the complete sweep: the whole (U, gap) front."""
        from selection.solvers.sweeps import sweep_eps

        # its options are the sweep's own: the grid, or (none) the complete sweep
        return sweep_eps(problem, options=options, complete=options.grid is None)

    @classmethod
    def spec_kwargs(cls, arg: str | None) -> dict:
        if arg is None:
            raise ValueError("eps needs a value, e.g. eps:5")
        return super().spec_kwargs(arg)

    def __init__(
        self,
        *,
        eps: float | None = None,
        f_min: float | None = None,
        b_max: float | None = None,
        options: RouteOptions | None = None,
        **route: Any,
    ) -> None:
        super().__init__(options=options, **route)
        self._set_param(eps)
        self.f_min = check_finite("f_min", f_min)
        self.b_max = check_nonneg("b_max", b_max)

    # Set by the complete sweep only: the MILP routes solve max U alone, so a point may be
    # weakly dominated (same U, a larger gap than needed); the sweep's next point, just below
    # its gap, then finds the same U and replaces it. Enumeration stays lexicographic.
    first_stage_only = False

    def _set_param(self, value: float | None) -> None:
        self.eps = check_nonneg("eps", value)

    def _param(self) -> str:
        return fmt_param("eps", self.eps)

    objective_kinds = ("U", "Ud")

    def _spec(self, data, problem: SelectionProblem):
        route = self.route(problem)
        pairwise = route in milp_backends() and milp_backend_class(route).pairwise_eps
        return eps_spec(
            data,
            problem.k,
            self.f_min,
            self.b_max,
            pairwise=pairwise,
            second_stage=not self.first_stage_only,
            groups=self.groups(problem),
            descent_step=self.quantum(problem) if self.gap_descent else 0.0,
        )

    def _cpsat_fields(self, problem: SelectionProblem) -> list[np.ndarray]:
        extra = [problem.F_z] if self.f_min is not None else []
        return [problem.U, problem.Ud, *extra, *([problem.B] if self.b_max is not None else [])]

    #: whether the second stage (min gap at the optimal U) is answered by gap descent where
    #: the domain rows lie on a value grid (:meth:`.model.LexBackend._descend`)
    gap_descent = True
    small_n_scip = True
    #: whether ε rows move to half a value-grid step from any attainable gap (same selections)
    snap_to_grid = True

    def _apply(self, model: LexBackend, problem: SelectionProblem) -> None:
        up = INF if self.eps is None or np.isinf(self.eps) else problem.k * self.eps
        q = self.quantum(problem) if self.snap_to_grid else 0.0
        if q > 0 and np.isfinite(up):
            # every gap (sum units) is a multiple of q: the same selections, with the row half
            # a step from any attainable gap (SCIP misjudged rows 1e-6 pp below one)
            up = (np.floor(up / q + 1e-9) + 0.5) * q
        pairs = [r for r in model.spec.row_index if r.startswith("pair")]
        for name in pairs or ["gap"]:
            model.set_row_bounds(name, -INF, up)

    def _solve_enum(self, problem: SelectionProblem) -> RawResult:
        return self._enum_raw(
            best_eps(
                problem, self.eps, f_min=self.f_min, b_max=self.b_max, max_count=DEFAULT_MAX_COUNT
            )
        )

    fractional = True

    def _solve_fractional(self, problem: SelectionProblem, route: str, time_limit) -> RawResult:
        from selection.solvers.milp.fractional import lex_fractional, raw_of, weighted_data

        data = weighted_data(problem, route, self.options.scale)
        nU, nUd, n = data["nU"], data["nUd"], data["n"]
        N, D = nUd.shape
        z = np.zeros(N)
        top = 100.0 * float(n.sum())
        rows = [("card", np.r_[np.ones(N), 0.0, 0.0], float(problem.k), float(problem.k))]
        rows += [(f"hi{d}", np.r_[nUd[:, d], -1.0, 0.0], -INF, 0.0) for d in range(D)]
        rows += [(f"lo{d}", np.r_[nUd[:, d], 0.0, -1.0], 0.0, INF) for d in range(D)]
        if self.eps is not None and not np.isinf(self.eps):
            if integer_data(route):  # integer rows: ε·n scaled up by 1e6 and rounded (±5e-7 pp)
                q = 1e6
                rows.append(("gap", np.r_[-np.rint(q * self.eps * n) / q, 1.0, -1.0], -INF, 0.0))
            else:
                rows.append(("gap", np.r_[-self.eps * n, 1.0, -1.0], -INF, 1e-7))
        if self.f_min is not None:
            rows.append(("fmin", np.r_[data["F_z"], 0.0, 0.0], float(self.f_min), INF))
        if self.b_max is not None:
            rows.append(("bmax", np.r_[data["B"], 0.0, 0.0], -INF, float(self.b_max)))
        den = np.r_[n, 0.0, 0.0]
        stages = [FracStage(np.r_[nU, 0.0, 0.0], den, lambda x: (float(x @ nU), float(x @ n)))]
        if not self.first_stage_only:
            stages.append(
                FracStage(
                    np.r_[z, -1.0, 1.0], den, lambda x: (-float(np.ptp(x @ nUd)), float(x @ n))
                )
            )
        sel, status, msg, _ = lex_fractional(
            route,
            N,
            problem.k,
            [(0.0, top), (0.0, top)],
            rows,
            stages,
            time_limit=time_limit,
            **self._frac_options(problem),
        )
        return raw_of(sel, status, msg, route, self._param())

    def _solve_search(self, problem: SelectionProblem) -> RawResult:
        rows = [] if self.eps is None or np.isinf(self.eps) else [("gap", -INF, self.eps + 1e-9)]
        if self.f_min is not None:
            rows.append(("sum_Fz", self.f_min - 1e-9, INF))
        if self.b_max is not None:
            rows.append(("sum_B", -INF, self.b_max + 1e-9))
        goal = Goal((("utility", 1.0), ("gap", -1.0)), tuple(rows))
        out = search(problem, goal, seed=self.options.seed, time_limit=self.options.time_limit)
        bound = first_bound(problem, "utility", self.eps)
        return answer(out, self._param(), bound, "the ε row (and the Σ F_z / Σ B rows)")

    def _rule(self, problem: SelectionProblem):
        return eps_rule(self.eps, f_min=self.f_min, b_max=self.b_max)

    def realized_rule(self, problem: SelectionProblem, table):
        return eps_rule(self.eps, f_min=self.f_min, b_max=self.b_max)

    def model_gap(self, problem: SelectionProblem, selected) -> float:
        """gap of a selection on the data this route solves with (percentage points).

        Equals the true gap except on CP-SAT, where it is the gap of the rounded data; the
        complete sweep steps ε below this value so it never meets the same point twice.
        """
        x = np.zeros(problem.n)
        x[list(selected)] = 1.0
        w = x * problem.surrogate_model.client_weights(problem)
        Ud = w @ self.model_data(problem)["Ud"] / w.sum()
        return (
            float(Ud.max() - Ud.min())
            if self.integer_route(problem)
            else float(gap_of(problem, x)[0])
        )


def min_gap_point(
    problem: SelectionProblem,
    infeasible_eps: float = 0.0,
    *,
    solver: EpsSolver | None = None,
    highest_u: bool = True,
) -> SolveResult:
    """The smallest-gap selection (highest U among ties): :class:`.min_gap.MinGapSolver`.

    Enumeration where the ε solver would enumerate; above that a local search and two
    node-limited HiGHS MILPs (bounded and deterministic; :mod:`.min_gap`), whose result is
    ``optimal`` where both stages are proven and otherwise ``time_limit`` with the proven
    range of the smallest gap in its message.

    Args:
        problem: the round's problem.
        infeasible_eps: an ε known to be infeasible (every selection's gap exceeds it); a
            lower bound on the smallest gap.
        solver: the ε solver whose settings apply (its f_min/b_max constraints, backend,
            enumeration limit, seed, threads, time limit); default a plain one.
        highest_u: also find the highest U at the gap found (False: the gap alone matters).

    Returns:
        The smallest-gap point (method ``min-gap``); status ``infeasible`` when the
        constraints admit no selection.

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> point = min_gap_point(SelectionProblem.from_stats(example_stats(), k=5))
        >>> point.status.value, round(point.objectives["gap"], 2)
        ('optimal', 17.35)
    """
    solver = EpsSolver() if solver is None else solver
    return MinGapSolver(
        f_min=solver.f_min,
        b_max=solver.b_max,
        lower=infeasible_eps,
        options=solver.options,  # those of its options the smallest-gap route takes
        highest_u=highest_u,
    ).solve(problem)
