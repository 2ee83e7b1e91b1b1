"""Objectives of a selection, and the one objective table every part of fedsel reads.

Why one module past 450 lines: two thirds of it are the definitions' documentation and their
runnable examples; the table and the functions it names must stay together, since every reader
(indicators, enumeration, NSGA-II, the CLI, the reports) takes senses and labels from the one
table.

All functions take a 0/1 selection matrix ``X`` of shape (M, N) (or one vector of shape
(N,)) with exactly K ones per row and return one value per row. Because K is fixed, every
mean is linear in ``x``: U(S) = (1/K) * sum_i x_i U_i. The definitions are written out in
``docs/contract.md``.

:data:`OBJECTIVES` maps each name to an :class:`Objective` (function, sense, unit, label):
indicators, enumeration, NSGA-II, the CLI's help and the reports take senses and labels
from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from selection.errors import SelectionError
from selection.problem import SelectionProblem

__all__ = [
    "as_matrix",
    "utility",
    "domain_utility",
    "gap",
    "worst",
    "mean_minus_worst",
    "var_domains",
    "sum_B",
    "sum_Fz",
    "sum_cos",
    "u_star",
    "evaluate",
    "realized_objectives",
    "surrogate_values",
    "Objective",
    "OBJECTIVES",
    "check_objectives",
    "maximise_mask",
]


def as_matrix(X: np.ndarray, n: int) -> np.ndarray:
    """Selections as a float matrix (M, N); a vector of indices or 0/1 becomes one row.

    Examples:
        >>> from selection.objectives import as_matrix
        >>> as_matrix([1, 0, 1], 3).tolist()  # one 0/1 vector: one row
        [[1.0, 0.0, 1.0]]
        >>> as_matrix([[1, 1, 0], [0, 1, 1]], 3).shape
        (2, 3)
    """
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[None, :]
    if X.shape[1] != n:
        raise ValueError(f"selection matrix has {X.shape[1]} columns, the problem has {n} clients")
    return X.astype(float)


def surrogate_values(p: SelectionProblem, X) -> tuple[np.ndarray, np.ndarray]:
    """(U(S) (M,), U_d(S) (M, D)) by the problem's surrogate (:mod:`selection.surrogates`).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import surrogate_values
        >>> p = small_problem()
        >>> U, Ud = surrogate_values(p, [[1, 1, 0], [1, 0, 1]])  # {a, b} and {a, c}
        >>> U.tolist(), Ud.tolist()  # means of the selected rows; columns U_x, U_y
        ([85.0, 75.0], [[85.0, 60.0], [70.0, 70.0]])
    """

    return p.surrogate_model.matrix(p, as_matrix(X, p.n))


def utility(p: SelectionProblem, X) -> np.ndarray:
    """U(S): pooled utility of the selection by the problem's surrogate, accuracy %, (M,).

    With the default ``mean`` surrogate the mean of the selected clients' U_i.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import utility
        >>> p = small_problem()
        >>> utility(p, [[1, 1, 0], [1, 0, 1]]).tolist()  # (90 + 80) / 2, (90 + 60) / 2
        [85.0, 75.0]
    """
    return surrogate_values(p, X)[0]


def domain_utility(p: SelectionProblem, X) -> np.ndarray:
    """U_d(S) for every domain by the problem's surrogate, accuracy %, shape (M, D).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import domain_utility
        >>> p = small_problem()
        >>> p.domains, domain_utility(p, [[1, 1, 0], [1, 0, 1]]).tolist()
        (('x', 'y'), [[85.0, 60.0], [70.0, 70.0]])
    """
    return surrogate_values(p, X)[1]


def gap(p: SelectionProblem, X) -> np.ndarray:
    """max_d U_d(S) - min_d U_d(S), percentage points, shape (M,).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import gap
        >>> p = small_problem()
        >>> gap(p, [[1, 1, 0], [1, 0, 1]]).tolist()  # U_d(S): (85, 60) and (70, 70)
        [25.0, 0.0]
    """
    Ud = domain_utility(p, X)
    return Ud.max(axis=1) - Ud.min(axis=1)


def worst(p: SelectionProblem, X) -> np.ndarray:
    """min_d U_d(S), accuracy %, shape (M,).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import worst
        >>> p = small_problem()
        >>> worst(p, [[1, 1, 0], [1, 0, 1]]).tolist()  # U_d(S): (85, 60) and (70, 70)
        [60.0, 70.0]
    """
    return domain_utility(p, X).min(axis=1)


def mean_minus_worst(p: SelectionProblem, X) -> np.ndarray:
    """mean_d U_d(S) - min_d U_d(S), percentage points, shape (M,).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import mean_minus_worst
        >>> p = small_problem()
        >>> mean_minus_worst(p, [[1, 1, 0], [1, 0, 1]]).tolist()  # 72.5 - 60, 70 - 70
        [12.5, 0.0]
    """
    Ud = domain_utility(p, X)
    return Ud.mean(axis=1) - Ud.min(axis=1)


def var_domains(p: SelectionProblem, X) -> np.ndarray:
    """Var_d U_d(S) (population variance over domains), %^2, shape (M,).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import var_domains
        >>> p = small_problem()
        >>> var_domains(p, [[1, 1, 0], [1, 0, 1]]).tolist()  # U_d(S) 72.5 ± 12.5, 70 ± 0
        [156.25, 0.0]
    """
    return domain_utility(p, X).var(axis=1)


def sum_B(p: SelectionProblem, X) -> np.ndarray:
    """Sum of label divergences of the selected clients, nats, shape (M,).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import sum_B
        >>> p = small_problem()
        >>> sum_B(p, [[1, 1, 0], [1, 0, 1]]).round(3).tolist()  # 0.1 + 0.2, 0.1 + 0.3
        [0.3, 0.4]
    """
    return as_matrix(X, p.n) @ p.B


def sum_Fz(p: SelectionProblem, X) -> np.ndarray:
    """Sum of within-round z-scores of log F over the selected clients, shape (M,).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import sum_Fz
        >>> p = small_problem()
        >>> p.F_z.round(3).tolist()  # log F = 0, ln 2, 2 ln 2: evenly spaced
        [-1.225, 0.0, 1.225]
        >>> sum_Fz(p, [[1, 1, 0], [1, 0, 1]]).round(3).tolist()
        [-1.225, 0.0]
    """
    return as_matrix(X, p.n) @ p.F_z


def sum_cos(p: SelectionProblem, X) -> np.ndarray:
    """Sum of update-alignment cosines of the selected clients, shape (M,).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import sum_cos
        >>> p = small_problem()
        >>> sum_cos(p, [[1, 1, 0], [1, 0, 1]]).round(3).tolist()  # 0.5 + 0.3, 0.5 - 0.1
        [0.8, 0.4]
    """
    return as_matrix(X, p.n) @ p.cos_g


def u_star(p: SelectionProblem) -> float:
    """U* = max over |S| = K of U(S) under the ``mean`` surrogate: the mean of the K largest
    utilities.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import u_star
        >>> p = small_problem()
        >>> u_star(p)  # the two largest U: (90 + 80) / 2
        85.0
    """
    return float(np.sort(p.U)[::-1][: p.k].mean())


@dataclass(frozen=True)
class Objective:
    """One objective of a selection.

    Attributes:
        name: the key used everywhere (CLI ``--objectives``, table columns).
        fn: ``fn(problem, X) -> values`` of shape (M,) for selections X (M, N).
        sense: ``max`` or ``min``.
        unit: unit of its values (``%``, ``pp``, ...).
        label: short label (``fedsel methods``, column headers).
        axis: a plot axis title: the definition, its unit and which way is better.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import OBJECTIVES
        >>> p = small_problem()
        >>> o = OBJECTIVES["gap"]  # the registered gap objective
        >>> o.sense, o.maximize, o.unit, o(p, [[1, 1, 0], [1, 0, 1]]).tolist()
        ('min', False, 'pp', [25.0, 0.0])
    """

    name: str
    fn: Callable[[SelectionProblem, np.ndarray], np.ndarray]
    sense: str
    unit: str
    label: str
    axis: str = ""

    @property
    def maximize(self) -> bool:
        return self.sense == "max"

    def __call__(self, p: SelectionProblem, X) -> np.ndarray:
        return self.fn(p, X)


OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective(
            "utility",
            utility,
            "max",
            "%",
            "U(S), mean utility (%)",
            "U(S) (accuracy %, higher is better)",
        ),
        Objective(
            "gap",
            gap,
            "min",
            "pp",
            "gap(S), max − min domain utility (pp)",
            "gap(S) = max_d U_d − min_d U_d (percentage points, lower is fairer)",
        ),
        Objective(
            "worst",
            worst,
            "max",
            "%",
            "worst(S), worst-domain utility (%)",
            "worst(S) = min_d U_d (accuracy %, higher is better)",
        ),
        Objective(
            "mean_minus_worst",
            mean_minus_worst,
            "min",
            "pp",
            "mean − worst domain (pp)",
            "mean_d U_d − min_d U_d (percentage points, lower is better)",
        ),
        Objective(
            "var_d",
            var_domains,
            "min",
            "%²",
            "Var_d U_d(S) (%²)",
            "Var_d U_d(S) (%², lower is better)",
        ),
        Objective("sum_B", sum_B, "min", "nats", "Σ B, label divergence (nats)", "Σ B (nats)"),
        Objective(
            "sum_Fz", sum_Fz, "max", "z", "Σ F_z, Fisher z-scores", "Σ F_z (Fisher z-scores)"
        ),
        Objective("sum_cos", sum_cos, "max", "", "Σ cos_g, update alignment", "Σ cos_g"),
    )
}


def check_objectives(names: Sequence[str], *, at_least: int = 1) -> tuple[str, ...]:
    """``names`` as a tuple of distinct known objectives (SelectionError naming the bad one).

    Examples:
        >>> from selection.objectives import check_objectives
        >>> check_objectives(["utility", "gap"], at_least=2)
        ('utility', 'gap')
        >>> check_objectives(["utility", "fairness"])
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: unknown objective 'fairness'; choose from utility, ...
    """
    names = tuple(names)
    for name in names:
        if name not in OBJECTIVES:
            raise SelectionError(f"unknown objective {name!r}; choose from {', '.join(OBJECTIVES)}")
    if len(names) < at_least or len(set(names)) != len(names):
        raise SelectionError(
            f"objectives {', '.join(names) or '(none)'}: need {at_least} or more distinct of "
            f"{', '.join(OBJECTIVES)}"
        )
    return names


def maximise_mask(names: Sequence[str]) -> np.ndarray:
    """Boolean vector, True where the objective is maximized (SelectionError if unknown).

    Examples:
        >>> from selection.objectives import maximise_mask
        >>> maximise_mask(["utility", "gap", "worst", "sum_B"]).tolist()
        [True, False, True, False]
    """
    return np.array([OBJECTIVES[n].maximize for n in check_objectives(names)], dtype=bool)


def evaluate(p: SelectionProblem, idx) -> dict[str, float]:
    """Every objective of one selection given by client indices (predicted by the problem's
    surrogate, evaluated once).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import evaluate
        >>> p = small_problem()
        >>> values = evaluate(p, [0, 2])  # clients a and c: U_x 70, U_y 70
        >>> values["utility"], values["gap"], values["worst"], round(values["sum_B"], 3)
        (75.0, 0.0, 70.0, 0.4)
        >>> values["U_x"], values["U_y"]
        (70.0, 70.0)
    """
    x = np.zeros(p.n)
    x[np.asarray(list(idx), dtype=int)] = 1.0
    U, Ud = surrogate_values(p, x)
    return realized_objectives(p, idx, float(U[0]), Ud[0])


def realized_objectives(p: SelectionProblem, idx, U: float, Ud: np.ndarray) -> dict[str, float]:
    """Every objective of one selection with U(S), U_d(S) given (e.g. measured by the oracle
    on the true aggregate) instead of predicted; the per-client sums stay as they are.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.objectives import realized_objectives
        >>> p = small_problem()
        >>> values = realized_objectives(p, [0, 2], 72.5, [78.0, 61.0])  # measured U, U_d
        >>> values["utility"], values["gap"], values["worst"], round(values["sum_B"], 3)
        (72.5, 17.0, 61.0, 0.4)
    """
    Ud = np.asarray(Ud, dtype=float)
    x = np.zeros(p.n)
    x[np.asarray(list(idx), dtype=int)] = 1.0
    out = {
        "utility": float(U),
        "gap": float(Ud.max() - Ud.min()),
        "worst": float(Ud.min()),
        "mean_minus_worst": float(Ud.mean() - Ud.min()),
        "var_d": float(Ud.var()),
        "sum_B": float(sum_B(p, x)[0]),
        "sum_Fz": float(sum_Fz(p, x)[0]),
        "sum_cos": float(sum_cos(p, x)[0]),
    }
    for d, v in zip(p.domains, Ud, strict=True):
        out[f"U_{d}"] = float(v)
    return out
