"""NSGA-II (pymoo) on 0/1 selection vectors with exactly K ones.

The genome is a boolean vector of length N. Three operators keep the cardinality at K, so no
repair and no constraint handling are needed:

* :class:`KSubsetSampling` — seeds the population with the top-K clients by pooled utility and
  by each per-domain utility (the corners of the front), plants a few one-swap descents on
  weighted sums of the objectives (both ends of the front, including the min-gap end random
  search reaches slowly) and fills the rest with random K-subsets;
* :class:`KSubsetCrossover` — two parents give two children that keep the clients both parents
  share and split the symmetric difference at random between them;
* :class:`SwapMutation` — swaps one (sometimes two) selected clients for unselected ones.

After the last generation, :func:`pareto_local_search` (``polish=True``, the default) explores
the one- and two-swap neighbourhoods of the final non-dominated set and keeps every new
non-dominated selection; both the seeding descents and this search work within fixed budgets of
evaluated matrix entries, so large N stays fast (N=1000, K=100: a few seconds).

Every operator draws from the ``random_state`` pymoo 0.6.2 hands it (a generator seeded from the
solver's ``seed``) and the local search from ``np.random.default_rng(seed)``, so the same seed
gives the same front; nothing touches ``np.random``'s global state. Objectives are evaluated
for the whole population at once through :mod:`selection.objectives`; duplicates are removed by
hashing the packed 0/1 rows.

``solve`` returns one front member chosen by ``pick``:

* ``"knee"`` (default): with two objectives, the front point farthest from the straight line
  between the two extremes of the normalized front (the point of "most bend"); with three or more
  objectives, the point closest (Euclidean) to the ideal point of the normalized front;
* ``"max-utility"``: the front point with the highest U(S);
* ``"min-gap"``: the front point with the smallest gap(S).

NSGA-II is a heuristic: its status is ``feasible``, never ``optimal``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.crossover import Crossover
from pymoo.core.duplicate import DuplicateElimination
from pymoo.core.mutation import Mutation
from pymoo.core.problem import Problem
from pymoo.core.sampling import Sampling
from pymoo.optimize import minimize

from selection.errors import SelectionError
from selection.indicators import nondominated_mask
from selection.objectives import OBJECTIVES, evaluate
from selection.problem import SelectionProblem
from selection.solvers.base import Solver, SweepOptions
from selection.solvers.registry import register
from selection.solvers.result import RawResult, SolveResult, Status

__all__ = [
    "NSGA2Solver",
    "PICKS",
    "knee_index",
    "SelectionMOP",
    "KSubsetSampling",
    "KSubsetCrossover",
    "SwapMutation",
    "RowHashDuplicates",
]

PICKS = ("knee", "max-utility", "min-gap")
_DESCENT_BUDGET = 4_000_000  # matrix entries per seeding descent
_DESCENT_STARTS = 3  # descents per weight vector (best row, then random rows)
_PLS_BUDGET = 20_000_000  # matrix entries for the final Pareto local search
_ALIASES = {"U": "utility", "var": "var_d", "mmw": "mean_minus_worst"}


def _objective_name(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in OBJECTIVES:
        raise SelectionError(
            f"nsga2: unknown objective {name!r}; choose from {', '.join(OBJECTIVES)}"
        )
    return name


class SelectionMOP(Problem):
    """pymoo problem: boolean x of length N with K ones, objectives turned into minimization.

    Public with :class:`KSubsetSampling`, :class:`KSubsetCrossover`, :class:`SwapMutation` and
    :class:`RowHashDuplicates`, so any pymoo algorithm (NSGA-III, SMS-EMOA, MOEA/D, ...) can
    search selections with fedsel's K-preserving operators::

        mop = SelectionMOP(SelectionProblem.from_stats("stats.csv", k=5), ["utility", "gap"])
        algo = SMSEMOA(pop_size=60, sampling=KSubsetSampling(), crossover=KSubsetCrossover(),
                       mutation=SwapMutation(), eliminate_duplicates=RowHashDuplicates())
        res = pymoo.optimize.minimize(mop, algo, ("n_gen", 100), seed=0)

    Args:
        problem: one round's selection problem (its ``k`` is the cardinality).
        objectives: names of :data:`selection.objectives.OBJECTIVES` (``res.F`` holds them
            negated where they are maximized).
    """

    def __init__(self, problem: SelectionProblem, objectives: Sequence[str]) -> None:
        super().__init__(n_var=problem.n, n_obj=len(objectives), xl=0, xu=1, vtype=bool)
        self.sel = problem
        self.names = tuple(objectives)
        self.sign = np.array([-1.0 if OBJECTIVES[o].maximize else 1.0 for o in objectives])

    def _evaluate(self, x, out, *args, **kwargs):
        X = np.asarray(x, dtype=float)
        out["F"] = np.column_stack([OBJECTIVES[o](self.sel, X) for o in self.names]) * self.sign


class KSubsetSampling(Sampling):
    """Corner seeds, weighted swap-descent seeds, then uniformly random K-subsets.

    Rows 0..D hold the top-K clients by U and by each U_d. Random K-subsets fill the rest; then,
    for a few weight vectors over the (range-normalized) objectives, a best-improvement swap
    descent from the best row so far replaces one random row each: this plants points near both
    ends of the front, including the min-gap end that random search reaches slowly.
    """

    def _do(self, problem, n_samples, *args, random_state=None, **kwargs):
        sel: SelectionProblem = problem.sel
        n, k = sel.n, sel.k
        keys = [sel.U, *sel.Ud.T]
        X = np.zeros((n_samples, n), dtype=bool)
        n_seed = min(len(keys), n_samples)
        for r in range(n_seed):
            X[r, np.argsort(-keys[r], kind="stable")[:k]] = True
        R = random_state.random((n_samples - n_seed, n))
        idx = (
            np.argpartition(R, k - 1, axis=1)[:, :k]
            if k < n
            else np.tile(np.arange(n), (len(R), 1))
        )
        np.put_along_axis(X[n_seed:], idx, True, axis=1)
        if k == n:
            return X
        F = problem.evaluate(X.astype(float), return_values_of=["F"])
        lo, span = F.min(axis=0), np.ptp(F, axis=0)
        span = np.where(span > 1e-12, span, 1.0)
        # Each weight: one descent from the best row for it, then from random rows (multi-start:
        # the min-gap landscape has many local optima far apart in selection space).
        weights = _weight_grid(F.shape[1])
        jobs = [(w, int(np.argmin(((F - lo) / span) @ w))) for w in weights]
        for _ in range(_DESCENT_STARTS - 1):
            jobs += [(w, int(random_state.integers(n_seed, n_samples))) for w in weights]
        slots = range(n_samples - 1, n_seed - 1, -1)
        starts = X.copy()
        for (w, row), slot in zip(jobs, slots, strict=False):
            X[slot] = _swap_descent(problem, starts[row], w, lo, span, random_state)
        return X


def _weight_grid(m: int) -> np.ndarray:
    """Scalarization weights: each objective alone (with a 1e-3 tie-break), then equal mixes."""
    W = [np.full(m, 1e-3) + np.eye(m)[i] for i in range(m)]
    if m == 2:
        W += [np.array([a, 1 - a]) for a in (0.75, 0.5, 0.25)]
    else:
        W.append(np.full(m, 1.0 / m))
    return np.array(W)


def _swap_descent(
    mop, x, w, lo, span, rng, budget: int = _DESCENT_BUDGET, max_steps: int = 200
) -> np.ndarray:
    """Best-improvement one-swap descent on sum_j w_j (F_j - lo_j) / span_j from selection x.

    Stops at a local optimum, after ``max_steps`` moves, or when ``budget`` matrix entries
    (neighbours x N) have been evaluated; neighbourhoods above 200,000 / N are sampled.
    """
    x = x.copy()
    cap = max(50, 200_000 // x.size)
    best = float(
        (((mop.evaluate(x[None, :].astype(float), return_values_of=["F"]) - lo) / span) @ w)[0]
    )
    for _ in range(max_steps):
        if budget <= 0:
            break
        Y = _swap_neighbours(x[None, :], rng, cap)
        budget -= Y.size
        vals = ((mop.evaluate(Y.astype(float), return_values_of=["F"]) - lo) / span) @ w
        j = int(np.argmin(vals))
        if vals[j] >= best - 1e-12:
            break
        x, best = Y[j], float(vals[j])
    return x


class KSubsetCrossover(Crossover):
    """Keep the shared clients; split the symmetric difference at random between two children."""

    def __init__(self, prob: float = 0.9) -> None:
        super().__init__(n_parents=2, n_offsprings=2, prob=prob)

    def _do(self, problem, X, *args, random_state=None, **kwargs):
        a, b = X[0].astype(bool), X[1].astype(bool)  # (n_matings, N) each
        common, diff = a & b, a ^ b
        # A random rank among each row's differing positions; the lower half goes to child 0.
        keys = np.where(diff, random_state.random(a.shape), np.inf)
        rank = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
        half = (diff.sum(axis=1) // 2)[:, None]
        first = diff & (rank < half)
        return np.stack([common | first, common | (diff & ~first)])


class SwapMutation(Mutation):
    """Swap one selected client for an unselected one (a second swap with probability 1/4)."""

    def _do(self, problem, X, *args, random_state=None, **kwargs):
        X = np.asarray(X, dtype=bool).copy()
        m, n = X.shape
        rows = np.arange(m)
        # Two distinct random selected (on) and unselected (off) positions per row.
        on = np.argsort(np.where(X, random_state.random((m, n)), 2.0), axis=1)[:, :2]
        off = np.argsort(np.where(~X, random_state.random((m, n)), 2.0), axis=1)[:, :2]
        n_on, n_off = X.sum(axis=1), n - X.sum(axis=1)
        can = (n_on >= 1) & (n_off >= 1)
        twice = can & (n_on >= 2) & (n_off >= 2) & (random_state.random(m) < 0.25)
        for j, mask in ((0, can), (1, twice)):
            r = rows[mask]
            X[r, on[mask, j]] = False
            X[r, off[mask, j]] = True
        return X


class RowHashDuplicates(DuplicateElimination):
    """Exact duplicate test on packed 0/1 rows (pymoo's default computes an N-wide cdist)."""

    def _do(self, pop, other, is_duplicate):
        keys = [r.tobytes() for r in np.packbits(np.asarray(pop.get("X"), dtype=bool), axis=1)]
        if other is None:
            seen: set[bytes] = set()
            for i, key in enumerate(keys):
                is_duplicate[i] = key in seen
                seen.add(key)
        else:
            others = np.packbits(np.asarray(other.get("X"), dtype=bool), axis=1)
            seen = {r.tobytes() for r in others}
            is_duplicate[:] = [key in seen for key in keys]
        return is_duplicate


def _nondominated(X: np.ndarray, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-dominated rows of (X, F) with F in minimization form, one row per objective vector.

    Selections with equal objectives are one point of the front: only the first is kept (when
    every client ties, all selections are weakly non-dominated and the front would grow with
    every swap the local search tries).
    """
    _, first = np.unique(np.packbits(X, axis=1), axis=0, return_index=True)
    X, F = X[np.sort(first)], F[np.sort(first)]
    _, first = np.unique(F, axis=0, return_index=True)
    X, F = X[np.sort(first)], F[np.sort(first)]
    keep = nondominated_mask(F, maximise=False, keep_weakly=True)
    return X[keep], F[keep]


def _swap_neighbours(
    X: np.ndarray, rng: np.random.Generator, cap: int, swaps: int = 1
) -> np.ndarray:
    """Selections ``swaps`` swaps away from each row of X, shape (M, N).

    All of them when a row has at most ``cap`` such neighbours, else ``cap`` random ones.
    """
    out = []
    for x in X:
        on, off = np.flatnonzero(x), np.flatnonzero(~x)
        if swaps > min(len(on), len(off)):
            continue
        if comb(len(on), swaps) * comb(len(off), swaps) <= cap:
            A = np.array(list(combinations(on, swaps)))
            B = np.array(list(combinations(off, swaps)))
            ia, ib = np.meshgrid(np.arange(len(A)), np.arange(len(B)), indexing="ij")
            A, B = A[ia.ravel()], B[ib.ravel()]
        elif swaps == 1:
            A, B = rng.choice(on, (cap, 1)), rng.choice(off, (cap, 1))
        else:
            A = on[np.argsort(rng.random((cap, len(on))), axis=1)[:, :swaps]]
            B = off[np.argsort(rng.random((cap, len(off))), axis=1)[:, :swaps]]
        Y = np.repeat(x[None, :], len(A), axis=0)
        rows = np.arange(len(A))[:, None]
        Y[rows, A] = False
        Y[rows, B] = True
        out.append(Y)
    return np.vstack(out) if out else X[:0]


def pareto_local_search(
    mop: Problem,
    X: np.ndarray,
    F: np.ndarray,
    *,
    seed: int,
    max_rounds: int = 50,
    budget: int = _PLS_BUDGET,
) -> tuple[np.ndarray, np.ndarray]:
    """Polish a front by Pareto local search.

    Evaluates the one-swap neighbours of newly found front members and keeps the non-dominated
    union until nothing new appears; then tries the two-swap neighbourhood of every member
    (only where a member has at most 2,000 of them) and, if that finds new members, resumes.
    Large neighbourhoods are sampled with a seeded generator (about 1 million matrix entries
    per round), so the result is deterministic for a given seed; the search stops once
    ``budget`` matrix entries (neighbours x N, default 20 million) have been evaluated.
    """
    rng = np.random.default_rng(seed)
    n = X.shape[1]
    X, F = _nondominated(X, F)
    frontier, swaps = X, 1
    for _ in range(max_rounds):
        if budget <= 0:
            break
        if swaps == 1:
            cap = max(20, 1_000_000 // (n * max(1, len(frontier))))
            Y = _swap_neighbours(frontier, rng, cap, 1)
        else:
            small = [x for x in X if comb(int(x.sum()), 2) * comb(n - int(x.sum()), 2) <= 2000]
            Y = _swap_neighbours(np.array(small).reshape(-1, n), rng, 2000, 2)
        seen = {r.tobytes() for r in np.packbits(X, axis=1)}
        budget -= Y.size
        if len(Y):
            G = mop.evaluate(Y.astype(float), return_values_of=["F"])
            X, F = _nondominated(np.vstack([X, Y]), np.vstack([F, G]))
        new = np.array([r.tobytes() not in seen for r in np.packbits(X, axis=1)], dtype=bool)
        if new.any():
            frontier, swaps = X[new], 1
        elif swaps == 1:
            swaps = 2
        else:
            break
    return X, F


def knee_index(F: np.ndarray) -> int:
    """Index of the knee of a front given in minimization form, shape (n, m).

    Two objectives: the point farthest from the line through the two extremes of the front
    normalized to [0, 1] per objective. Three or more: the point closest to the normalized ideal.
    """
    F = np.asarray(F, dtype=float)
    if len(F) <= 2:
        return 0
    lo, hi = F.min(axis=0), F.max(axis=0)
    Z = (F - lo) / np.where(hi - lo > 1e-12, hi - lo, 1.0)
    if Z.shape[1] == 2:
        a, b = Z[np.argmin(Z[:, 0])], Z[np.argmin(Z[:, 1])]
        d = b - a
        norm = float(np.hypot(d[0], d[1]))
        if norm < 1e-12:
            return 0
        dist = np.abs(d[0] * (Z[:, 1] - a[1]) - d[1] * (Z[:, 0] - a[0])) / norm
        return int(np.argmax(dist))
    return int(np.argmin(np.linalg.norm(Z, axis=1)))


@register
class NSGA2Solver(Solver):
    """pymoo NSGA-II with K-preserving operators.

    Args:
        pop_size: population size.
        n_gen: number of generations (ignored when ``n_evals`` is given).
        n_evals: stop after this many evaluations instead of ``n_gen`` generations.
        seed: seed of pymoo's random state; same seed => same front.
        objectives: objective names of :mod:`selection.objectives` (default ``utility``, ``gap``);
            each one's sense (max or min) from :data:`selection.objectives.OBJECTIVES`.
        pick: which front member ``solve`` returns: ``knee``, ``max-utility`` or ``min-gap``.
        polish: finish with a Pareto local search over one-swap neighbours of the final front
            (:func:`pareto_local_search`); deterministic for a given seed.
    """

    name = "nsga2"
    summary = "NSGA-II (pymoo) with K-preserving operators and a swap local search"
    spec_form = "nsga2[:knee|max-utility|min-gap]"
    order = 40
    any_objectives = True

    @classmethod
    def sweep_front(cls, problem: SelectionProblem, options: SweepOptions) -> pd.DataFrame:
        """The final non-dominated population (after the local search) in ``objectives``."""
        from selection.solvers.result import results_to_frame

        solver = cls(seed=options.seed, objectives=tuple(options.objectives))
        return results_to_frame(problem, solver.front(problem))

    @classmethod
    def spec_kwargs(cls, arg: str | None) -> dict:
        return {} if arg is None else {"pick": arg}

    def __init__(
        self,
        *,
        pop_size: int = 60,
        n_gen: int = 100,
        n_evals: int | None = None,
        seed: int = 0,
        objectives: Sequence[str] = ("utility", "gap"),
        pick: str = "knee",
        polish: bool = True,
    ) -> None:
        if isinstance(objectives, str):
            objectives = [o for o in objectives.split(",") if o]
        objs = tuple(_objective_name(o) for o in objectives)
        if len(objs) < 2 or len(set(objs)) != len(objs):
            raise SelectionError(f"nsga2: need at least two distinct objectives, got {objs}")
        if int(pop_size) < 4:
            raise SelectionError(f"nsga2: pop_size={pop_size} must be at least 4")
        if int(n_gen) < 1 or (n_evals is not None and int(n_evals) < int(pop_size)):
            raise SelectionError(f"nsga2: n_gen={n_gen} / n_evals={n_evals} too small")
        if pick not in PICKS:
            raise SelectionError(f"nsga2: pick={pick!r} must be one of {', '.join(PICKS)}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise SelectionError(f"nsga2: seed={seed!r} must be an integer >= 0")
        self.pop_size = int(pop_size)
        self.n_gen = int(n_gen)
        self.n_evals = None if n_evals is None else int(n_evals)
        self.seed = int(seed)
        self.objectives = objs
        self.pick = pick
        self.polish = bool(polish)

    def _run(self, problem: SelectionProblem) -> tuple[np.ndarray, np.ndarray, float]:
        """Run NSGA-II; return the final non-dominated X (n, N), F (n, m) and seconds."""
        t0 = time.perf_counter()
        mop = SelectionMOP(problem, self.objectives)
        if comb(problem.n, problem.k) <= self.pop_size:  # e.g. one client: enumerate instead
            X = np.zeros((comb(problem.n, problem.k), problem.n), dtype=bool)
            for row, idx in enumerate(combinations(range(problem.n), problem.k)):
                X[row, list(idx)] = True
            X, F = _nondominated(X, mop.evaluate(X.astype(float), return_values_of=["F"]))
            order = np.lexsort(F.T[::-1])
            return X[order], F[order], time.perf_counter() - t0
        algorithm = NSGA2(
            pop_size=self.pop_size,
            sampling=KSubsetSampling(),
            crossover=KSubsetCrossover(),
            mutation=SwapMutation(),
            eliminate_duplicates=RowHashDuplicates(),
        )
        term = ("n_evals", self.n_evals) if self.n_evals is not None else ("n_gen", self.n_gen)
        res = minimize(mop, algorithm, term, seed=self.seed, verbose=False)
        X = np.atleast_2d(np.asarray(res.pop.get("X"), dtype=bool))
        F = np.atleast_2d(np.asarray(res.pop.get("F"), dtype=float))
        if self.polish:
            X, F = pareto_local_search(mop, X, F, seed=self.seed)
        else:
            X, F = _nondominated(X, F)
        order = np.lexsort(F.T[::-1])
        return X[order], F[order], time.perf_counter() - t0

    def _pick_index(self, problem: SelectionProblem, X: np.ndarray, F: np.ndarray) -> int:
        if self.pick == "knee":
            return knee_index(F)
        if self.pick == "max-utility":
            key = -OBJECTIVES["utility"](problem, X.astype(float))
        else:
            key = OBJECTIVES["gap"](problem, X.astype(float))
        return int(np.lexsort((F[:, 0], key))[0])

    def _solve(self, problem: SelectionProblem) -> RawResult:
        X, F, _ = self._run(problem)
        i = self._pick_index(problem, X, F)
        return RawResult(
            selected=tuple(int(j) for j in np.flatnonzero(X[i])),
            status=Status.FEASIBLE,
            backend="pymoo",
            param=self.pick,
            message=f"{len(X)} front points; seed={self.seed}",
        )

    def front(self, problem: SelectionProblem) -> list[SolveResult]:
        """The whole final non-dominated set, one :class:`SolveResult` per point.

        Each result's ``seconds`` is its share (1/n) of the run's wall time, so the column sums
        to the run time; ``param`` is ``front``; points are sorted by the first objective.
        """
        if not isinstance(problem, SelectionProblem):
            raise SelectionError(
                f"nsga2: expected a SelectionProblem, got {type(problem).__name__}"
            )
        X, F, seconds = self._run(problem)
        out = []
        for x in X:
            sel = tuple(int(j) for j in np.flatnonzero(x))
            out.append(
                SolveResult(
                    method=self.name,
                    status=Status.FEASIBLE,
                    selected=sel,
                    ids=tuple(problem.ids_of(sel)),
                    objectives=evaluate(problem, sel),
                    seconds=seconds / len(X),
                    param="front",
                    backend="pymoo",
                    message=f"1/{len(X)} of a {seconds:.3f} s run; seed={self.seed}",
                )
            )
        return out
