"""Adding a formulation = one module: a registered toy solver is found by ``fedsel sweep``,
``fedsel compare``, ``fedsel methods`` and ``make_selector`` with no other file touched."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

from selection.compare import compare_methods, methods
from selection.problem import SelectionProblem
from selection.selectors import make_selector, parse_spec, split_specs
from selection.solvers.base import Solver
from selection.solvers.params import check_nonneg, fmt_param
from selection.solvers.registry import SOLVERS, register, solvers
from selection.solvers.result import RawResult, Status
from selection.synthetic import synthetic_stats

from helpers.cli import run_fedsel


# --8<-- [start:toy-formulation]
class ToySolver(Solver):
    """Top-K by U_i − delta · B_i (a toy formulation with a δ grid)."""

    name: ClassVar[str] = "toy"
    summary: ClassVar[str] = "top-K by U − δ·B"
    param: ClassVar[str] = "delta"
    default_grid: ClassVar[tuple] = (0.0, 50.0)
    spec_form: ClassVar[str] = "toy:D"

    def __init__(self, *, delta: float = 0.0) -> None:
        self.delta = check_nonneg("delta", delta, allow_none=False)

    def _solve(self, problem: SelectionProblem) -> RawResult:
        score = problem.U - self.delta * problem.B
        idx = np.argsort(-score, kind="stable")[: problem.k]
        return RawResult(
            tuple(int(i) for i in idx), Status.OPTIMAL, param=fmt_param("delta", self.delta)
        )


# --8<-- [end:toy-formulation]


@pytest.fixture
def toy():
    register(ToySolver)
    yield ToySolver
    SOLVERS.pop("toy")


@pytest.fixture(scope="module")
def stats_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("reg") / "stats.csv"
    synthetic_stats(12, seed=3).to_csv(path, index=False)
    return str(path)


def test_toy_is_in_the_registry_lists(toy):
    assert "toy" in solvers() and list(solvers())[-1] == "toy"  # order 100: after the built-ins
    assert methods()[-1] == "toy" and {"weighted", "eps", "maxmin", "nsga2", "exhaustive"} < set(
        methods()
    )


def test_toy_sweep_through_the_cli(toy, stats_file, tmp_path, capsys):
    code, _, err = run_fedsel(
        [
            "sweep",
            "--stats",
            stats_file,
            "--k",
            3,
            "--method",
            "toy",
            "--delta",
            "0,1",
            "--out",
            tmp_path,
        ],
        capsys,
    )
    assert code == 0, err
    front = pd.read_csv(tmp_path / "front.csv")
    assert front["param"].tolist() == ["delta=0", "delta=1"]
    problem = SelectionProblem.from_stats(stats_file, 3)
    top = sorted(problem.ids[np.argsort(-problem.U, kind="stable")[:3]])
    assert sorted(front["selected"].iloc[0].split(";")) == top  # δ = 0: the U* selection
    # options that do not apply to the toy are refused from its declaration, not a list
    code, _, err = run_fedsel(
        [
            "sweep",
            "--stats",
            stats_file,
            "--k",
            3,
            "--method",
            "toy",
            "--eps",
            "1",
            "--out",
            tmp_path,
        ],
        capsys,
    )
    assert code == 2 and "--eps does not apply to method 'toy'" in err


def test_toy_in_compare_and_methods(toy, stats_file, capsys):
    c = compare_methods(SelectionProblem.from_stats(stats_file, 3))
    assert c.table["method"].tolist()[-1] == "toy"
    row = c.table.set_index("method").loc["toy"]
    assert row["points"] >= 1 and 0.0 < row["hv_ratio"] <= 1.0 + 1e-9
    assert (c.fronts["method"] == "toy").sum() == len(ToySolver.default_grid)
    code, out, _ = run_fedsel(["methods"], capsys)
    assert code == 0 and "toy:D" in out and "top-K by U − δ·B" in out


def test_toy_as_a_selector(toy, stats_file):
    table = pd.read_csv(stats_file)
    problem = SelectionProblem.from_stats(table, 3)
    pick = make_selector("toy:0", seed=1)
    assert sorted(pick(table, 3)) == sorted(problem.ids[np.argsort(-problem.U, kind="stable")[:3]])
    assert pick.last.param == "delta=0"
    assert split_specs("weighted:1,0,0,toy:2,random") == ["weighted:1,0,0", "toy:2", "random"]


def test_unregistered_toy_is_unknown(stats_file, tmp_path, capsys):
    assert "toy" not in solvers()
    code, _, err = run_fedsel(
        ["sweep", "--stats", stats_file, "--k", 3, "--method", "toy", "--out", tmp_path], capsys
    )
    assert code == 2 and "unknown method 'toy'" in err


# ---------------------------------------------------------------- a toy baseline: one module
@pytest.fixture
def toy_baseline():
    from selection.baselines.base import _REGISTRY, Baseline
    from selection.baselines.base import register as register_baseline

    # --8<-- [start:toy-baseline]
    @register_baseline
    class LowestDivergence(Baseline):
        """The K clients whose labels diverge least from the federation's (smallest B)."""

        name = "lowest-b"
        summary = "the K smallest label divergences B"
        arg = "m"  # a tie-break margin, to exercise an argument
        arg_example = "0"
        study_entry = "lowest-b:0"
        order = 95

        def pick(self, problem, rng):
            return np.argsort(problem.B + self.value * problem.U, kind="stable")[: problem.k]

    # --8<-- [end:toy-baseline]

    yield LowestDivergence
    _REGISTRY.pop("lowest-b")


def test_a_toy_baseline_is_a_selector_a_study_baseline_and_listed(toy_baseline, stats_file, capsys):
    from fl_oracle.experiments.study.settings import is_baseline

    table = pd.read_csv(stats_file)
    problem = SelectionProblem.from_stats(table, 3)
    pick = make_selector("lowest-b:0", seed=1)
    assert sorted(pick(table, 3)) == sorted(problem.ids[np.argsort(problem.B, kind="stable")[:3]])
    with pytest.raises(ValueError, match="lowest-b needs a value, e.g. lowest-b:0"):
        make_selector("lowest-b")
    assert is_baseline(parse_spec("lowest-b:0@stale")) and not is_baseline(parse_spec("all"))
    code, out, _ = run_fedsel(["methods"], capsys)
    assert code == 0 and "lowest-b:m" in out and "the K smallest label divergences B" in out
    from selection.selectors import selector_help

    assert "fedsel methods" in selector_help()  # which lists it, above
