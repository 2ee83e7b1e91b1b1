"""fedsel sweep's parts, called as functions (plan_sweep, sweep_fronts, sweep_report)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from selection.cli.sweep import plan_sweep, sweep_fronts, sweep_report
from selection.errors import SelectionError
from selection.example import example_stats
from selection.problem import SelectionProblem


@pytest.fixture(scope="module")
def problem():
    return SelectionProblem.from_stats(example_stats(), k=5)


def test_an_infeasible_eps_is_told_the_reachable_range(problem):
    plan = plan_sweep("eps", eps="5,30")
    fronts = sweep_fronts(plan, [problem])
    lines = sweep_report(plan, [problem], fronts, fronts[0], out=Path("o"), per_round=False)
    assert lines[0].startswith("eps: 2 points (1 feasible) -> o/front.csv")
    assert "1 of 2 ε infeasible: reachable gaps run from" in lines[-1]


def test_a_formulation_that_says_nothing_of_its_reach_gets_no_hint(problem):
    """eps-lt's ε is no bound a round's selections can be told a range for: an infeasible
    point gets no hint (the base reachable says nothing), not a wrong one."""
    plan = plan_sweep("eps-lt", eps="0,5")
    row = {"param": "eps=0", "status": "infeasible", "selected": ""}
    front = pd.DataFrame([row, {**row, "param": "eps=5", "status": "optimal", "selected": "a"}])
    lines = sweep_report(plan, [problem], [front], front, out=Path("o"), per_round=False)
    assert not any("infeasible" in line for line in lines), lines


def test_complete_applies_where_eps_does():
    assert plan_sweep("eps-lt", complete=True).eps is None  # accepted, as before
    with pytest.raises(SelectionError, match="--complete does not apply to method 'maxmin'"):
        plan_sweep("maxmin", complete=True)


def test_a_plugins_spec_argument_keeps_its_text_where_it_is_no_number():
    """param_type None (a plugin formulation's default): a number where the text is one,
    else the text, as the spec argument of a parameter other than eps/delta was before."""
    from selection.solvers.base import Solver
    from selection.solvers.eps import EpsSolver

    class Columns(Solver):
        name, param = "columns-toy", "columns"

    assert Columns.spec_kwargs("U,F") == {"columns": "U,F"}
    assert Columns.spec_kwargs("2") == {"columns": 2.0}
    with pytest.raises(ValueError, match="'x' is not a number"):
        EpsSolver.spec_kwargs("x")
