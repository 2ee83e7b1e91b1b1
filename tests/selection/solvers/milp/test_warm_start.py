"""The ε solve from a starting selection (``EpsSolver.start``): the same answer as cold.

The start is the previous round's selection (benchmarks/eps_warm_start.py measures what it
saves); these check that it never changes the answer: on a sequence of perturbed rounds, each
warm-started from the last round's choice, every backend returns the cold solve's selection,
and its (U, gap) equals enumeration's.
"""

from __future__ import annotations

import numpy as np
import pytest

from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.eps import EpsSolver
from selection.solvers.exhaustive import best_eps
from selection.solvers.milp.formulations import count_groups, eps_spec
from selection.synthetic import FAMILIES

BACKENDS = ("highs", "cbc", "scip", "cpsat")


def _rounds(family: str, n: int, k: int, count: int, seed: int) -> list[SelectionProblem]:
    """``count`` consecutive rounds: one table, its utilities perturbed a little each round
    (on the family's own value grid where it has one, so ties stay possible)."""
    rng = np.random.default_rng(seed)
    table = FAMILIES[family](n, seed=seed).copy()
    cols = [c for c in table.columns if c.startswith("U_") or c == "U"]
    grid = family == "near-tied"
    out = []
    for _ in range(count):
        out.append(SelectionProblem.from_stats(table.copy(), k))
        step = rng.normal(0.0, 0.4, size=(len(table), len(cols)))
        table[cols] = table[cols].to_numpy() + (np.round(step, 2) if grid else step)
    return out


def _objectives(problem: SelectionProblem, selected) -> tuple[float, float]:
    o = evaluate(problem, list(selected))
    return float(o["utility"]), float(o["gap"])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("family", ["synthetic", "near-tied", "cross-penalty"])
def test_warm_rounds_answer_as_cold_and_enumeration(backend, family):
    eps = 6.0
    previous = None
    for t, problem in enumerate(_rounds(family, 14, 4, 6, seed=len(family))):
        cold = EpsSolver(eps=eps, backend=backend).solve(problem)
        warm = EpsSolver(eps=eps, backend=backend)
        warm.start = previous
        answer = warm.solve(problem)
        assert answer.status == cold.status, (t, answer.message)
        assert answer.selected == cold.selected, t
        exact = best_eps(problem, eps)
        if exact and backend != "cpsat":  # CP-SAT solves rounded data; the others the true
            assert _objectives(problem, answer.selected) == pytest.approx(
                _objectives(problem, exact), abs=1e-7
            )
        previous = cold.ids or previous


@pytest.mark.parametrize("backend", BACKENDS)
def test_any_start_keeps_the_answer(backend):
    """Starts that are feasible, infeasible for the ε row, or not a K-selection."""
    problem = _rounds("synthetic", 12, 3, 1, seed=3)[0]
    cold = EpsSolver(eps=5.0, backend=backend).solve(problem)
    rng = np.random.default_rng(0)
    starts = [tuple(problem.ids[i] for i in rng.choice(problem.n, 3, replace=False))
              for _ in range(6)]  # fmt: skip
    starts += [cold.ids, cold.ids[:2], ("no-such-client", *cold.ids[1:])]
    for start in starts:
        solver = EpsSolver(eps=5.0, backend=backend)
        solver.start = start
        assert solver.solve(problem).selected == cold.selected, start


def test_start_columns_complete_and_check_the_selection():
    problem = _rounds("cross-penalty", 16, 4, 1, seed=1)[0]
    data = {"U": problem.U, "Ud": problem.Ud, "F_z": problem.F_z, "B": problem.B}
    spec = eps_spec(data, 4, None, None, pairwise=True, groups=count_groups(problem))
    lo, up = spec.row_lo.copy(), spec.row_up.copy()
    x_lo, x_up = spec.col_lo[: spec.n_x], spec.col_up[: spec.n_x]
    sel = (0, 3, 5, 9)
    v = spec.start_columns(sel, lo, up, x_lo, x_up)
    sums = problem.Ud[list(sel)].sum(axis=0)
    assert v[: spec.n_x].nonzero()[0].tolist() == list(sel)
    assert v[spec.n_x : spec.n_x + 2].tolist() == pytest.approx([sums.max(), sums.min()])
    assert (spec.A @ v)[[spec.row_index[f"cnt{j}"] for j in range(spec.n_counts)]] == (
        pytest.approx(0.0)
    )
    gap = sums.max() - sums.min()
    up[spec.row_index["gap"]] = gap - 1e-3  # the ε row cuts it off
    assert spec.start_columns(sel, lo, up, x_lo, x_up) is None
    up[spec.row_index["gap"]] = gap
    assert spec.start_columns(sel, lo, up, x_lo, x_up) is not None
    fixed = x_up.copy()
    fixed[3] = 0.0  # a binary fixed at 0 that the selection sets
    assert spec.start_columns(sel, lo, up, x_lo, fixed) is None
    assert spec.start_columns((0, 0, 3, 5), lo, up, x_lo, x_up) is None
    assert spec.start_columns((0, 3, 5, 99), lo, up, x_lo, x_up) is None
