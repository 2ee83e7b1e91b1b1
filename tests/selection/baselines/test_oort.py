"""Oort (Lai et al., OSDI '21, Algorithm 1) as a baseline rule: its scores by hand, its
exploration, and no look at a loss it did not train for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selection.baselines.oort import CUT_OFF, DECAY, EPS_MIN, Oort
from selection.errors import SelectionError
from selection.selectors import make_selector

from helpers.rules import rule_problem


def _problem(loss, sizes, k):
    return rule_problem(sizes, k, loss=loss)


def test_the_scores_are_the_papers_by_hand():
    """Utility min-max normalized (min × 0.999, the 95th-percentile clip) plus
    sqrt(0.1 ln R / L_i)."""
    rule = Oort("oort:0.9", 0.9)
    rule.utility = {"c0": 10.0, "c1": 30.0, "c2": 20.0}
    rule.last = {"c0": 1, "c1": 2, "c2": 3}
    rule.round = 4
    got = rule.scores(["c0", "c1", "c2", "c3"])
    lo = 10.0 * 0.999
    span = 30.0 - lo  # the 95th-percentile clip of three values is the largest
    want = {c: (u - lo) / span + math.sqrt(0.1 * math.log(4) / rule.last[c])
            for c, u in rule.utility.items()}  # fmt: skip
    assert set(got) == {"c0", "c1", "c2"}  # c3 never trained: no score
    for c in want:
        assert got[c] == pytest.approx(want[c], rel=1e-12)


def test_round_one_explores_by_size_and_records_the_picks_utility():
    rule = Oort("oort:0.9", 0.9)
    p = _problem([2.0, 1.0, 3.0, 0.5, 1.5, 2.5], [10, 600, 20, 500, 30, 700], k=2)
    idx = rule.pick(p, np.random.default_rng(0))
    assert rule.eps == pytest.approx(0.9 * DECAY)
    assert len(idx) == 2 and len(set(idx)) == 2
    # the window: the 5 x 2 = 10 largest (here all six), drawn ∝ size; the picks recorded
    picked = [f"c{i}" for i in idx]
    assert set(rule.utility) == set(picked) and set(rule.last.values()) == {1}
    for c in picked:
        i = int(c[1:])
        assert rule.utility[c] == pytest.approx(p.n_samples[i] * p.table["loss"][i])


def test_exploitation_draws_only_within_the_cut_off_and_exploration_is_the_rest():
    rule = Oort("oort:0", 0.0)  # ε at its floor: ⌊(1 − 0.2)·5⌋ = 4 exploited, 1 explored
    rule.round = 9
    rule.utility = {f"c{i}": float(u) for i, u in enumerate([100, 90, 80, 70, 60, 50, 1, 1])}
    rule.last = {c: 9 for c in rule.utility}
    ids = [f"c{i}" for i in range(10)]
    for seed in range(20):
        r = Oort("oort:0", 0.0)
        r.round, r.utility, r.last = rule.round, dict(rule.utility), dict(rule.last)
        p = _problem(np.ones(10), [50] * 10, k=5)
        picked = [ids[i] for i in r.pick(p, np.random.default_rng(seed))]
        assert r.eps == EPS_MIN
        ref = Oort("oort:0", 0.0)  # the scores of round 10 before the picks were recorded
        ref.round, ref.utility, ref.last = 10, rule.utility, rule.last
        s = ref.scores(ids)
        ranked = sorted(s, key=lambda c: -s[c])
        cut = s[ranked[4]] * CUT_OFF
        exploited = [c for c in picked if c in rule.utility]
        explored = [c for c in picked if c not in rule.utility]
        assert len(exploited) == 4 and len(explored) == 1
        assert all(s[c] >= cut for c in exploited)  # the low-utility c6, c7 never
        assert explored[0] in ("c8", "c9")


def test_it_reads_no_loss_of_a_client_it_did_not_train():
    """Two federations differing only in the losses of clients round 1 did not pick: the
    second round's choice is the same."""
    sizes = [100, 200, 300, 400, 500, 600]
    a = Oort("oort:0.5", 0.5)
    p1 = _problem([1, 2, 3, 4, 5, 6], sizes, k=2)
    first = a.pick(p1, np.random.default_rng(3))
    loss = np.array([1, 2, 3, 4, 5, 6], dtype=float)
    other = loss.copy()
    other[[i for i in range(6) if i not in first]] = 99.0
    b = Oort("oort:0.5", 0.5)
    assert list(b.pick(_problem(other, sizes, k=2), np.random.default_rng(3))) == list(first)
    second_a = a.pick(_problem(loss, sizes, k=2), np.random.default_rng(4))
    second_b = b.pick(_problem(loss, sizes, k=2), np.random.default_rng(4))
    assert list(second_a) == list(second_b)


def test_once_every_client_trained_it_only_exploits():
    rule = Oort("oort:0.9", 0.9)
    p = _problem([1.0, 2.0, 3.0, 4.0], [10, 20, 30, 40], k=2)
    rng = np.random.default_rng(0)
    for _ in range(6):
        rule.pick(p, rng)
    assert set(rule.utility) == {"c0", "c1", "c2", "c3"}
    assert rule.eps == 0.0  # nothing left to explore: the code's exploration_min = 0


@pytest.mark.parametrize("spec", ["oort:1.5", "oort:-0.1", "oort"])
def test_a_bad_exploration_fraction_is_refused(spec):
    with pytest.raises(SelectionError):
        make_selector(spec)


def test_it_is_a_selector_charged_for_its_picks_losses():
    sel = make_selector("oort:0.9", seed=1)
    assert sel.reads == "probe-picks" and sel.reports == ("loss",)
    p = _problem([1, 2, 3, 4, 5, 6], [10, 20, 30, 40, 50, 60], k=3)
    ids = sel.choose(p)
    assert len(ids) == 3 and sel.probed_ids(p) == ids


def test_it_trains_in_the_loop_charged_for_its_picks_probe():
    pytest.importorskip("fl_oracle.sim.oracle")
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from fl_oracle.experiments.runner import OracleFactory

    from helpers import fake_oracle as fake

    oracle = OracleFactory(fake.tiny_overrides(), fake.tiny_data())(0)
    plan = plan_run(make_selector("oort:0.9", seed=0), rounds=3, k=3, name="oort:0.9",
                    stats_mode="rule", records=())  # fmt: skip
    h = run_training(oracle, plan).history
    probe = oracle.probe_sizes()
    for row in h.itertuples():
        picks = row.selected.split(";")
        assert len(picks) == 3
        assert row.cost_probe_samples == sum(probe[c] for c in picks)
