"""Verified picks: the true aggregate of a formulation's best candidates decides the commit.

A surrogate predicts U(S), U_d(S); the oracle can *measure* them for a few selections
(``evaluate_aggregate(ids) -> (U, U_d)``: validation accuracy of w_t + Σ p_i Δ_i, one forward
pass each). :func:`verified_solve` takes the formulation's ``m`` best candidates by its own
criterion on the surrogate, measures each, and commits the best one by the same criterion on
the measured values (thresholds that the formulation takes relative to the round, U* and
worst*, taken relative to the candidates). When no candidate meets an absolute threshold
(an ε the realized gaps all exceed), the smallest realized gap is committed, ties to higher U.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from selection.objectives import evaluate, realized_objectives
from selection.problem import SelectionProblem
from selection.solvers.params import Route
from selection.solvers.result import SolveResult, Status

__all__ = ["DEFAULT_VERIFY", "Evaluator", "verified_solve"]

DEFAULT_VERIFY = 8
Evaluator = Callable[[Sequence[str]], tuple[float, np.ndarray]]
_R = 9


def _best(table: dict[str, np.ndarray], mask: np.ndarray, keys) -> int:
    cand = np.flatnonzero(mask)
    for name, sign in keys:
        v = np.round(table[name][cand], _R) * sign
        cand = cand[v == v.max()]
    return int(cand[0])


def verified_solve(
    solver, problem: SelectionProblem, m: int, evaluate_aggregate: Evaluator
) -> SolveResult:
    """Measure the ``m`` best candidates of ``solver`` on ``problem``; commit the best realized.

    Args:
        solver: an exact formulation with ``candidates`` and ``realized_rule``
            (``eps``, ``eps-rel``, ``maxmin``, ``fisher-fair``).
        problem: the round's problem (its surrogate ranks the candidates).
        m: how many candidates to measure, >= 1.
        evaluate_aggregate: ``ids -> (U, U_d (D,))``, realized accuracy in %.

    Returns:
        A result whose ``objectives`` are the predicted ones of the committed selection plus
        ``realized_utility``, ``realized_gap``, ``realized_worst``; ``message`` says which
        candidate was committed.
    """
    t0 = time.perf_counter()
    cands = solver.candidates(problem, int(m))
    param = solver._param() if hasattr(solver, "_param") else ""
    if not cands:
        return SolveResult(
            solver.name,
            Status.INFEASIBLE,
            seconds=time.perf_counter() - t0,
            param=param,
            backend=Route.ENUM,
            message="no selection satisfies the constraints",
        )
    real = []
    for sel in cands:
        U, Ud = evaluate_aggregate(problem.ids_of(sel))
        real.append(realized_objectives(problem, sel, U, np.asarray(Ud, dtype=float)))
    table = {name: np.array([r[name] for r in real]) for name in real[0]}
    mask_fn, keys = solver.realized_rule(problem, table)
    mask = np.asarray(mask_fn(table), dtype=bool)
    if mask.any():
        j = _best(table, mask, keys)
    else:
        j = _best(table, np.ones(len(cands), dtype=bool), [("gap", -1.0), ("utility", 1.0)])
    sel = cands[j]
    objectives = evaluate(problem, sel)
    objectives.update({f"realized_{k}": real[j][k] for k in ("utility", "gap", "worst")})
    met = "" if mask.any() else "; no candidate met the constraint, the smallest realized gap"
    return SolveResult(
        method=solver.name,
        status=Status.FEASIBLE,
        selected=tuple(sel),
        ids=tuple(problem.ids_of(sel)),
        objectives=objectives,
        seconds=time.perf_counter() - t0,
        param=param,
        backend="enum+verify",
        message=(
            f"verified: committed candidate {j + 1} of {len(cands)} by realized value "
            f"(U {real[j]['utility']:.2f}%, worst {real[j]['worst']:.2f}%){met}"
        ),
    )
