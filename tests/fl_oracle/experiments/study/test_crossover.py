"""The value of information's crossover, read off a race's verdict (issue 62)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fl_oracle.experiments.study.crossover import crossover_table, entry_level


def _verdict(rows, metric="final_worst"):
    return pd.DataFrame(rows, columns=["entry", "status"]).assign(metric=metric)


def test_the_crossover_is_the_lowest_level_tied_up_to_fresh_truth():
    rows = [("f:1@noisy:50", "worse"), ("f:1@noisy:60", "unresolved"), ("f:1@noisy:70", "tied"),
            ("f:1@noisy:80", "unresolved"), ("f:1@noisy:90", "tied"), ("f:1", "tied"),
            ("fedavg", "worse")]  # fmt: skip
    (row,) = crossover_table(_verdict(rows)).to_dict("records")
    # 80 is unresolved: the tied run down from fresh truth stops at 90; the bracket's lower
    # end is the highest level shown worse below it (50), the unresolved ones between
    assert row["answer"] == "reached" and row["crossover"] == 90.0 and row["below"] == 50.0
    assert row["levels"] == "50;60;70;80;90;100"


def test_none_up_to_fresh_and_unresolved_are_said_as_such():
    rows = [("g:2@noisy:90", "tied"), ("g:2", "worse"), ("h:3@noisy:50", "worse"),
            ("h:3", "unresolved")]  # fmt: skip
    t = crossover_table(_verdict(rows)).set_index("formulation")
    assert t.loc["g:2", "answer"] == "none up to fresh"
    assert t.loc["h:3", "answer"] == "unresolved" and math.isnan(t.loc["h:3", "crossover"])


def test_the_achieved_rank_correlation_translates_the_bracket():
    rows = [("f:1@noisy:50", "worse"), ("f:1@noisy:70", "tied"), ("f:1", "best")]
    history = pd.DataFrame({
        "entry": ["f:1@noisy:50"] * 2 + ["f:1@noisy:70"] * 2 + ["f:1"] * 2,
        "info_rho": [0.48, 0.52, 0.69, 0.73, float("nan"), float("nan")],
    })  # fmt: skip
    (row,) = crossover_table(_verdict(rows), history).to_dict("records")
    assert (row["crossover"], row["below"]) == (70.0, 50.0)
    assert row["rho_crossover"] == pytest.approx(0.71) and row["rho_below"] == pytest.approx(0.50)
    assert row["rho_levels"] == "50:0.500;70:0.710;100:1.000"


def test_every_metric_and_only_formulations_raced_at_several_levels_with_fresh_truth():
    rows = [("f:1@noisy:50", "worse"), ("f:1", "tied"), ("k:1@noisy:60", "tied"),
            ("k:1@noisy:90", "tied")]  # fmt: skip
    v = pd.concat([_verdict(rows), _verdict(rows, "final_avg")])
    t = crossover_table(v)
    assert list(t["formulation"]) == ["f:1", "f:1"]  # k:1 has no fresh-truth entry
    assert list(t["metric"]) == ["final_worst", "final_avg"]


def test_entries_are_read_by_their_information_model():
    assert entry_level("maxmin:2@noisy:80") == ("maxmin:2", 80)
    assert entry_level("maxmin:2@fresh") == ("maxmin:2", 100)
    assert entry_level("maxmin:2@stale") is None and entry_level("qffl:1") is None


def test_the_driver_writes_the_table_of_a_study_folder(tmp_path):
    import runpy

    from helpers import ROOT

    log = pd.DataFrame(
        [(10, "final_worst", e, 80.0, -1.0, 0.5, 0.75, s, 1)
         for e, s in [("f:1@noisy:60", "worse"), ("f:1@noisy:80", "tied"), ("f:1", "best"),
                      ("fedavg", "worse")]],
        columns=["n", "metric", "entry", "mean", "lower", "upper", "half_width", "status", "look"],
    )  # fmt: skip
    log.to_csv(tmp_path / "race.csv", index=False)
    for entry, rho in [("f:1@noisy:60", 0.57), ("f:1@noisy:80", 0.75)]:
        folder = tmp_path / "runs" / entry.replace(":", "_")
        folder.mkdir(parents=True)
        pd.DataFrame({"entry": [entry] * 2, "info_rho": [rho, rho]}).to_csv(
            folder / "seed00.csv", index=False
        )
    script = runpy.run_path(str(ROOT / "benchmarks" / "studies" / "crossover.py"))
    assert script["main"]([str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "crossover.csv")
    assert table[["crossover", "below"]].values.tolist() == [[80.0, 60.0]]
    assert table["rho_crossover"].tolist() == [pytest.approx(0.75)]
    assert (
        "| f:1 | final_worst | reached | 80.00 | 60.00 |" in (tmp_path / "crossover.md").read_text()
    )
