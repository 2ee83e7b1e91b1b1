"""The round step both cycles run (fl_oracle.experiments.round_step), on hand-computed rounds."""

from __future__ import annotations

import pandas as pd
import pytest

from fl_oracle.experiments.round_step import RoundChoice, choose_round, history_row
from selection.errors import InfeasibleError, SelectionError
from selection.selectors import make_selector


def _table() -> pd.DataFrame:
    """Four clients of two domains; U_a, U_b chosen so every pair's objectives are plain."""
    return pd.DataFrame(
        {
            "round": 0,
            "client_id": ["a-0", "a-1", "b-0", "b-1"],
            "domain": ["a", "a", "b", "b"],
            "n_samples": [100, 300, 100, 100],
            "U": [80.0, 70.0, 60.0, 50.0],
            "U_a": [90.0, 80.0, 50.0, 40.0],
            "U_b": [70.0, 60.0, 70.0, 60.0],
            "F": [1.0, 2.0, 3.0, 4.0],
            "B": [0.1, 0.1, 0.2, 0.2],
            "cos_g": [0.5, 0.4, 0.3, 0.2],
            "loss": [1.0, 2.0, 1.0, 1.0],
        }
    )


def test_a_callable_selector_gets_the_table_and_its_choice_is_predicted():
    choice = choose_round(lambda t, k: ["a-0", "b-0"], _table(), 2, name="x", where="round 0")
    assert isinstance(choice, RoundChoice) and choice.ids == ["a-0", "b-0"]
    # U = (80 + 60) / 2; U_a = 70, U_b = 70: gap 0, worst 70
    assert choice.pred["utility"] == pytest.approx(70.0)
    assert choice.pred["gap"] == pytest.approx(0.0) and choice.pred["worst"] == pytest.approx(70.0)
    assert choice.weights is None and choice.fallback == "" and choice.route == ""


def test_qffl_weights_follow_n_times_loss_to_the_q():
    choice = choose_round(lambda t, k: ["a-0", "a-1"], _table(), 2, name="q", where="r", q=1.0)
    # w ∝ n·loss: 100·1 and 300·2 -> 1/7, 6/7
    assert choice.weights == pytest.approx({"a-0": 1 / 7, "a-1": 6 / 7})


def test_an_infeasible_selector_falls_back_to_the_smallest_gap_point():
    def infeasible(table, k):
        raise InfeasibleError("no selection under ε")

    choice = choose_round(infeasible, _table(), 2, name="eps", where="round 0")
    assert choice.fallback.startswith("selector failed (no selection under ε); fell back to")
    assert choice.pred["gap"] == pytest.approx(0.0)  # a-0 with b-0 (70, 70), or a-1 with b-0


def test_a_wrong_answer_is_refused_by_the_one_check():
    with pytest.raises(SelectionError, match="returned 1 ids, 1 distinct .* for k=2 in round 3"):
        choose_round(lambda t, k: ["a-0"], _table(), 2, name="bad", where="round 3")
    with pytest.raises(SelectionError, match="unknown: zz"):
        choose_round(lambda t, k: ["a-0", "zz"], _table(), 2, name="bad", where="round 3")


def test_a_selector_is_judged_by_its_spec_surrogate_and_its_route_recorded():
    sel = make_selector("maxmin:0@weighted")
    choice = choose_round(sel, _table(), 2, name="m", where="r", surrogate=sel.surrogate)
    assert choice.problem.surrogate == "weighted" and choice.route == "enum"
    # δ = 0 keeps the weighted U* pair a-0, a-1 (p = 1/4, 3/4): U = 72.5, U_b = 62.5 (the mean
    # surrogate would predict 75 and 65)
    assert sorted(choice.ids) == ["a-0", "a-1"]
    assert choice.pred["utility"] == pytest.approx(72.5)
    assert choice.pred["worst"] == pytest.approx(62.5)


def test_a_history_row_starts_with_the_contract_columns():
    row = history_row(t=2, name="x", seed=1, stats_mode="fresh", k=2, ids=["a-0", "b-0"],
                      accuracies={"acc_avg": 50.0}, pred=None, surrogate="mean",
                      solve_seconds=0.5, fallback="", clocks=(0.0, 0.0))  # fmt: skip
    assert list(row)[:6] == ["round", "selector", "seed", "stats_mode", "k", "selected"]
    assert row["selected"] == "a-0;b-0" and row["acc_avg"] == 50.0
    assert row["pred_utility"] != row["pred_utility"]  # NaN without a prediction
