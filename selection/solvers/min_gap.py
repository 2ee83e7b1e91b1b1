"""The smallest-gap selection, bounded: min gap(S), then max U(S), s.t. |S| = K.

The fallback of an infeasible ε (:func:`selection.solvers.eps.min_gap_point`) and the lower end
of ``eps-rel``'s range. Where C(N, K) is small, enumeration answers it exactly (the rule
:func:`min_gap_rule`: the smallest gap rounded to 9 decimals, then the highest U, then the first
selection enumerated). Above that, bisecting ε with one exact MILP per step took minutes at
N = 200 (results/benchmarks/min_gap_long.md: near-tied N = 200 still bisecting after 240 s;
min_gap.md: this route against it); here the work is bounded and deterministic instead:

1. a start: the K clients of highest U, or where Σ F_z / Σ B rows apply the MILP max U under
   them (which also proves them infeasible);
2. the swap local search of :mod:`.swap_search` (``iterations`` kicks from ``seed``): the
   incumbent;
3. **stage 1**, one MILP warm-started from it: min (hi − lo) − λ·T(x) with
   lo <= Σ_i w_i U_id x_i <= hi for every domain d, T(x) = Σ w_i x_i and λ the incumbent's gap
   (w = 1 and λ = 0 under a ``linear`` surrogate; under a ``linear-fractional`` one a
   Dinkelbach step, repeated while it finds a smaller gap, at most :data:`DINKELBACH_STEPS`);
4. **stage 2**, one MILP: max Σ w_i U_i x_i − μ·T(x) s.t. (hi − lo) − g·T(x) <= tol, with g the
   incumbent's gap and μ its U (the highest U at that gap; Dinkelbach steps as in stage 1).

Each MILP is HiGHS on one thread stopped after ``node_limit`` branch-and-bound nodes (and by
``time_limit`` if one is given): on one thread a node limit stops the search at the same place
on every run, where a time limit would not. The MILP's dual bound D on its objective is a
proven bound on the gap of every selection: gap(S) >= λ − D/T(S), so >= λ − D/T_max when
D <= 0 and >= λ − D/T_min otherwise (T_min, T_max: the K smallest and largest weights; T = K
under a linear surrogate). The result is ``optimal`` where both stages are proven (the
enumeration's answer, ties aside), else ``time_limit`` with the bounds in its message: the
smallest gap lies between the bound and the gap returned.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from selection.errors import SelectionError
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.base import Solver
from selection.solvers.black_box import Goal, answer, first_bound, search
from selection.solvers.exhaustive import top_selections
from selection.solvers.milp.highs import HighsBackend
from selection.solvers.milp.portfolio import route_refusal, value_quantum
from selection.solvers.milp.spec import INF, MilpSpec
from selection.solvers.options import RouteOptions
from selection.solvers.params import Route, check_finite, check_int, check_nonneg
from selection.solvers.result import RawResult, Status
from selection.solvers.swap_search import SwapData, swap_search
from selection.surrogates.base import Structure

__all__ = [
    "MinGapSolver",
    "min_gap_rule",
    "default_nodes",
    "ITERATIONS",
    "NODE_WORK",
    "DINKELBACH_STEPS",
]

# kicks of the swap local search: cheap beside the MILPs, and it hands them a good incumbent
# (the MILPs are node-limited, so their start shapes the gap they reach)
ITERATIONS = 100
# branch-and-bound nodes per MILP unless given: NODE_WORK / N (a node's LP grows with N), at
# least MIN_NODES; what the route then costs and reaches at N = 200 and 1,000 against the
# former bisection: results/benchmarks/min_gap.md
NODE_WORK = 100_000
MIN_NODES = 50
# MILPs per stage under a linear-fractional surrogate (one under a linear one)
DINKELBACH_STEPS = 5
_TIE = 1e-9  # percentage points: gaps and utilities this close are equal (enumeration's rounding)


def default_nodes(n: int) -> int:
    """The default branch-and-bound nodes per MILP at N = ``n`` clients."""
    return max(MIN_NODES, NODE_WORK // max(int(n), 1))


def min_gap_rule(f_min: float | None = None, b_max: float | None = None):
    """The smallest-gap question as an enumeration rule (:mod:`.exhaustive`): Σ F_z >= f_min,
    Σ B <= b_max (within 1e-9) where given; min gap, then max U."""

    def mask(b):
        m = np.ones(len(b["gap"]), dtype=bool)
        if f_min is not None:
            m &= b["sum_Fz"] >= f_min - 1e-9
        if b_max is not None:
            m &= b["sum_B"] <= b_max + 1e-9
        return m

    return mask, [("gap", -1.0), ("utility", 1.0)]


class _NodeLimitedHighs(HighsBackend):
    """HiGHS stopped after ``node_limit`` branch-and-bound nodes per solve (``TIME_LIMIT``)."""

    node_limit = 2_147_483_647

    def _optimize(self, c, time_limit, hint, stop=None):
        self._h.setOptionValue("mip_max_nodes", int(self.node_limit))
        return super()._optimize(c, time_limit, hint, stop)


class MinGapSolver(Solver):
    """min gap(S), then max U(S), s.t. |S| = K (optional Σ F_z >= f_min, Σ B <= b_max).

    Not a registered formulation: the smallest-gap point that ``eps`` falls back to. Its
    result's ``bound`` is a proven *lower* bound on the smallest gap (percentage points; the
    gap itself where proven): the smallest gap lies in [bound, gap].

    Args:
        f_min: require Σ_{i∈S} F_z,i >= f_min, optional.
        b_max: require Σ_{i∈S} B_i <= b_max (nats), optional.
        lower: a gap every selection is known to exceed (an infeasible ε), percentage points;
            reported as a bound when the MILP's is lower.
        options: the route options (:class:`~selection.solvers.options.RouteOptions`), of
            which it takes (:attr:`route_options`; ``route``: any of them as keywords):
            ``backend``: ``auto`` (enumeration when C(N, K) <= enum_limit, else the bounded
            route; on a black-box surrogate the ``search`` route of :mod:`.black_box`, whose
            bound is the surrogate's), ``enum``, or any MILP backend name (the bounded route:
            HiGHS); ``enum_limit``: largest C(N, K) that ``auto`` enumerates; ``seed``: seeds
            the local search's kicks and HiGHS; ``threads``: HiGHS threads (default 1:
            deterministic); ``time_limit``: seconds per MILP besides the node limit (None: the
            node limit alone).
        iterations: kicks of the local search.
        node_limit: branch-and-bound nodes per MILP (None: :func:`default_nodes` of N).
        highest_u: run stage 2 (the highest U at the gap found); False where only the
            smallest gap matters (the range of ``eps-rel``): the local search's selection.
    """

    name = "min-gap"
    summary = "min gap, then max U: the smallest-gap point (bounded above enumeration)"
    route_options = frozenset({"backend", "enum_limit", "seed", "threads", "time_limit"})

    def __init__(
        self,
        *,
        f_min: float | None = None,
        b_max: float | None = None,
        lower: float = 0.0,
        options: RouteOptions | None = None,
        iterations: int = ITERATIONS,
        node_limit: int | None = None,
        highest_u: bool = True,
        **route: Any,
    ) -> None:
        self.f_min = check_finite("f_min", f_min)
        self.b_max = check_nonneg("b_max", b_max)
        self.lower = check_nonneg("lower", lower, allow_none=False)
        self.options = RouteOptions.of(
            options, takes=self.route_options, who=f"{type(self).__name__}.__init__", **route
        )
        self.iterations = check_int("iterations", iterations, lo=0)
        self.node_limit = check_int("node_limit", node_limit, lo=1)
        self.highest_u = bool(highest_u)

    def route(self, problem: SelectionProblem) -> str:
        """``enum``, ``highs``, or ``search`` (``auto`` on a black-box surrogate above the
        enumeration limit: :mod:`.black_box`): the route this solver takes on ``problem``."""
        backend = self.options.backend
        small = math.comb(problem.n, problem.k) <= self.options.enum_limit
        if backend == Route.ENUM or (backend == Route.AUTO and small):
            return Route.ENUM
        black_box = problem.structure == Structure.BLACK_BOX
        return Route.SEARCH if black_box and backend == Route.AUTO else "highs"

    def _solve(self, problem: SelectionProblem) -> RawResult:
        problem = problem.linear_view()
        if self.route(problem) == Route.ENUM:
            rule = min_gap_rule(self.f_min, self.b_max)
            top = top_selections(problem, rule, 1)
            if not top:
                msg = "no selection satisfies the constraints"
                return RawResult((), Status.INFEASIBLE, Route.ENUM, msg)
            msg = "smallest gap by enumeration"
            gap = float(evaluate(problem, top[0])["gap"])
            return RawResult(top[0], Status.OPTIMAL, Route.ENUM, msg, bound=gap)
        if self.route(problem) == Route.SEARCH:
            return self._search(problem)
        refusal = route_refusal("highs", problem, fractional=True)
        if refusal:
            raise SelectionError(refusal)
        return _Bounded(self, problem).run()

    def _search(self, problem: SelectionProblem) -> RawResult:
        rows = []
        if self.f_min is not None:
            rows.append(("sum_Fz", self.f_min - 1e-9, INF))
        if self.b_max is not None:
            rows.append(("sum_B", -INF, self.b_max + 1e-9))
        goal = Goal((("gap", -1.0), ("utility", 1.0)), tuple(rows))
        out = search(problem, goal, seed=self.options.seed, time_limit=self.options.time_limit)
        raw = answer(out, "", math.nan, "the Σ F_z / Σ B rows")
        if not raw.selected:
            return raw
        gap = out.rank[1]
        lower = max(first_bound(problem, "gap"), self.lower if self.lower < gap else 0.0)
        msg = f"smallest gap in [{lower:.6g}, {gap:.6g}] pp; {raw.message}"
        return dataclasses.replace(raw, message=msg, bound=lower)


class _Bounded:
    """One bounded solve (module docstring, steps 1-4) of one problem."""

    def __init__(self, solver: MinGapSolver, problem: SelectionProblem) -> None:
        from selection.solvers.milp.formulations import model_data

        self.s, self.p = solver, problem
        values = model_data(problem, "highs", 1)
        w = np.asarray(problem.surrogate_model.client_weights(problem), dtype=float)
        self.linear = bool(np.all(w == w[0]))
        self.w = np.ones(problem.n) if self.linear else w
        self.data = SwapData(
            A=self.w[:, None] * values["Ud"],
            a=self.w * values["U"],
            w=self.w,
            F_z=values["F_z"],
            f_min=solver.f_min,
            B=values["B"],
            b_max=solver.b_max,
        )
        k = problem.k
        order = np.sort(self.w)
        self.t_min, self.t_max = float(order[:k].sum()), float(order[-k:].sum())
        # value grids (sum units) where the data have them: stages stop within half a step
        self.q_gap = value_quantum(values["Ud"]) if self.linear else 0.0
        self.q_u = value_quantum(values["U"]) if self.linear else 0.0
        self.nodes = solver.node_limit or default_nodes(problem.n)

    def run(self) -> RawResult:
        s, n = self.s, self.p.n
        start = np.zeros(n, dtype=bool)
        if s.f_min is None and s.b_max is None:
            start[np.argsort(-self.data.a / self.w, kind="stable")[: self.p.k]] = True
        else:  # a first selection under the rows: max Σ w_i U_i x_i (or proof there is none)
            status, start, _ = self._milp(np.r_[self.data.a, 0.0, 0.0], [], None, 0.0)
            if status == Status.INFEASIBLE:
                msg = "no selection satisfies the constraints"
                return RawResult((), Status.INFEASIBLE, "highs", msg)
            if start is None:
                return RawResult((), Status.TIME_LIMIT, "highs", "no first selection found")
        best, key = swap_search(self.data, start, iterations=s.iterations, seed=s.options.seed)
        best, key, lower = self._stage_gap(best, key)
        u_up = math.nan
        if s.highest_u:
            best, key, u_up = self._stage_utility(best, key)
        gap, U = key[0], -key[1]
        proven_gap, proven_u = gap - lower <= _TIE, not u_up - U > _TIE  # NaN: not asked
        why = f"local search ({s.iterations} kicks), then HiGHS (node limit {self.nodes:,})"
        highest = "" if math.isnan(u_up) else " and the highest U at it"
        if proven_gap and proven_u:
            msg = f"smallest gap {gap:.6g} pp{highest} proven"
            return RawResult(_sel(best), Status.OPTIMAL, "highs", msg, bound=lower, reason=why)
        msg = (
            f"smallest gap in [{lower:.6g}, {gap:.6g}] pp"
            + ("" if proven_gap else " (the lower end proven, the upper found)")
            + (highest if proven_u else f"; U <= {u_up:.6g} % at that gap")
            + f" (stopped at the node limit of {self.nodes:,} or the time limit)"
        )
        return RawResult(_sel(best), Status.TIME_LIMIT, "highs", msg, bound=lower, reason=why)

    @property
    def steps(self) -> int:
        """MILPs per stage: one, or Dinkelbach steps under a linear-fractional surrogate."""
        return 1 if self.linear else DINKELBACH_STEPS

    def _stage_gap(self, best, key):
        """Stage 1: (mask, key, proven lower bound on the smallest gap)."""
        lower = self.s.lower
        if key[0] <= lower + _TIE:  # nothing lies below it (a gap of 0, say): proven
            return best, key, key[0]
        for _ in range(self.steps):
            lam = 0.0 if self.linear else key[0]
            status, v, bound = self._milp(np.r_[lam * self.w, -1.0, 1.0], [], best, self.q_gap)
            better = v is not None and self.data.key(v) < key
            if better:
                best, key = v, self.data.key(v)
            if np.isfinite(bound):  # (hi − lo) − λ·T(x) >= −bound on every selection
                lower = max(lower, lam - bound / (self.t_max if bound <= 0 else self.t_min))
            if status == Status.OPTIMAL and (self.linear or not better):
                lower = key[0]  # no selection has a smaller gap
            if status != Status.OPTIMAL or self.linear or not better:
                break
        return best, key, min(lower, key[0])

    def _stage_utility(self, best, key):
        """Stage 2: (mask, key, proven upper bound on U over the selections of its gap)."""
        up = math.inf
        for _ in range(self.steps):
            g, mu = key[0], 0.0 if self.linear else -key[1]
            # (hi − lo) − g·T(x) <= tol (sum units): on a value grid half a step above g·K
            tol = 0.5 * self.q_gap if self.q_gap > 0 else 1e-6
            row = ("gap", np.r_[-g * self.w, 1.0, -1.0], -INF, tol)
            c = np.r_[self.data.a - mu * self.w, 0.0, 0.0]  # max Σ w_i U_i x_i − μ·T(x)
            status, v, bound = self._milp(c, [row], best, self.q_u)
            new = self.data.key(v) if v is not None else None
            better = new is not None and new < key and new[0] <= g
            if better:
                best, key = v, new
            if np.isfinite(bound):  # Σ w_i U_i x_i − μ·T(x) <= bound at every gap <= g
                up = min(up, mu + bound / (self.t_min if bound >= 0 else self.t_max))
            if status == Status.OPTIMAL and (self.linear or not better):
                up = min(up, max(-key[1], -math.inf if new is None else -new[1]))
            if status != Status.OPTIMAL or self.linear or not better:
                break
        return best, key, max(up, -key[1])

    def _milp(self, c, extra, best, q):
        """One node-limited HiGHS MILP over (x, hi, lo), warm-started from ``best`` (a mask
        or None): (status, its selection as a feasible mask or None, its dual bound)."""
        p, s, data = self.p, self.s, self.data
        n, D = data.A.shape
        rows = [("card", np.r_[np.ones(n), 0.0, 0.0], float(p.k), float(p.k))]
        rows += [(f"hi{d}", np.r_[data.A[:, d], -1.0, 0.0], -INF, 0.0) for d in range(D)]
        rows += [(f"lo{d}", np.r_[data.A[:, d], 0.0, -1.0], 0.0, INF) for d in range(D)]
        if s.f_min is not None:
            rows.append(("fmin", np.r_[data.F_z, 0.0, 0.0], float(s.f_min), INF))
        if s.b_max is not None:
            rows.append(("bmax", np.r_[data.B, 0.0, 0.0], -INF, float(s.b_max)))
        free = [(-INF, INF), (-INF, INF)]
        spec = MilpSpec.build(n, p.k, free, rows + list(extra), [np.asarray(c, dtype=float)])
        spec.quanta = [float(q)]
        be = _NodeLimitedHighs(spec, seed=s.options.seed, threads=s.options.threads)
        be.node_limit = self.nodes
        hint = None
        if best is not None:
            sums = data.A[best].sum(axis=0)
            hint = np.r_[best.astype(float), sums.max(), sums.min()]
        out = be._optimize(spec.objectives[0], s.options.time_limit, hint)
        if out.status == Status.ERROR:
            raise SelectionError(f"smallest gap: {out.message}")
        mask = None
        if out.values is not None:
            mask = np.asarray(out.values[:n]) > 0.5
            if int(mask.sum()) != p.k or not data.feasible(mask):
                mask = None
        return out.status, mask, float(be.last_bound)


def _sel(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.flatnonzero(mask))
