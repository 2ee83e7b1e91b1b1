"""A black-box surrogate's formulations above the enumeration limit: the ``search`` route.

Enumeration answers ``eps``, ``maxmin``, ``fisher-fair`` and the smallest-gap point exactly on
any surrogate while C(N, K) is small; the MILP routes need a linear or linear-fractional one.
Above the enumeration limit a ``black-box`` surrogate (``ensemble``) is answered here by a
seeded swap local search on the formulation's own question, written as a :class:`Goal`: the
rows it must meet (gap <= ε, U >= U* − δ, ...; a selection outside them is ranked by how far
outside it lies, so the search walks into them) and its objectives, lexicographically. The
surrogate scores a batch of one-swap neighbours of the current selection at once
(:meth:`selection.surrogates.base.Surrogate.swaps`; the ensemble incrementally); the search
takes the best swap for each selected client in turn (in a seeded order) until none improves,
then kicks the best selection found by random swaps (two, doubling while kicks find nothing)
and descends again, until its budget is spent or :data:`STALL` kicks in a row found nothing
better. The budget is :data:`EVALUATIONS` neighbour evaluations, so the same seed gives the same
selection; a time limit, where one is given, replaces it (then the selection depends on the
machine's speed). Each selected client tries a random sample of :data:`NEIGHBOURS` newcomers;
where no swap improves the value, up to :data:`TIE_MOVES` swaps that raise the surrogate's
smooth score instead cross the plateaus of a step-valued surrogate (the ensemble's accuracy
moves in steps of one validation sample).

A heuristic proves no optimum: the answer's status is ``feasible`` and its ``bound`` the best
bound the surrogate can prove on the formulation's first objective (:func:`first_bound`), so
the gap to the optimum is at most bound − value. Where thresholds need an optimum (U* of
``maxmin``, worst* of ``fisher-fair``) the search's own best stands in for it: where that falls
short of the true optimum the floor is lower than the formulation's, so the answer may lie
below the true floor by as much (the message gives the stand-in and the proven bound on it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from selection.problem import SelectionProblem
from selection.solvers.params import Route
from selection.solvers.result import RawResult, Status

__all__ = ["Goal", "SearchOutcome", "search", "first_bound", "answer", "EVALUATIONS"]

# neighbour evaluations per search: seconds at N = 200 and 1,000; given NSGA-II's time instead,
# the search reached NSGA-II's values or higher on three of four questions
# (results/benchmarks/ensemble_search_n200.md, ensemble_search_n1000.md)
EVALUATIONS = 200_000
KICK = 2  # random swaps of a first kick
KICK_GROWTH = 10  # kicks in a row that find nothing better before the kick doubles
STALL = 30  # kicks in a row that find nothing better end the search before its budget
NEIGHBOURS = 64  # newcomers tried per selected client: a random sample of those outside
TIE_MOVES = 20  # swaps per descent that only raise the surrogate's score (step-valued plateaus)
_R = 9  # decimals of the ranking, as enumeration rounds


@dataclass(frozen=True)
class Goal:
    """A formulation's question for the search.

    Attributes:
        keys: (objective, +1 maximize / −1 minimize), compared lexicographically.
        rows: (objective, lo, up): a selection meets the row when lo <= value <= up; its
            violation is the distance outside, summed over the rows.
    """

    keys: tuple[tuple[str, float], ...]
    rows: tuple[tuple[str, float, float], ...] = ()

    def rank(self, table: dict[str, np.ndarray]) -> np.ndarray:
        """(M, 1 + len(keys)): violation, then each key to minimize, rounded; smaller first."""
        m = len(next(iter(table.values())))
        viol = np.zeros(m)
        for name, lo, up in self.rows:
            v = table[name]
            viol += np.maximum(lo - v, 0.0) + np.maximum(v - up, 0.0)
        cols = [viol] + [-sign * table[name] for name, sign in self.keys]
        return np.round(np.column_stack(cols), _R)


@dataclass(frozen=True)
class SearchOutcome:
    """The best selection found, its rank (violation first), and the work done."""

    selected: tuple[int, ...]
    rank: tuple[float, ...]
    evaluations: int
    seconds: float
    stopped: str  # "budget", "time limit" or "stalled" (STALL kicks found nothing better)

    @property
    def feasible(self) -> bool:
        return self.rank[0] <= 0.0


def _table(problem: SelectionProblem, U, Ud, fz, b) -> dict[str, np.ndarray]:
    Ud = np.atleast_2d(Ud)
    return {
        "utility": np.atleast_1d(U),
        "gap": Ud.max(axis=1) - Ud.min(axis=1),
        "worst": Ud.min(axis=1),
        "sum_Fz": np.atleast_1d(fz),
        "sum_B": np.atleast_1d(b),
    }


def search(
    problem: SelectionProblem,
    goal: Goal,
    *,
    evaluations: int | None = None,
    seed: int = 0,
    time_limit: float | None = None,
    start: Sequence[int] | None = None,
) -> SearchOutcome:
    """The best selection the swap local search finds for ``goal`` (module docstring).

    Args:
        problem: the round's problem (any surrogate).
        goal: the formulation's question.
        evaluations: neighbour evaluations to spend (None: :data:`EVALUATIONS`, or no limit
            but the time limit where one is given).
        seed: seeds the order of the selected clients and the kicks.
        time_limit: seconds, besides the budget (None: the budget alone).
        start: the first selection (default: the K clients of highest single-update U).
    """

    t0 = time.perf_counter()
    if evaluations is None:  # a time limit, where given, is the budget
        evaluations = EVALUATIONS if time_limit is None else 2**62
    evaluations = int(evaluations)
    rng = np.random.default_rng(seed)
    n, k = problem.n, problem.k
    fz, bb = np.asarray(problem.F_z, dtype=float), np.asarray(problem.B, dtype=float)
    if start is None:
        start = np.argsort(-np.asarray(problem.U), kind="stable")[:k]
    sw = problem.surrogate_model.swaps(problem, start)

    def rank_now() -> tuple[float, ...]:
        U, Ud = sw.current()
        s = sw.selected
        return tuple(goal.rank(_table(problem, U, Ud, fz[s].sum(), bb[s].sum()))[0])

    used, stopped = 0, ""

    def out_of_budget() -> bool:
        nonlocal stopped
        if used >= evaluations:
            stopped = "budget"
        elif time_limit is not None and time.perf_counter() - t0 >= time_limit:
            stopped = "time limit"
        return bool(stopped)

    def descend(rank: tuple[float, ...]) -> tuple[float, ...]:
        """Best swap per selected client, in a seeded order, while one improves the rank;
        where none does, up to :data:`TIE_MOVES` swaps that keep the rank and raise the
        surrogate's score (plateaus of a step-valued surrogate)."""
        nonlocal used
        ties, moving = 0, True
        while moving and not out_of_budget():
            moving = False
            for out in rng.permutation(sw.selected):
                inside = np.zeros(n, dtype=bool)
                inside[sw.selected] = True
                outside = np.flatnonzero(~inside)
                if len(outside) > NEIGHBOURS:  # a sample of the newcomers, in index order
                    outside = np.sort(rng.choice(outside, NEIGHBOURS, replace=False))
                cand = np.r_[out, outside]  # row 0: the selection itself
                U, Ud, score = sw.values(int(out), cand)
                used += len(cand) - 1
                s_fz = fz[sw.selected].sum() - fz[out] + fz[cand]
                s_b = bb[sw.selected].sum() - bb[out] + bb[cand]
                R = goal.rank(_table(problem, U, Ud, s_fz, s_b))
                full = np.column_stack([R, -np.round(score, _R)])
                j = int(np.lexsort(full.T[::-1])[0])
                better = tuple(R[j]) < tuple(R[0])
                if better or (ties < TIE_MOVES and tuple(full[j]) < tuple(full[0])):
                    sw.move_to(np.r_[sw.selected[sw.selected != out], cand[j]])
                    rank, moving, ties = tuple(R[j]), True, 0 if better else ties + 1
                if out_of_budget():
                    break
        return rank

    best_rank = descend(rank_now())
    best, stale = tuple(int(i) for i in sw.selected), 0
    while stale < STALL and not out_of_budget() and n > k:
        # kicks grow while they find nothing: two swaps, then four, ... up to K/2
        m = min(KICK << (stale // KICK_GROWTH), max(KICK, k // 2), k, n - k)
        inside = np.zeros(n, dtype=bool)
        inside[list(best)] = True
        drop = rng.choice(np.flatnonzero(inside), m, replace=False)
        add = rng.choice(np.flatnonzero(~inside), m, replace=False)
        inside[drop], inside[add] = False, True
        sw.move_to(np.flatnonzero(inside))
        rank = descend(rank_now())
        if rank < best_rank:
            best, best_rank, stale = tuple(int(i) for i in sw.selected), rank, 0
        else:
            stale += 1
    return SearchOutcome(
        tuple(sorted(best)), best_rank, used, time.perf_counter() - t0, stopped or "stalled"
    )


def first_bound(problem: SelectionProblem, objective: str, eps: float | None = None) -> float:
    """A proven bound on ``objective`` over every K-selection (NaN: none known).

    ``utility`` and ``worst``: upper bounds from the surrogate's per-domain bounds
    (:meth:`~selection.surrogates.base.Surrogate.value_bounds`): worst(S) <= min_d up_d and,
    U being the pooled share Σ_d w_d U_d(S) (w_d: domain d's share of the validation
    samples), U(S) <= Σ_d w_d min(up_d, min_d' up_d' + ε) where gap(S) <= ε. ``sum_Fz``: the
    K largest F_z. ``gap``: a lower bound, max(0, max_d lo_d − min_d up_d).
    """

    if objective == "sum_Fz":
        return float(np.sort(np.asarray(problem.F_z))[::-1][: problem.k].sum())
    bounds = problem.surrogate_model.value_bounds(problem)
    if bounds is None:
        return math.nan
    lo, up = (np.asarray(b, dtype=float) for b in bounds)
    if objective == "worst":
        return float(up.min())
    if objective == "gap":
        return float(max(0.0, lo.max() - up.min()))
    if objective == "utility":
        w = problem.surrogate_model.domain_shares(problem)
        if w is None:
            return math.nan
        cap = up if eps is None or math.isinf(eps) else np.minimum(up, up.min() + eps)
        return float(np.asarray(w) @ cap)
    raise ValueError(f"no bound for objective {objective!r}")


def answer(out: SearchOutcome, param: str, bound: float, what: str) -> RawResult:
    """The route's :class:`RawResult`: the selection where it meets the rows (``feasible``),
    else none (``time_limit``: the search found no selection meeting them, which proves
    nothing)."""
    work = f"swap search, {out.evaluations:,} neighbours in {out.seconds:.2f} s ({out.stopped})"
    if not out.feasible:
        msg = f"no selection meeting {what} found ({work}; not a proof that none exists)"
        return RawResult((), Status.TIME_LIMIT, Route.SEARCH, msg, param, exact=False)
    msg = f"{work}; a heuristic: the optimum lies between the value and the bound"
    return RawResult(out.selected, Status.FEASIBLE, Route.SEARCH, msg, param, bound, exact=False)
