"""Time limits without an incumbent, one-client rounds and all-tied rounds (issue 9, class 6 and
the NSGA-II traceback / slowness)."""

from __future__ import annotations

import contextlib
import io
import time

import numpy as np
import pandas as pd
import pytest

from fl_oracle.cli import main
from selection.compare import compare_methods
from selection.problem import SelectionProblem
from selection.solvers.eps import EpsSolver
from selection.solvers.milp.exact import ExactSolver
from selection.solvers.milp.model import LexBackend, LexOutcome
from selection.solvers.nsga2 import NSGA2Solver
from selection.solvers.result import Status, point_rows
from selection.synthetic import synthetic_stats


def run(argv) -> tuple[int, str, str]:
    """``fedsel argv`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def _no_incumbent(self, time_limit=None, start=None):
    return LexOutcome((), Status.TIME_LIMIT, "time limit in stage 1; no incumbent")


def test_point_rows_drop_empty_and_unsolved_rows():
    front = pd.DataFrame(
        {
            "status": ["optimal", "time_limit", "time_limit", "infeasible", "feasible", "error"],
            "selected": ["a;b", "", "a;c", "", "b;c", ""],
        }
    )
    assert point_rows(front).tolist() == [True, False, True, False, True, False]


def test_model_build_counts_against_the_time_limit(monkeypatch, make_problem):
    p = make_problem(30, 5, seed=1)
    build = ExactSolver.model

    def slow_model(self, problem):
        time.sleep(0.3)
        return build(self, problem)

    monkeypatch.setattr(ExactSolver, "model", slow_model)
    t0 = time.perf_counter()
    r = EpsSolver(eps=5.0, backend="highs", time_limit=0.1).solve(p)
    assert time.perf_counter() - t0 < 2.0
    assert r.status == Status.TIME_LIMIT and r.selected == () and not r.ok
    assert "building the model" in r.message


def test_compare_keeps_other_methods_when_a_milp_times_out(monkeypatch, make_problem):
    monkeypatch.setattr(LexBackend, "solve", _no_incumbent)
    p = make_problem(12, 3, seed=2)
    c = compare_methods(p, eps=[0.0, 5.0, 50.0], backend="highs", time_limit=1.0)
    by = c.table.set_index("method")
    assert by.loc["eps", "points"] == 0 and by.loc["maxmin", "points"] == 0
    assert by.loc["exhaustive", "points"] > 0 and by.loc["nsga2", "points"] > 0
    assert np.isfinite(c.reference.to_numpy()).all()
    eps_rows = c.fronts[c.fronts["method"] == "eps"]
    assert (eps_rows["status"] == "time_limit").all() and (eps_rows["selected"] == "").all()


def test_cli_time_limit_without_incumbent(monkeypatch, tmp_path):
    monkeypatch.setattr(LexBackend, "solve", _no_incumbent)
    stats = tmp_path / "s.csv"
    synthetic_stats(12, seed=4).to_csv(stats, index=False)
    common = ["--stats", stats, "--k", 3, "--backend", "highs", "--time-limit", 1]
    code, out, err = run(["solve", *common, "--method", "eps", "--eps", 5])
    assert code == 1 and '"selected": []' in out and '"status": "time_limit"' in out
    assert "fedsel: no selection: time limit in stage 1" in err
    code, _, err = run(["sweep", *common, "--method", "eps", "--eps", "1,5", "--out", tmp_path])
    assert code == 1 and "2 points (0 feasible)" in err  # no selection: as solve
    code, _, err = run(["compare", *common, "--eps", "1,5", "--out", tmp_path / "c"])
    assert code == 0, err
    table = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("method")
    assert table.loc["eps", "points"] == 0 and table.loc["weighted", "points"] > 0


def _one_client() -> pd.DataFrame:
    return synthetic_stats(1, seed=5, domains=("mnist",)).drop(columns="loss")


def test_nsga2_on_one_client():
    p = SelectionProblem.from_stats(_one_client(), 1)
    r = NSGA2Solver(seed=0).solve(p)
    assert r.ok and r.ids == ("mnist-0",)
    front = NSGA2Solver(seed=0).front(p)
    assert [f.ids for f in front] == [("mnist-0",)]


@pytest.mark.parametrize("command", ["solve", "compare"])
def test_cli_on_one_client(command, tmp_path):
    stats = tmp_path / "one.csv"
    _one_client().to_csv(stats, index=False)
    extra = ["--method", "nsga2"] if command == "solve" else ["--out", tmp_path / "o"]
    code, out, err = run([command, "--stats", stats, "--k", 1, *extra])
    assert code == 0, err
    assert "Traceback" not in err
    if command == "solve":
        assert '"mnist-0"' in out


def test_nsga2_all_tied_is_fast_and_gives_one_point():
    df = synthetic_stats(40, seed=6).drop(columns="loss")
    for col in ("U", "U_mnist", "U_usps", "U_svhn", "U_syn"):
        df[col] = 50.0
    p = SelectionProblem.from_stats(df, 10)
    t0 = time.perf_counter()
    front = NSGA2Solver(seed=0).front(p)
    assert time.perf_counter() - t0 < 10.0  # 35-50 s before one point per objective vector
    assert len(front) == 1
    assert front[0].objectives["utility"] == pytest.approx(50.0)
    assert front[0].objectives["gap"] == pytest.approx(0.0)
