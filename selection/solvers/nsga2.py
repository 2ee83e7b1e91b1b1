"""NSGA-II (pymoo) on 0/1 selection vectors with exactly K ones.

The genome is a boolean vector of length N. Three operators of :mod:`selection.solvers.ksubset`
keep the cardinality at K, so no repair and no constraint handling are needed:

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
from enum import StrEnum
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.problem import Problem
from pymoo.optimize import minimize

from selection.errors import SelectionError
from selection.indicators import nondominated_mask
from selection.objectives import OBJECTIVES, evaluate
from selection.problem import SelectionProblem
from selection.solvers.base import Solver, SweepOptions
from selection.solvers.ksubset import (
    KSubsetCrossover,
    KSubsetSampling,
    RowHashDuplicates,
    SelectionMOP,
    SwapMutation,
    swap_neighbours,
)
from selection.solvers.registry import register
from selection.solvers.result import RawResult, SolveResult, Status

__all__ = [
    "NSGA2Solver",
    "Pick",
    "PICKS",
    "knee_index",
    "SelectionMOP",
    "KSubsetSampling",
    "KSubsetCrossover",
    "SwapMutation",
    "RowHashDuplicates",
]


class Pick(StrEnum):
    """Which front member :meth:`NSGA2Solver.solve` returns (module docstring).

    Examples:
        >>> from selection.solvers.nsga2 import Pick
        >>> Pick("max-utility") is Pick.MAX_UTILITY, [str(p) for p in Pick]
        (True, ['knee', 'max-utility', 'min-gap'])
    """

    KNEE = "knee"
    MAX_UTILITY = "max-utility"
    MIN_GAP = "min-gap"


PICKS = tuple(p.value for p in Pick)
_PLS_BUDGET = 20_000_000  # matrix entries for the final Pareto local search
_ALIASES = {"U": "utility", "var": "var_d", "mmw": "mean_minus_worst"}


def _objective_name(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in OBJECTIVES:
        raise SelectionError(
            f"nsga2: unknown objective {name!r}; choose from {', '.join(OBJECTIVES)}"
        )
    return name


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
            Y = swap_neighbours(frontier, rng, cap, 1)
        else:
            small = [x for x in X if comb(int(x.sum()), 2) * comb(n - int(x.sum()), 2) <= 2000]
            Y = swap_neighbours(np.array(small).reshape(-1, n), rng, 2000, 2)
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
        pick: Pick | str = Pick.KNEE,
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
        try:
            self.pick = Pick(pick)
        except ValueError:
            raise SelectionError(
                f"nsga2: pick={pick!r} must be one of {', '.join(PICKS)}"
            ) from None
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise SelectionError(f"nsga2: seed={seed!r} must be an integer >= 0")
        self.pop_size = int(pop_size)
        self.n_gen = int(n_gen)
        self.n_evals = None if n_evals is None else int(n_evals)
        self.seed = int(seed)
        self.objectives = objs
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
        if self.pick == Pick.KNEE:
            return knee_index(F)
        if self.pick == Pick.MAX_UTILITY:
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
            param=str(self.pick),
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
