"""Clustered sampling by sample size (Fraboni et al., ICML '21, Algorithm 1): the
distributions by hand, their sums, the draws' frequencies, and the 1/K aggregation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.baselines.clustered import ClusteredSampling, size_distributions
from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.selectors import make_selector


def test_the_distributions_by_hand():
    """p = (0.4, 0.3, 0.2, 0.1), K = 2: masses 0.8, 0.6, 0.4, 0.2 fill two rows of 1."""
    r = size_distributions(np.array([40, 30, 20, 10]), 2)
    np.testing.assert_allclose(r, [[0.8, 0.2, 0.0, 0.0], [0.0, 0.4, 0.4, 0.2]], atol=1e-12)


def test_each_row_is_a_distribution_and_each_client_keeps_its_share():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = rng.integers(1, 1000, size=rng.integers(3, 30))
        k = int(rng.integers(1, len(n) + 1))
        r = size_distributions(n, k)
        np.testing.assert_allclose(r.sum(axis=1), 1.0, atol=1e-9)
        np.testing.assert_allclose(r.sum(axis=0), k * n / n.sum(), atol=1e-9)


def _problem(sizes, k):
    table = pd.DataFrame({"round": 0, "client_id": [f"c{i}" for i in range(len(sizes))],
                          "domain": "a", "n_samples": sizes})  # fmt: skip
    return SelectionProblem.from_clients(table, k, ("a",))


def test_the_draws_follow_the_distributions():
    """c0 can come only from the first row (0.8); c1 from the first (0.2) or, when the first
    drew c0, from the second (0.4): P(c1) = 0.2 + 0.8 · 0.4 = 0.52."""
    rule = ClusteredSampling("clustered:1", 1)
    rng = np.random.default_rng(1)
    p = _problem([40, 30, 20, 10], 2)
    draws = [set(rule.pick(p, rng).tolist()) for _ in range(6000)]
    assert all(len(d) == 2 for d in draws)  # K distinct clients every round
    assert np.mean([0 in d for d in draws]) == pytest.approx(0.8, abs=0.02)
    assert np.mean([1 in d for d in draws]) == pytest.approx(0.52, abs=0.02)


def test_it_aggregates_one_kth_each_in_the_loop():
    pytest.importorskip("fl_oracle.experiments.loop")
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run

    from helpers import fake_oracle as fake

    oracle = fake.FakeOracle(0, clients_per_domain=2)
    sel = make_selector("clustered:1", seed=0)
    h = run_training(
        oracle, plan_run(sel, rounds=3, k=3, name="clustered:1", stats_mode="rule")
    ).history
    assert len(h) == 3
    for picked, weights in oracle.steps:
        assert len(set(picked)) == 3
        assert weights == {c: pytest.approx(1 / 3) for c in picked}


@pytest.mark.parametrize("spec", ["clustered:3", "clustered:0", "clustered"])
def test_no_third_algorithm_and_no_missing_argument(spec):
    with pytest.raises(SelectionError):
        make_selector(spec)
