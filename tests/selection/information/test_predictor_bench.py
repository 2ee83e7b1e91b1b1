"""benchmarks/predictor_bench.py: the replay is strictly forward in time (round t's truth never
reaches round t's prediction), its shapes, and its metrics by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "predictor_bench.py"
_spec = importlib.util.spec_from_file_location("bench_predictor", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

DOMAINS = ("a", "b")


def _log(rounds: int = 6, n: int = 8, seed: int = 0) -> pd.DataFrame:
    """A synthetic trajectory in the log's columns: U_d = acc_d + 3 x_d + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(rounds):
        x = rng.normal(size=(n, 2))
        for i in range(n):
            row = {
                "driver": "d",
                "seed": seed,
                "round": t,
                "client_id": f"c{i}",
                "domain": DOMAINS[i % 2],
                "n_samples": 10 + i,
                "loss": rng.uniform(0.5, 2),
                "F": rng.uniform(0.1, 3),
                "B": 0.1,
                "cos_g": 0.0,
                "steps": 3,
                "chosen": i < 3 or (t % 2 == 1 and i in (5, 6)),
            }
            for j, d in enumerate(DOMAINS):
                row[f"x_{d}"] = x[i, j]
                row[f"acc_{d}"] = 40.0 + t
                row[f"size_{d}"] = 100
                row[f"true_{d}"] = 40.0 + t + 3.0 * x[i, j] + rng.normal(0, 0.1)
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("model", ["probe", "predicted", "boosted", "drift"])
def test_round_t_truth_never_reaches_round_t_prediction(model):
    """Change every truth of round 3 (the labels the model observes after predicting it):
    rounds 0-3's predictions are unchanged, a later one moves."""
    log = _log()
    before = bench.replay(model, log, 3, "all", 0)
    changed = log.copy()
    at = changed["round"] == 3
    for d in DOMAINS:
        changed.loc[at, f"true_{d}"] += 25.0
    after = bench.replay(model, changed, 3, "all", 0)
    cols = [f"pred_{d}" for d in DOMAINS]
    early = before["round"] <= 3
    np.testing.assert_array_equal(before.loc[early, cols], after.loc[early, cols])
    assert not np.allclose(before.loc[~early, cols], after.loc[~early, cols])
    assert len(before) == len(log) and set(cols) <= set(before.columns)


def test_picks_mode_learns_only_from_the_committed_clients():
    """With --train-on picks, truths of clients never committed do not matter."""
    log = _log()
    before = bench.replay("probe", log, 3, "picks", 0)
    changed = log.copy()
    never = ~changed.groupby("client_id")["chosen"].transform("any")
    assert never.any()
    changed.loc[never, "true_a"] -= 30.0
    after = bench.replay("probe", changed, 3, "picks", 0)
    np.testing.assert_array_equal(before["pred_a"], after["pred_a"])


def test_round_metrics_by_hand():
    pred = pd.DataFrame(
        {
            "round": 0,
            "client_id": ["c0", "c1", "c2"],
            "pred_a": [1.0, 2.0, 3.0],
            "true_a": [2.0, 2.0, 5.0],
            "pred_b": [3.0, 2.0, 1.0],
            "true_b": [3.0, 2.0, 1.0],
        }
    )
    subsets = pd.DataFrame(
        {
            "round": 0,
            "ids": ["c0;c1", "c1;c2", "c0;c2"],
            "agg_a": [1.0, 3.0, 2.0],
            "agg_b": [2.0, 1.0, 1.5],
        }
    )
    m = bench.round_metrics(pred, subsets, ("a", "b")).iloc[0]
    assert m["mae"] == pytest.approx((1 + 0 + 2 + 0 + 0 + 0) / 6)
    # predicted U_d(S): a (1.5, 2.5, 2.0), b (2.5, 1.5, 2.0) — both rank the subsets as the truth
    assert m["rho_ud"] == pytest.approx(1.0)
    # worst(S): predicted (1.5, 1.5, 2.0) vs real (1.0, 1.0, 1.5): ρ of tied ranks = 1
    assert m["rho_worst"] == pytest.approx(1.0)
