"""Weighted sums of linear per-client scores, exact by sorting (top-K).

Because K is fixed, every linear objective of a selection is a sum of per-client terms, so a
weighted sum of them is maximized exactly by the K clients with the largest weighted score.
The gap and the worst-domain utility are not linear (max/min over domains): a weighted sum
cannot target them and, in (U, gap), reaches supported points only.

Two scores:

* **weights** ``(w_U, w_R, w_F, w_cos, w_B)`` — positions fixed in this order, trailing ones
  optional (``"1,0,0"`` is w_U=1, w_R=0, w_F=0)::

      score_i = w_U·z(U_i) + w_R·z(R_i) + w_F·F_z_i + w_cos·z(cos_g_i) − w_B·z(B_i)

  z(·) is the z-score within the round (population std; 0 when the column is constant), F_z
  the z-score of log F that the problem already holds. A positive w_B penalizes divergence.
* **composite** ``(α, β, γ)`` — the problem statement's raw score S_i = α·log(1+F_i) + β·cos_g_i + γ·R_i.

**R_i, the fairness benefit** of client i: its utility (accuracy %) on the round's currently
worst domain d* = argmin_d mean_i U_{i,d} (the domain whose mean per-client utility over all
N clients of the round is lowest; first such domain on ties). Picking clients with high R_i
lifts the domain the selection is most likely to leave behind.

Ties in the score go to the lower client index (stable sort).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from selection.problem import SelectionProblem
from selection.solvers.base import Solver, SweepOptions
from selection.solvers.registry import register
from selection.solvers.result import RawResult, Status

__all__ = [
    "WEIGHT_NAMES",
    "WeightedSolver",
    "worst_domain",
    "fairness_benefit",
    "weighted_scores",
    "composite_scores",
    "parse_weights",
]

WEIGHT_NAMES = ("U", "R", "F", "cos", "B")


def worst_domain(problem: SelectionProblem) -> int:
    """Index of d* = argmin_d mean_i U_{i,d} over all clients of the round."""
    return int(np.argmin(problem.Ud.mean(axis=0)))


def fairness_benefit(problem: SelectionProblem) -> np.ndarray:
    """R_i = U_{i,d*}: each client's utility on the worst domain, accuracy %, shape (N,)."""
    return problem.Ud[:, worst_domain(problem)].astype(float)


def _z(v: np.ndarray) -> np.ndarray:
    sd = float(v.std())
    return (v - v.mean()) / sd if sd > 1e-12 else np.zeros_like(v, dtype=float)


def weighted_scores(problem: SelectionProblem, weights: Sequence[float]) -> np.ndarray:
    """score_i for weights (w_U, w_R, w_F, w_cos, w_B) (missing trailing weights are 0)."""
    w = np.zeros(len(WEIGHT_NAMES))
    w[: len(weights)] = weights
    terms = np.column_stack(
        [
            _z(problem.U),
            _z(fairness_benefit(problem)),
            problem.F_z,
            _z(problem.cos_g),
            -_z(problem.B),
        ]
    )
    return terms @ w


def composite_scores(
    problem: SelectionProblem, alpha: float, beta: float, gamma: float
) -> np.ndarray:
    """S_i = α·log(1+F_i) + β·cos_g_i + γ·R_i (the problem statement's composite score), shape (N,)."""
    return alpha * np.log1p(problem.F) + beta * problem.cos_g + gamma * fairness_benefit(problem)


def parse_weights(text: str) -> tuple[float, ...]:
    """``"1,0,0"`` -> (1.0, 0.0, 0.0); ValueError naming the bad item."""
    items = [t.strip() for t in str(text).split(",")]
    out = []
    for t in items:
        try:
            out.append(float(t))
        except ValueError:
            raise ValueError(f"weight {t!r} in {text!r} is not a number") from None
    return tuple(out)


def _check_vector(name: str, values, lo: int, hi: int) -> tuple[float, ...]:
    if isinstance(values, str):
        values = parse_weights(values)
    try:
        vals = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={values!r} must be a sequence of numbers") from None
    if not lo <= len(vals) <= hi:
        span = f"{lo}" if lo == hi else f"{lo} to {hi}"
        raise ValueError(f"{name}={values!r} has {len(vals)} entries, expected {span}")
    if not all(math.isfinite(v) for v in vals):
        raise ValueError(f"{name}={values!r} must be finite")
    if not any(vals):
        raise ValueError(f"{name}={values!r} are all zero: nothing to maximize")
    return vals


def default_weight_grid(n: int = 11) -> list[tuple[float, float]]:
    """(w_U, w_R) pairs from (1, 0) to (0, 1): utility against the worst domain's utility."""
    return [(round(1 - a, 6), round(a, 6)) for a in np.linspace(0.0, 1.0, n)]


@register
class WeightedSolver(Solver):
    """Top-K by a weighted score (exact for the weighted sum of linear objectives).

    Args:
        weights: (w_U, w_R, w_F, w_cos, w_B), 1 to 5 entries or a string ``"1,0,0"``;
            default (1,) (plain utility: returns a U* selection).
        composite: (α, β, γ) of the problem statement's score S_i instead of ``weights``.
    """

    name = "weighted"
    summary = "top-K by a weighted sum of z-scored terms (supported points only)"
    param = "weights"
    symbol = "w"
    default_grid = tuple(default_weight_grid())
    spec_form = "weighted:w_U,w_R,w_F,w_cos,w_B"
    order = 10

    @classmethod
    def sweep_front(cls, problem: SelectionProblem, options: SweepOptions) -> pd.DataFrame:
        """One point per weight vector (default: 11 (w_U, w_R) pairs from (1, 0) to (0, 1))."""
        from selection.solvers.sweeps import sweep_weighted

        grid = cls.default_grid if options.grid is None else options.grid
        return sweep_weighted(problem, list(grid), progress=options.progress)

    @classmethod
    def spec_kwargs(cls, arg: str | None) -> dict:
        if arg is None:
            raise ValueError("weighted needs comma-separated weights, e.g. weighted:1,0,0")
        return {"weights": arg}

    def __init__(
        self,
        *,
        weights: Sequence[float] | str | None = None,
        composite: Sequence[float] | str | None = None,
    ) -> None:
        if weights is not None and composite is not None:
            raise ValueError("weighted: give weights or composite, not both")
        self.composite = None if composite is None else _check_vector("composite", composite, 3, 3)
        self.weights = None
        if self.composite is None:
            self.weights = _check_vector("weights", (1.0,) if weights is None else weights, 1, 5)

    def scores(self, problem: SelectionProblem) -> np.ndarray:
        """The per-client score this solver sorts by, shape (N,)."""
        if self.composite is not None:
            return composite_scores(problem, *self.composite)
        return weighted_scores(problem, self.weights)

    def _solve(self, problem: SelectionProblem) -> RawResult:
        s = self.scores(problem)
        order = np.lexsort((np.arange(problem.n), -s))
        if self.composite is not None:
            param = "S=" + ",".join(format(v, "g") for v in self.composite)
        else:
            param = "w=" + ",".join(format(v, "g") for v in self.weights)
        return RawResult(
            tuple(int(i) for i in order[: problem.k]), Status.OPTIMAL, "sort", "", param
        )
