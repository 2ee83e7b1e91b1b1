"""Plot data of front.html / compare.html and the self-contained rendering."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.problem import SelectionProblem
from selection.report import (
    PLOT_COLUMNS,
    compare_plot_data,
    front_plot_data,
    render_compare_html,
    render_front_html,
)
from selection.solvers.registry import make_solver
from selection.solvers.result import results_to_frame
from selection.synthetic import synthetic_stats


@pytest.fixture(scope="module")
def problem() -> SelectionProblem:
    return SelectionProblem.from_stats(synthetic_stats(12, seed=3), 3)


@pytest.fixture(scope="module")
def front(problem) -> pd.DataFrame:
    results = [make_solver("eps", eps=e).solve(problem) for e in (100.0, 20.0, 0.0)]
    results.append(make_solver("maxmin", delta=1.0).solve(problem))
    return results_to_frame(problem, results)


def test_plot_data_keeps_feasible_points_sorted_by_method_then_gap(front):
    data = front_plot_data(front)
    ok = front[front["status"] != "infeasible"]
    assert len(data) == len(ok) and (front["status"] == "infeasible").any()
    assert list(data.columns[: len(PLOT_COLUMNS)]) == list(PLOT_COLUMNS)
    assert data["method"].tolist() == ["eps"] * (len(ok) - 1) + ["maxmin"]
    eps = data[data["method"] == "eps"]
    assert np.all(np.diff(eps["gap"].to_numpy()) >= 0)


def test_hover_names_ids_and_domain_utilities(problem, front):
    data = front_plot_data(front)
    row = data.iloc[0]
    for cid in row["selected"].split(";"):
        assert cid in row["hover"]
    for d in problem.domains:
        assert f"U_{d} = {row[f'U_{d}']:.2f}" in row["hover"]
    assert f"U = {row['utility']:.3f} %" in row["hover"]


def test_plot_data_on_other_axes(front):
    data = front_plot_data(front, x="var_d", y="worst")
    assert "var_d" in data.columns and "var_d = " in data["hover"].iloc[0]
    eps = data[data["method"] == "eps"]
    assert np.all(np.diff(eps["var_d"].to_numpy()) >= 0)
    with pytest.raises(ValueError, match="no column 'nope'"):
        front_plot_data(front, x="nope")


def test_compare_plot_data_adds_the_reference_front(front):
    ref = pd.DataFrame({"utility": [60.0, 55.0], "gap": [9.0, 4.0]})
    data = compare_plot_data(front, ref)
    part = data[data["method"] == "reference front"]
    assert part["gap"].tolist() == [4.0, 9.0]
    assert len(data) == len(front_plot_data(front)) + 2


def test_html_is_self_contained_and_names_the_methods(front):
    page = render_front_html(front, "t <1>")
    assert "<script src=" not in page and "Plotly" in page and len(page) > 1_000_000
    assert '"name":"eps"' in page and '"name":"maxmin"' in page
    assert "t &lt;1&gt;" in page and "infeasible/failed" in page
    table = pd.DataFrame(
        {"method": ["eps"], "points": [2], "hv_ratio": [0.5], "igd": [0.1], "seconds": [0.01]}
    )
    ref = pd.DataFrame({"utility": [60.0], "gap": [4.0]})
    page = render_compare_html(table, front, ref)
    assert "<script src=" not in page and '"name":"reference front"' in page
    assert "<td>0.5000</td>" in page


def test_the_front_page_says_what_the_front_costs_and_names_its_points():
    import re

    from selection.report import front_takeaway, render_front_html

    front = pd.DataFrame({
        "method": "eps", "param": ["eps=inf", "eps=10", "eps=4", "eps=3"],
        "utility": [70.0, 68.5, 65.0, 65.0], "gap": [30.0, 10.0, 4.0, 4.0],
        "worst": [50.0, 60.0, 62.0, 62.0], "selected": ["a;b", "a;c", "c;d", "c;d"],
        "status": "optimal",
    })  # fmt: skip
    data = front_plot_data(front, "gap", "utility")
    said = front_takeaway(data, "gap", "utility")
    assert said.startswith("3 distinct points. Best U: 70.00 % (gap 30.00 pp, ε=inf)")
    assert "best gap: 4.00 pp (U 65.00 %, ε=4)" in said and "costs 5.00 points of U" in said
    page = render_front_html(front, "t", x="gap", y="utility")
    assert said in page
    labels = [
        t.encode().decode("unicode_escape") for t in re.findall(r'"text":"(\\u03b5=[^"]*)"', page)
    ]
    assert sorted(labels) == ["ε=10", "ε=4", "ε=inf"]  # one label per distinct point


def test_the_compare_page_says_who_recovers_the_front_and_who_optimizes_elsewhere():
    from selection.report import compare_takeaway

    table = pd.DataFrame({
        "method": ["eps", "maxmin", "fisher-fair"], "hv_ratio": [1.0, 0.8912, 0.4469],
        "reference": "exact",
    })  # fmt: skip
    said = compare_takeaway(table, ("utility", "gap"))
    assert said.startswith("Recovering all of the exact front: eps;")
    assert "others reach: maxmin 0.89, fisher-fair 0.45." in said
    assert "fisher-fair optimizes Σ F_z (under a worst floor), not U" in said
    assert "maxmin optimizes" not in said  # another axis (worst), the same objective U
