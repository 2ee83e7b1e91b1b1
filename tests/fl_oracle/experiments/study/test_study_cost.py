"""The study charged for its information: compute and bytes to the target, matched-cost
accuracy and the cost table, on hand-made histories with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fl_oracle.experiments.study.cost import cost_table, goal_lines, matched_cost
from fl_oracle.experiments.study.stats import run_metrics


def _history(entry: str, seed: int, worst, compute, *, mode="rule", bytes_=10) -> pd.DataFrame:
    r = len(worst)
    return pd.DataFrame(
        {
            "entry": entry,
            "seed": seed,
            "round": range(r),
            "stats_mode": mode,
            "acc_avg": np.asarray(worst, float) + 10,
            "acc_worst": worst,
            "acc_gap": 5.0,
            "cost_train_samples": compute,
            "cost_probe_samples": 0,
            "cost_bytes_up": bytes_,
            "cost_bytes_down": bytes_,
        }
    )


def test_compute_and_bytes_to_target_count_the_rounds_until_it_is_reached():
    h = pd.concat(
        [
            _history("fedavg", 0, [50, 55, 61, 62], [100, 100, 100, 100]),
            _history("cheap", 0, [50, 61, 62, 63], [40, 40, 40, 40], bytes_=3),
            _history("never", 0, [50, 51, 52, 53], [10, 20, 30, 40]),
        ]
    )
    m = run_metrics(h, target_worst=60, rounds=4).set_index("entry")
    assert m.loc["fedavg", "rounds_to_target"] == 3 and m.loc["cheap", "rounds_to_target"] == 2
    assert m.loc["fedavg", "compute_to_target"] == 300
    assert m.loc["cheap", "compute_to_target"] == 80
    assert m.loc["cheap", "bytes_to_target"] == 2 * 6
    # never reached: charged the whole run plus one round at its mean (25)
    assert m.loc["never", "compute_to_target"] == 100 + 25
    assert m.loc["cheap", "compute_per_round"] == 40


def test_accuracy_at_the_references_compute_reads_a_dearer_entry_earlier():
    h = pd.concat(
        [
            _history("fedavg", 0, [50, 55, 61, 62], [100, 100, 100, 100]),
            _history("dear", 0, [52, 58, 64, 70], [200, 200, 200, 200], mode="fresh"),
            _history("cheap", 0, [50, 61, 62, 63], [40, 40, 40, 40]),
        ]
    )
    m = matched_cost(h, run_metrics(h, target_worst=60, rounds=4), "fedavg").set_index("entry")
    assert m.loc["fedavg", "worst_at_budget"] == 62  # its own whole run
    assert m.loc["dear", "worst_at_budget"] == 58  # 400 samples spent after round 2
    assert m.loc["cheap", "worst_at_budget"] == 63  # cheaper: every round
    from selection.information import Information

    models = {"fedavg": "rule", "dear": Information("fresh"), "cheap": "rule"}
    table = cost_table(h, m.reset_index(), "fedavg", models).set_index("entry")
    assert table.loc["dear", "compute_ratio"] == pytest.approx(2.0)
    assert table.loc["cheap", "compute_ratio"] == pytest.approx(0.4)
    assert bool(table.loc["dear", "upper_bound"]) and not table.loc["cheap", "upper_bound"]
    lines = goal_lines(table.reset_index(), m.reset_index(), pd.DataFrame(), ["fedavg"],
                       reference="fedavg", resamples=200)  # fmt: skip
    assert "dear (fresh: the upper bound) 2.00x compute" in lines[0]
    assert "cheap 0.27x [0.27, 0.27]" in lines[2]  # 80 / 300 samples to the target


def test_histories_without_costs_have_no_cost_metrics():
    h = _history("a", 0, [50, 61], [1, 1]).drop(
        columns=["cost_train_samples", "cost_probe_samples", "cost_bytes_up", "cost_bytes_down"]
    )
    m = run_metrics(h, target_worst=60, rounds=2)
    assert "compute_to_target" not in m.columns
    assert cost_table(h, m, "a", {"a": "rule"}).empty and matched_cost(h, m, "a") is m
