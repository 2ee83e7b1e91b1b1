"""The study page: its sections in order, each figure placed once and drawn once."""

from __future__ import annotations

import re

import pytest

from fl_oracle.experiments.study.assembly import finish_study
from fl_oracle.experiments.study.page import SECTIONS, render_html
from fl_oracle.experiments.study.runs import run_study
from fl_oracle.experiments.study.settings import StudySettings
from selection.selectors import make_selector

from helpers import fake_oracle as fake


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    s = StudySettings(seeds=2, rounds=3, k=3, bootstrap=200, target_worst=50.0,
                      selectors=("proportional", "random", "eps:5", "eps:10"))  # fmt: skip
    run_study(s, out, make_oracle=lambda seed: fake.FakeOracle(seed, clients_per_domain=2),
              make_selector=make_selector)  # fmt: skip
    return finish_study(s, out)


def test_the_sections_come_in_their_numbered_order(result):
    text = render_html(result)
    numbers = [int(n) for n in re.findall(r"<h2>(\d)\. ", text)]
    assert numbers == sorted(numbers) and numbers[0] == 1 and numbers[-1] == 9
    assert text.index("<h1>fedsel study: 4 selectors") < text.index("<h2>Verdict</h2>")
    assert len(SECTIONS) == 11


def test_every_placed_figure_is_drawn_once_in_page_order(result):
    text = render_html(result)
    placed = re.findall(r'<div id="(\w+)"></div>', text)
    drawn = re.findall(r"Plotly\.newPlot\('(\w+)'", text)
    assert drawn == placed and len(set(drawn)) == len(drawn)
    assert drawn[:4] == ["plane", "plane_zoom", "forest_worst", "forest_avg"]


def test_an_empty_section_keeps_the_numbering(result):
    sections = [make(result) for make in SECTIONS]
    cost = sections[9]
    assert (cost.html == "") == result.cost.empty
    if result.cost.empty:
        assert "<h2>8." not in render_html(result) and "<h2>9. Settings" in render_html(result)


def test_predicted_fronts_are_drawn_where_enumeration_reaches_and_skipped_beyond():
    """A cross-device study's reference run (N = 200, K = 20: C(N, K) ~ 1.6e27) is reported
    without the front figure instead of refused; at N = 20 its exact fronts are there."""
    from fl_oracle.experiments.study.assembly import fronts_over_rounds
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.synthetic import synthetic_stats

    small = synthetic_stats(20, seed=0).assign(round=0)
    fronts = fronts_over_rounds(StudySettings(k=5, rounds=1), small)
    assert set(fronts["plane"]) == {"utility,worst", "utility,gap"} and len(fronts) >= 2
    big = synthetic_stats(200, seed=0).assign(round=0)
    assert fronts_over_rounds(StudySettings(k=20, rounds=1), big).empty


def test_the_plane_marks_baselines_alone_with_diamonds_and_keeps_every_interval(tmp_path):
    """A lone formulation entry is a circle named by its entry (it was a diamond, the
    baselines' mark, named by its family), a baseline a diamond; with two seeds the wide
    t intervals stay inside the axes."""
    from fl_oracle.experiments.study.figures import plane_figure

    s = StudySettings(seeds=2, rounds=3, k=3, bootstrap=200, target_worst=50.0,
                      selectors=("proportional", "maxmin:2"))  # fmt: skip
    run_study(s, tmp_path, make_oracle=lambda seed: fake.FakeOracle(seed, clients_per_domain=2),
              make_selector=make_selector)  # fmt: skip
    fig = plane_figure(finish_study(s, tmp_path))
    means = {t["name"]: t for t in fig["data"] if "name" in t}
    assert set(means) == {"proportional", "maxmin:2"}
    assert means["proportional"]["marker"]["symbol"] == "diamond"
    assert means["maxmin:2"]["marker"]["symbol"] == "circle"
    _bars_within_axes(fig)


def _bars_within_axes(fig) -> list[dict]:
    """Every means trace's drawn interval bars inside the axes, the axes inside 0..100 %."""
    (x0, x1), (y0, y1) = fig["layout"]["xaxis"]["range"], fig["layout"]["yaxis"]["range"]
    assert 0 <= x0 < x1 <= 100 and 0 <= y0 < y1 <= 100, (x0, x1, y0, y1)
    means = [t for t in fig["data"] if "name" in t]
    for t in means:
        ex, ey = t["error_x"], t["error_y"]
        for x, up, down in zip(t["x"], ex["array"], ex["arrayminus"], strict=True):
            assert x0 - 1e-9 <= x - down and x + up <= x1 + 1e-9
        for y, up, down in zip(t["y"], ey["array"], ey["arrayminus"], strict=True):
            assert y0 - 1e-9 <= y - down and y + up <= y1 + 1e-9
    return means


def test_two_seed_intervals_are_cut_at_accuracy_axes_that_stay_within_0_100():
    """Two seeds far apart give t intervals of about -55..135 %: the plane's axes stayed
    fitted to them (-50..140 on an accuracy axis) and the zoomed plane's bars ran past both
    axes. The axes now stay within 0..100, every bar is drawn within them, and the hover
    gives the interval in full, saying the bar is cut; the curves' bands stay within 0..100."""
    from types import SimpleNamespace

    import pandas as pd

    from fl_oracle.experiments.study.figures import curves_figure, plane_figure

    s = StudySettings(seeds=2, rounds=2, k=3, selectors=("proportional", "random", "eps:5"))
    rows = [(e, seed, avg, worst) for e, lo, hi in (("proportional", 20, 80), ("random", 45, 55),
                                                     ("eps:5", 5, 95))
            for seed, avg, worst in ((0, lo, lo), (1, hi, hi))]  # fmt: skip
    metrics = pd.DataFrame(rows, columns=["entry", "seed", "final_avg", "final_worst"])
    history = pd.DataFrame(
        [(e, seed, r, v, v) for e, seed, _, v in rows for r in range(2)],
        columns=["entry", "seed", "round", "acc_worst", "acc_avg"],
    )
    res = SimpleNamespace(settings=s, metrics=metrics, history=history)
    for zoom in (False, True):
        fig = plane_figure(res, zoom=zoom)
        means = _bars_within_axes(fig)
        hover = [h for t in means for h in t["customdata"]]
        assert any("cut at the axis" in h for h in hover), hover
        eps = next(t for t in means if t["name"] == "eps:5")
        lo, hi = eps["customdata"][0].split("worst [")[1].split("]")[0].split(", ")
        assert float(lo) < -200 and float(hi) > 300  # the full t interval, said on hover
    bands = [y for t in curves_figure(res, "acc_worst", "worst")["data"] if t.get("fill")
             for y in t["y"]]  # fmt: skip
    assert bands and 0 <= min(bands) and max(bands) <= 100
