"""The weighted surrogate with large client counts (issue 53): every exact route either solves
the round to enumeration's answer or refuses it in one line. CP-SAT reported an int64 overflow
as "no selection: Unable to cast Python instance ..." (exit 1), and HiGHS lost the feasible
point of a Dinkelbach step at ~1e5 samples a client (a traceback)."""

from __future__ import annotations

import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.schema import validate_stats
from selection.solvers.milp.fractional import WEIGHT_MAX, weighted_data
from selection.solvers.registry import make_solver
from selection.synthetic import synthetic_stats

from helpers.cli import run_fedsel

METHODS = [("eps", {"eps": 25.0}), ("maxmin", {"delta": 2.0}), ("fisher-fair", {"delta": 2.0})]


def _table(n: int) -> pd.DataFrame:
    t = synthetic_stats(12, seed=4)
    t["n_samples"] = n
    t.loc[0, "n_samples"] = 3  # counts far apart: the ratios' weights matter
    t.loc[1, "n_samples"] = 7 * n // 3
    t.loc[5, "n_samples"] = n // 7 + 1
    return validate_stats(t)


@pytest.mark.parametrize("n", [10**3, 10**5, 10**6, 10**9, 10**12, 10**15])
@pytest.mark.parametrize(("method", "kw"), METHODS)
@pytest.mark.parametrize("route", ["highs", "cbc", "cpsat"])
def test_large_counts_are_solved_exactly_or_refused_in_one_line(n, method, kw, route):
    p = SelectionProblem.from_stats(_table(n), 3, surrogate="weighted")
    ref = make_solver(method, backend="enum", **kw).solve(p)
    try:
        got = make_solver(method, backend=route, enum_limit=0, **kw).solve(p)
    except SelectionError as exc:  # only CP-SAT's 64-bit integers have a limit
        assert route == "cpsat" and n >= 10**6, exc
        assert str(exc).startswith("cpsat: ") and "use --backend highs, cbc or scip" in str(exc)
        assert "\n" not in str(exc)
        return
    assert got.status == "optimal", got.message
    for key in ("utility", "worst", "gap"):
        assert got.objectives[key] == pytest.approx(ref.objectives[key], abs=1e-6), key


def test_the_float_routes_solve_on_counts_scaled_by_a_power_of_two():
    """A ratio is the same for n and c·n: the rows carry the counts as they are up to
    WEIGHT_MAX, larger ones scaled exactly (a power of two) into that range."""
    small = SelectionProblem.from_stats(_table(600), 3, surrogate="weighted")
    assert weighted_data(small, "highs", 1000)["n"].max() == 7 * 600 // 3  # as they are
    big = SelectionProblem.from_stats(_table(10**12), 3, surrogate="weighted")
    n = weighted_data(big, "highs", 1000)["n"]
    assert WEIGHT_MAX / 2 < n.max() <= WEIGHT_MAX
    ratio = _table(10**12)["n_samples"].to_numpy(float) / n
    assert (ratio == ratio[0]).all() and float(ratio[0]).is_integer()  # one power of two
    assert weighted_data(big, "cpsat", 1000)["n"].max() == 7 * 10**12 // 3  # CP-SAT's kept


def test_fedsel_solve_on_cpsat_refuses_in_one_line_instead_of_no_selection(tmp_path, capsys):
    path = tmp_path / "huge.csv"
    _table(10**12).to_csv(path, index=False)
    for method, arg in (("eps", ["--eps", "25"]), ("maxmin", ["--delta", "2"]),
                        ("fisher-fair", ["--delta", "2"])):  # fmt: skip
        argv = ["solve", "--stats", path, "--k", 3, "--method", method, *arg,
                "--backend", "cpsat", "--surrogate", "weighted"]  # fmt: skip
        code, out, err = run_fedsel(argv, capsys)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert code == 2 and len(lines) == 1, err
        assert lines[0].startswith("fedsel: error: cpsat: ") and "no selection" not in err
        assert "Unable to cast" not in err and out == ""
