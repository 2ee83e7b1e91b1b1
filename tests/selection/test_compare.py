"""compare_methods: every formulation measured against the exact front (or the union)."""

from __future__ import annotations

import numpy as np
import pytest

from selection.compare import COMPARE_COLUMNS, compare_methods, default_weight_grid, methods
from selection.problem import SelectionProblem
from selection.solvers.exhaustive import exact_front
from selection.synthetic import synthetic_stats

METHODS = methods()


@pytest.fixture(scope="module")
def problem() -> SelectionProblem:
    return SelectionProblem.from_stats(synthetic_stats(20, seed=15, rounds=3), 5)


@pytest.fixture(scope="module")
def comparison(problem):
    return compare_methods(problem, seed=0)


def test_one_row_per_method_with_values_in_range(comparison):
    t = comparison.table
    assert list(t.columns) == list(COMPARE_COLUMNS)
    assert t["method"].tolist() == list(METHODS)
    assert (t["points"] >= 1).all() and (t["on_front"] <= t["points"]).all()
    assert (t["front_points"] <= t["points"]).all()
    assert ((t["hv_ratio"] > 0) & (t["hv_ratio"] <= 1 + 1e-9)).all()
    assert (t["igd"] >= 0).all() and (t["seconds"] > 0).all()
    assert (t["reference"] == "exact").all() and comparison.exact and comparison.notes == ()


def test_exact_routes_reach_the_whole_exact_front(problem, comparison):
    exact = exact_front(problem)
    t = comparison.table.set_index("method")
    assert len(comparison.reference) == len(exact)
    for m in ("eps", "exhaustive"):
        assert t.loc[m, "on_front"] == len(exact)
        assert t.loc[m, "hv_ratio"] == pytest.approx(1.0)
        assert t.loc[m, "igd"] == pytest.approx(0.0, abs=1e-12)
    assert t.loc["nsga2", "hv_ratio"] >= 0.98


def test_weighted_sum_misses_unsupported_points(comparison):
    # on this round the (U, R) weight grid finds only a few of the 26 front points
    t = comparison.table.set_index("method")
    assert t.loc["weighted", "on_front"] < t.loc["exhaustive", "on_front"]
    assert t.loc["weighted", "hv_ratio"] < 1.0


def test_fronts_hold_every_methods_rows(comparison):
    f = comparison.fronts
    assert set(f["method"]) == set(METHODS)
    ok = f[f["status"].isin(["optimal", "feasible"])]
    assert (ok["selected"].str.split(";").map(len) == 5).all()


def test_without_enumeration_the_reference_is_the_union(problem):
    c = compare_methods(problem, methods=("weighted", "eps", "exhaustive"), max_count=10)
    assert not c.exact
    assert c.table["method"].tolist() == ["weighted", "eps"]  # exhaustive refused: no row
    assert (c.table["reference"] == "union").all()
    assert len(c.notes) == 1 and c.notes[0].startswith("exhaustive skipped: ")
    # the complete eps sweep is the exact front, so it spans the whole union
    assert c.table.set_index("method").loc["eps", "hv_ratio"] == pytest.approx(1.0)


def test_default_weight_grid():
    g = default_weight_grid(3)
    assert g == [(1.0, 0.0), (0.5, 0.5), (0.0, 1.0)]
    assert np.allclose([sum(w) for w in default_weight_grid()], 1.0)


def test_unknown_method_raises(problem):
    with pytest.raises(ValueError, match="unknown method"):
        compare_methods(problem, methods=("eps", "simplex"))
