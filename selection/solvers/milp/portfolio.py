"""What ``auto`` takes above the enumeration limit: the measured MILP portfolio.

:func:`portfolio` reads the problem's shape — N, whether U is the mean of the domain rows
(:func:`aligned`), whether the rows lie on a value grid (:func:`value_quantum`), how much of
them the clients' own domains explain (:func:`domain_share`) — and names a route and why
(``route_reason`` in front tables). The tables it is read from are named beside each
threshold. :func:`route_refusal` says why a MILP route cannot take a surrogate.
"""

from __future__ import annotations

import math

import numpy as np

from selection.problem import SelectionProblem
from selection.solvers.milp.formulations import count_groups
from selection.solvers.milp.registry import milp_backends
from selection.solvers.options import DEFAULT_ENUM_LIMIT
from selection.solvers.params import Route
from selection.surrogates.base import Structure

__all__ = [
    "aligned",
    "domain_share",
    "grid_step",
    "value_quantum",
    "portfolio",
    "fixing_from",
    "tolerance_gap",
    "route_refusal",
    "AUTO_MILP",
    "DEFAULT_ENUM_LIMIT",
    "MAX_MIN_FLOAT_ROUTE",
    "PORTFOLIO_MIN_N",
    "TOLERANCE_MARGIN",
    "backends",
    "check_backend",
]

# The backends stop this share short of the tolerance asked for, so that the reported bound,
# which may add its own rounding (CBC prints its bound to 3 decimals; where a backend reports
# none the value + gap gets 1e-7 relative), stays within it
TOLERANCE_MARGIN = 1e-3


def tolerance_gap(tolerance: float, k: int) -> float:
    """The backends' absolute gap (sum units) for a tolerance of ``tolerance`` per client.

    K·τ less the larger of :data:`TOLERANCE_MARGIN` of it and the bound's absolute rounding
    (CBC's 3 printed decimals: up to 1e-3; the value + gap fallback's 1e-7·(1 + |value|),
    |value| <= 100·K), but never below half of K·τ; 0 for no tolerance.
    """
    full = float(tolerance) * k
    if full <= 0:
        return 0.0
    rounding = 1.1e-3 + 1.1e-7 * (1.0 + 100.0 * k)
    return max(0.5 * full, full - max(TOLERANCE_MARGIN * full, rounding))


# The portfolio's default MILP route (small N, fine-grained aligned rows, the weighted
# surrogate's fractional stages): CBC, after the exact LP reduced-cost fixing of :mod:`.fixing`
# from :func:`fixing_from` clients on (results/benchmarks/solvers.md, exact_families*.md).
AUTO_MILP = "cbc"


# ``auto``'s portfolio (:func:`portfolio`): CBC, with the exact LP fixing from
# :func:`fixing_from` clients on and every stage stopped on the value grid (``MilpSpec.quanta``),
# with two exceptions: a max-min stage on float rows (MAX_MIN_FLOAT_ROUTE, below) and, below
# PORTFOLIO_MIN_N, the ε model on a value grid whose domain rows are nearly determined by the
# client's own domain (domain_share >= DOMAIN_SHARE_MIN): balancing the domains is then a
# question of how many clients each domain gets, which the count columns state and SCIP
# branches on. Read from results/benchmarks/exact_families_200_1000.md and
# exact_families_5000.md (one ε point per family and route; CBC's ratio to the fastest is
# ``auto/fastest``) and, for SCIP, results/benchmarks/certified_fronts.md (domain share:
# near-tied 0.97, cross-penalty 0.87, synthetic 0.45, oracle 0.03; near-tied N = 100 at
# τ = 0.1: the scip route 3.5 s, the cbc route 90 s).
DOMAIN_SHARE_MIN = 0.9
# A max-min stage (maxmin, fisher-fair) on rows with no value grid (predicted utilities: the
# probe information model's continuous rows, every client near the same base accuracy) takes
# HiGHS at every N above the enumeration limit: on two rounds of the cross-device study
# (N = 200) CBC did not prove the stage-1 point within the benchmark's limit where HiGHS
# proved both stages; on the synthetic family, whose rows are floats too, HiGHS was slower
# than CBC but well within it (results/benchmarks/maxmin_routes.md has the seconds).
MAX_MIN_FLOAT_ROUTE = "highs"
ALIGNED_TOL = 0.01  # points: 2-decimal data rounds U and U_d apart by up to 0.005 each
PORTFOLIO_MIN_N = 500


def aligned(problem: SelectionProblem) -> bool:
    """Whether U is the mean of the domain rows (within :data:`ALIGNED_TOL` points)."""
    if problem.d == 0:
        return True
    return bool(np.max(np.abs(problem.U - problem.Ud.mean(axis=1))) <= ALIGNED_TOL)


def _distinct(values: np.ndarray) -> np.ndarray:
    return np.unique(np.round(np.asarray(values, dtype=float).ravel(), 9))


def _smallest_step(v: np.ndarray) -> float:
    d = np.diff(v)
    return float(d.min()) if len(d) else 0.0


def grid_step(problem: SelectionProblem) -> float:
    """The smallest positive difference between two per-domain utilities (0 if all equal)."""
    return _smallest_step(_distinct(problem.Ud))


def domain_share(problem: SelectionProblem) -> float:
    """How much of the per-domain utilities the clients' own domains explain (0..1).

    The mean over domains d of R² of U_d regressed on the client's domain (between-group
    variance / total variance); 0 when there are no count groups (one domain, or one client
    per domain) or the rows are constant.
    """
    g = count_groups(problem)
    if g is None or problem.d == 0:
        return 0.0
    Ud = np.asarray(problem.Ud, dtype=float)
    counts = np.bincount(g)
    means = np.stack([np.bincount(g, weights=Ud[:, d]) / counts for d in range(Ud.shape[1])], 1)
    total = ((Ud - Ud.mean(axis=0)) ** 2).sum(axis=0)
    within = ((Ud - means[g]) ** 2).sum(axis=0)
    r2 = np.where(total > 0, 1.0 - within / np.where(total > 0, total, 1.0), 0.0)
    return float(np.clip(r2, 0.0, 1.0).mean())


def value_quantum(values: np.ndarray) -> float:
    """q when every value is a whole multiple of q, the smallest difference between two of
    them (accuracies on n images: 100/n; 2-decimal data: 0.01); 0 when there is none."""
    v = _distinct(values)
    q = _smallest_step(v)
    if q <= 0:
        return 0.0
    r = v / q
    return q if float(np.max(np.abs(r - np.round(r)))) <= 1e-6 else 0.0


# From how many clients the exact LP reduced-cost fixing (:mod:`.fixing`) runs first: its LP
# and restricted MILP pay for themselves only on large enough models; where U is not the
# mean of the domain rows (U pooled with other weights: the cross-penalty family) from fewer.
FIXING_FROM_ALIGNED = 1000
FIXING_FROM_MISALIGNED = 500


def fixing_from(problem: SelectionProblem) -> int:
    """The smallest N at which the MILP routes fix by reduced costs first on ``problem``."""
    return FIXING_FROM_ALIGNED if aligned(problem) else FIXING_FROM_MISALIGNED


def portfolio(
    problem: SelectionProblem, small_n_scip: bool = False, max_min: bool = False
) -> tuple[str, str]:
    """(MILP route, why) ``auto`` takes above the enumeration limit.

    ``small_n_scip``: whether the formulation may take SCIP below PORTFOLIO_MIN_N (the ε
    model, whose ε rows it keeps half a value-grid step from every attainable gap).
    ``max_min``: whether its first stage maximizes the worst domain row (maxmin,
    fisher-fair): on float rows that stage takes :data:`MAX_MIN_FLOAT_ROUTE`."""
    if problem.structure != Structure.LINEAR:
        return AUTO_MILP, f"the {problem.surrogate} surrogate's fractional stages: {AUTO_MILP}"
    n = problem.n
    if max_min and value_quantum(problem.Ud) == 0:
        return MAX_MIN_FLOAT_ROUTE, (
            f"a max-min stage on rows with no value grid: {MAX_MIN_FLOAT_ROUTE}"
        )
    if n < PORTFOLIO_MIN_N:
        share = domain_share(problem) if small_n_scip else 0.0
        # the ε model on a value grid only: there every ε row sits half a grid step from
        # each attainable gap (EpsSolver._apply); SCIP's presolve and cuts misjudged ε rows
        # 1e-6 pp below an attainable gap (3 of 303, results/benchmarks/near_gap_points.md)
        if share >= DOMAIN_SHARE_MIN and value_quantum(problem.Ud) > 0:
            from selection.solvers.milp.scip import scip_available

            if scip_available():
                return "scip", (
                    f"N = {n} < {PORTFOLIO_MIN_N}, but the clients' own domains explain "
                    f"{share:.0%} of the domain rows: SCIP, count columns first"
                )
        return AUTO_MILP, f"N = {n} < {PORTFOLIO_MIN_N}: CBC"
    start = fixing_from(problem)
    shape = f"U is {'' if aligned(problem) else 'not '}the mean of the domain rows"
    grid = "stages stopped on the value grid" if value_quantum(problem.Ud) > 0 else "float rows"
    return AUTO_MILP, f"{shape}: CBC with the LP fixing from {start:,} clients on ({grid})"


def backends() -> tuple[str, ...]:
    """Every route name: ``auto``, ``enum`` and each registered MILP backend."""
    return (Route.AUTO, Route.ENUM, *milp_backends())


def check_backend(backend: str, *, front: bool = False) -> str:
    """One of :func:`backends` (or, where a whole front is asked for, the front route)."""
    from selection.solvers.params import FRONT_ROUTE

    allowed = (*backends(), FRONT_ROUTE) if front else backends()
    if backend not in allowed:
        raise ValueError(f"unknown backend {str(backend)!r}; choose one of {', '.join(allowed)}")
    return backend


#: the widest spread max(w)/min(w) of a linear-fractional surrogate's weights (the weighted
#: surrogate's sample counts) a float MILP route is trusted with: its rows multiply each
#: client's value by w_i, and beyond this many small clients' terms can fall under the
#: backends' tolerances (~1e-7 of the rows' scale): on rounds whose sizes spread log-uniformly
#: over 1 to 2^40, CBC and HiGHS answered "optimal" with selections that broke the ε row or
#: missed the optimum by up to 16 points (tests/selection/solvers/milp/test_ill_conditioned.py).
#: Such rounds are answered by enumeration where C(N, K) allows, else refused.
MAX_WEIGHT_SPREAD = 1e6


def weight_spread(problem: SelectionProblem) -> float:
    """max(w)/min(w) of the problem's surrogate weights (1 for a linear surrogate)."""
    w = np.asarray(problem.surrogate_model.client_weights(problem), dtype=float)
    return float(w.max() / w.min()) if len(w) and w.min() > 0 else math.inf


def ill_conditioned(problem: SelectionProblem) -> bool:
    """A linear-fractional surrogate whose weights spread beyond :data:`MAX_WEIGHT_SPREAD`:
    no MILP route answers it exactly (enumeration does)."""
    return (
        problem.surrogate_model.structure == Structure.LINEAR_FRACTIONAL
        and weight_spread(problem) > MAX_WEIGHT_SPREAD
    )


def route_refusal(route: str, problem: SelectionProblem, *, fractional: bool = False) -> str:
    """Why the MILP ``route`` cannot take the problem's surrogate ("" when it can).

    The MILP models are written for the ``linear`` surrogate (``mean``); a ``black-box`` one
    (``ensemble``) is answered by enumeration, the ``search`` route or NSGA-II.
    """

    sur = problem.surrogate_model
    if sur.structure == Structure.LINEAR or route == Route.ENUM:
        return ""
    if sur.structure == Structure.LINEAR_FRACTIONAL and fractional:
        return ""
    return (
        f"the {sur.name} surrogate is {sur.structure}: the {route} MILP route cannot take it; "
        f"use --backend auto (enumeration, above its limit a swap local search), --backend enum "
        f"(C(N, K) = {math.comb(problem.n, problem.k):,}) or --method nsga2"
    )
