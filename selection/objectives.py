"""Objectives of a selection, exactly as DESIGN.md defines them.

All functions take a 0/1 selection matrix ``X`` of shape (M, N) (or one vector of shape
(N,)) with exactly K ones per row and return one value per row. Because K is fixed, every
mean is linear in ``x``: U(S) = (1/K) * sum_i x_i U_i.
"""

from __future__ import annotations

import numpy as np

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
    "OBJECTIVES",
]


def as_matrix(X: np.ndarray, n: int) -> np.ndarray:
    """Selections as a float matrix (M, N); a vector of indices or 0/1 becomes one row."""
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[None, :]
    if X.shape[1] != n:
        raise ValueError(f"selection matrix has {X.shape[1]} columns, the problem has {n} clients")
    return X.astype(float)


def utility(p: SelectionProblem, X) -> np.ndarray:
    """U(S): mean pooled utility of the selected clients, accuracy %, shape (M,)."""
    X = as_matrix(X, p.n)
    return X @ p.U / X.sum(axis=1)


def domain_utility(p: SelectionProblem, X) -> np.ndarray:
    """U_d(S) for every domain, accuracy %, shape (M, D)."""
    X = as_matrix(X, p.n)
    return (X @ p.Ud) / X.sum(axis=1, keepdims=True)


def gap(p: SelectionProblem, X) -> np.ndarray:
    """max_d U_d(S) - min_d U_d(S), percentage points, shape (M,)."""
    Ud = domain_utility(p, X)
    return Ud.max(axis=1) - Ud.min(axis=1)


def worst(p: SelectionProblem, X) -> np.ndarray:
    """min_d U_d(S), accuracy %, shape (M,)."""
    return domain_utility(p, X).min(axis=1)


def mean_minus_worst(p: SelectionProblem, X) -> np.ndarray:
    """mean_d U_d(S) - min_d U_d(S), percentage points, shape (M,)."""
    Ud = domain_utility(p, X)
    return Ud.mean(axis=1) - Ud.min(axis=1)


def var_domains(p: SelectionProblem, X) -> np.ndarray:
    """Var_d U_d(S) (population variance over domains), %^2, shape (M,)."""
    return domain_utility(p, X).var(axis=1)


def sum_B(p: SelectionProblem, X) -> np.ndarray:
    """Sum of label divergences of the selected clients, nats, shape (M,)."""
    return as_matrix(X, p.n) @ p.B


def sum_Fz(p: SelectionProblem, X) -> np.ndarray:
    """Sum of within-round z-scores of log F over the selected clients, shape (M,)."""
    return as_matrix(X, p.n) @ p.F_z


def sum_cos(p: SelectionProblem, X) -> np.ndarray:
    """Sum of update-alignment cosines of the selected clients, shape (M,)."""
    return as_matrix(X, p.n) @ p.cos_g


def u_star(p: SelectionProblem) -> float:
    """U* = max over |S| = K of U(S): the mean of the K largest utilities."""
    return float(np.sort(p.U)[::-1][: p.k].mean())


OBJECTIVES = {
    "utility": utility,
    "gap": gap,
    "worst": worst,
    "mean_minus_worst": mean_minus_worst,
    "var_d": var_domains,
    "sum_B": sum_B,
    "sum_Fz": sum_Fz,
    "sum_cos": sum_cos,
}


def evaluate(p: SelectionProblem, idx) -> dict[str, float]:
    """Every objective of one selection given by client indices."""
    x = np.zeros(p.n)
    x[np.asarray(list(idx), dtype=int)] = 1.0
    out = {name: float(fn(p, x)[0]) for name, fn in OBJECTIVES.items()}
    for d, v in zip(p.domains, domain_utility(p, x)[0], strict=True):
        out[f"U_{d}"] = float(v)
    return out
