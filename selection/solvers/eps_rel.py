"""ε relative to the round's own front: an ε-constraint whose ε adapts as training moves.

A fixed ε (percentage points) means different things at different stages of training: early,
when every domain is near chance, a gap of 5 points is loose; late, it may be below the
smallest gap any selection reaches (and the ε point is infeasible). ``eps-rel`` places ε at a
fraction α of the round's own achievable range instead:

    ε_t = g_min + α · (g_top − g_min),

with g_min the smallest gap of any K-selection of the round and g_top the gap of the U*
selection (the unconstrained ε point). α = 0 is the fairest point of the front, α = 1 the
utility-optimal one; in between, the ε point at the same relative position every round.
"""

from __future__ import annotations

from typing import Any, ClassVar

from selection.problem import SelectionProblem
from selection.solvers.base import Solver
from selection.solvers.eps import EpsSolver, min_gap_point
from selection.solvers.options import RouteOptions
from selection.solvers.params import check_nonneg, fmt_param
from selection.solvers.registry import register
from selection.solvers.result import RawResult

__all__ = ["EpsRelSolver"]


@register
class EpsRelSolver(Solver):
    """max U s.t. gap <= g_min + α·(g_top − g_min), then min gap (module docstring).

    Args:
        alpha: position in the round's gap range, 0 <= α <= 1.
        options: the route options of the underlying ε solves (see EpsSolver), of which it
            takes ``backend``, ``time_limit`` and ``seed`` (:attr:`route_options`); ``route``:
            any of those as keywords.
    """

    name: ClassVar[str] = "eps-rel"
    summary: ClassVar[str] = "ε at a fraction α of the round's own gap range (adapts per round)"
    param: ClassVar[str] = "alpha"
    symbol = "α"
    default_grid: ClassVar[tuple] = (0.0, 0.25, 0.5, 0.75, 1.0)
    spec_form: ClassVar[str] = "eps-rel:A"
    order: ClassVar[int] = 25
    route_options = frozenset({"backend", "time_limit", "seed"})

    def __init__(
        self, *, alpha: float = 0.5, options: RouteOptions | None = None, **route: Any
    ) -> None:
        self.alpha = check_nonneg("alpha", alpha, allow_none=False)
        if self.alpha > 1:
            raise ValueError(f"alpha={alpha!r} must be in [0, 1]")
        self.options = RouteOptions.of(
            options, takes=self.route_options, who=f"{type(self).__name__}.__init__", **route
        )
        self._eps = EpsSolver(options=self.options)

    @classmethod
    def spec_kwargs(cls, arg: str | None) -> dict:
        if arg is None:
            return {}
        try:
            return {"alpha": float(arg)}
        except ValueError:
            raise ValueError(f"{arg!r} is not a number") from None

    def round_eps(self, problem: SelectionProblem):
        """(ε_t, g_min, g_top) of this round, or the failed unconstrained solve's result."""
        top = self._eps.solve(problem)
        if not top.ok:
            return top
        g_top = float(top.objectives["gap"])
        g_min = float(min_gap_point(problem, highest_u=False).objectives["gap"])
        return g_min + self.alpha * (g_top - g_min) + 1e-9, g_min, g_top

    def candidates(self, problem: SelectionProblem, m: int) -> list[tuple[int, ...]]:
        """The ``m`` best selections of the round's ε point (see EpsSolver.candidates)."""
        at = self.round_eps(problem)
        return (
            [] if not isinstance(at, tuple) else self._eps.with_param(at[0]).candidates(problem, m)
        )

    def realized_rule(self, problem: SelectionProblem, table):
        at = self.round_eps(problem)
        return self._eps.with_param(at[0] if isinstance(at, tuple) else None).realized_rule(
            problem, table
        )

    def _param(self) -> str:
        return fmt_param("alpha", self.alpha)

    def _solve(self, problem: SelectionProblem) -> RawResult:
        at = self.round_eps(problem)
        param = fmt_param("alpha", self.alpha)
        if not isinstance(at, tuple):
            return RawResult((), at.status, at.backend, at.message, param)
        eps, g_min, g_top = at
        r = self._eps.with_param(eps).solve(problem)
        msg = f"eps={eps:.6g} in [{g_min:.6g}, {g_top:.6g}]"
        return RawResult(r.selected, r.status, r.backend, msg, param)
