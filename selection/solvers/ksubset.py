"""pymoo's building blocks for K-subsets: a problem and operators that keep exactly K ones.

:class:`SelectionMOP` states one round's selection problem for pymoo; :class:`KSubsetSampling`,
:class:`KSubsetCrossover`, :class:`SwapMutation` and :class:`RowHashDuplicates` keep the
cardinality at K, so no repair and no constraint handling are needed. NSGA-II
(:mod:`selection.solvers.nsga2`) runs on them, and so can any pymoo algorithm.
:func:`swap_neighbours` is the one- and two-swap neighbourhood the seeding descents and the
final Pareto local search walk.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from math import comb

import numpy as np
from pymoo.core.crossover import Crossover
from pymoo.core.duplicate import DuplicateElimination
from pymoo.core.mutation import Mutation
from pymoo.core.problem import Problem
from pymoo.core.sampling import Sampling

from selection.objectives import OBJECTIVES
from selection.problem import SelectionProblem

__all__ = [
    "SelectionMOP",
    "KSubsetSampling",
    "KSubsetCrossover",
    "SwapMutation",
    "RowHashDuplicates",
    "swap_neighbours",
]

_DESCENT_BUDGET = 4_000_000  # matrix entries per seeding descent
_DESCENT_STARTS = 3  # descents per weight vector (best row, then random rows)


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

    Examples:
        >>> import numpy as np
        >>> from selection.example import tied_problem
        >>> from selection.solvers.ksubset import SelectionMOP
        >>> mop = SelectionMOP(tied_problem(), ["utility", "gap"])
        >>> X = np.array([[True, True, False], [False, True, True]])  # {a0, b0}, {b0, a1}
        >>> mop.evaluate(X, return_values_of=["F"])  # (-U, gap): both minimized
        array([[-70. ,   0. ],
               [-72.5,  15. ]])
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

    Examples:
        >>> import numpy as np
        >>> from selection.example import tied_problem
        >>> from selection.solvers.ksubset import KSubsetSampling, SelectionMOP
        >>> mop = SelectionMOP(tied_problem(), ["utility", "gap"])
        >>> X = KSubsetSampling().do(mop, 4, random_state=np.random.default_rng(0)).get("X")
        >>> X[:3].astype(int)  # the top-2 by U, by U_a and by U_b
        array([[1, 0, 1],
               [1, 0, 1],
               [0, 1, 1]])
        >>> X.sum(axis=1)  # every row has K = 2 clients
        array([2, 2, 2, 2])
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
        # random starts among the random rows (any row where the seeded ones fill the sample)
        first = n_seed if n_seed < n_samples else 0
        for _ in range(_DESCENT_STARTS - 1):
            jobs += [(w, int(random_state.integers(first, n_samples))) for w in weights]
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
        Y = swap_neighbours(x[None, :], rng, cap)
        budget -= Y.size
        vals = ((mop.evaluate(Y.astype(float), return_values_of=["F"]) - lo) / span) @ w
        j = int(np.argmin(vals))
        if vals[j] >= best - 1e-12:
            break
        x, best = Y[j], float(vals[j])
    return x


class KSubsetCrossover(Crossover):
    """Keep the shared clients; split the symmetric difference at random between two children.

    Examples:
        >>> import numpy as np
        >>> from pymoo.core.population import Population
        >>> from pymoo.core.problem import Problem
        >>> from selection.solvers.ksubset import KSubsetCrossover
        >>> parents = Population.new("X", np.array([[1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 1, 1]]))
        >>> children = KSubsetCrossover().do(
        ...     Problem(n_var=6), parents, [[0, 1]], random_state=np.random.default_rng(1)
        ... )
        >>> children.get("X").astype(int)  # both keep client 0 and take 2 of clients 1, 2, 4, 5
        array([[1, 1, 0, 0, 1, 0],
               [1, 0, 1, 0, 0, 1]])
    """

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
    """Swap one selected client for an unselected one (a second swap with probability 1/4).

    Examples:
        >>> import numpy as np
        >>> from pymoo.core.population import Population
        >>> from pymoo.core.problem import Problem
        >>> from selection.solvers.ksubset import SwapMutation
        >>> pop = Population.new("X", np.array([[1, 1, 0, 0, 0, 0]] * 3, dtype=bool))
        >>> pop = SwapMutation().do(Problem(n_var=6), pop, random_state=np.random.default_rng(0))
        >>> pop.get("X").astype(int)  # one of clients 0, 1 swapped out, K = 2 kept
        array([[1, 0, 1, 0, 0, 0],
               [0, 1, 0, 0, 0, 1],
               [1, 0, 1, 0, 0, 0]])
    """

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
    """Exact duplicate test on packed 0/1 rows (pymoo's default computes an N-wide cdist).

    Examples:
        >>> import numpy as np
        >>> from pymoo.core.population import Population
        >>> from selection.solvers.ksubset import RowHashDuplicates
        >>> pop = Population.new("X", np.array([[1, 1, 0], [0, 1, 1], [1, 1, 0]], dtype=bool))
        >>> RowHashDuplicates().do(pop).get("X").astype(int)  # the repeated row dropped
        array([[1, 1, 0],
               [0, 1, 1]])
        >>> seen = Population.new("X", np.array([[0, 1, 1]], dtype=bool))
        >>> RowHashDuplicates().do(pop, seen).get("X").astype(int)  # and the rows seen before
        array([[1, 1, 0]])
    """

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


def swap_neighbours(
    X: np.ndarray, rng: np.random.Generator, cap: int, swaps: int = 1
) -> np.ndarray:
    """Selections ``swaps`` swaps away from each row of X, shape (M, N).

    All of them when a row has at most ``cap`` such neighbours, else ``cap`` random ones.

    Examples:
        >>> import numpy as np
        >>> from selection.solvers.ksubset import swap_neighbours
        >>> x = np.array([[True, True, False, False]])  # clients 0 and 1 of 4
        >>> swap_neighbours(x, np.random.default_rng(0), cap=10).astype(int)  # all 2 x 2 swaps
        array([[0, 1, 1, 0],
               [0, 1, 0, 1],
               [1, 0, 1, 0],
               [1, 0, 0, 1]])
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
