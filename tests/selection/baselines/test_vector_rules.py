"""The rules that read the clients' update vectors: DivFL (Balakrishnan et al. '22) and
clustered sampling's Algorithm 2 (Fraboni et al. '21) — their pieces by hand, their draws, and
what the loop charges them (FedCor, which reads losses over rounds: ``test_fedcor.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selection.baselines.clustered import (
    similarity_clusters,
    similarity_distributions,
    update_angles,
)
from selection.baselines.divfl import DivFL, stochastic_greedy, update_distances
from selection.errors import SelectionError
from selection.selectors import make_selector

from helpers.rules import rule_problem


def _problem(n_samples, k, vectors=None, loss=None):
    return rule_problem(n_samples, k, loss=loss, vectors=vectors)


# DivFL -------------------------------------------------------------------------------------
def test_distances_by_hand_and_unknown_clients_at_the_largest():
    v = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0], [np.nan, np.nan]])
    d = update_distances(v)
    np.testing.assert_allclose(d[:3, :3], [[0, 5, 10], [5, 0, 5], [10, 5, 0]], atol=1e-9)
    assert d[3, 3] == 0 and (d[3, :3] == 10).all() and (d[:3, 3] == 10).all()


def test_greedy_facility_location_by_hand():
    """Points on a line at 0, 0.5, 1, 1.2 and 10, 11, 13, K = 2, every client in the sample
    (N/K ln 100 > N). The first pick maximizes Σ_i (d_0 − d_i·), i.e. has the smallest total
    distance: 1.2 (32.5, against 32.7 for 1 and 41.3 for 10). The second covers the far three:
    gains Σ_i max(m_i − d_i·, 0) are 26.4 (10), 27.4 (11), 25.4 (13): 11."""
    x = np.array([[0.0], [0.5], [1.0], [1.2], [10.0], [11.0], [13.0]])
    picked = stochastic_greedy(update_distances(x), 2, np.random.default_rng(0))
    assert picked.tolist() == [3, 5]


def test_without_any_update_the_first_round_draws_uniformly():
    rule = DivFL("divfl:updates", "updates")
    p = _problem([10] * 6, 2, vectors=np.full((6, 3), np.nan))
    rng = np.random.default_rng(0)
    counts = np.zeros(6)
    for _ in range(3000):
        counts[rule.pick(p, rng)] += 1
    np.testing.assert_allclose(counts / 3000, 2 / 6, atol=0.03)


def test_two_clusters_one_pick_each():
    rng = np.random.default_rng(1)
    v = np.vstack([rng.normal(0, 0.1, (5, 4)), rng.normal(5, 0.1, (5, 4))])
    rule = DivFL("divfl:probe", "probe")
    for seed in range(20):
        picked = rule.pick(_problem([10] * 10, 2, vectors=v), np.random.default_rng(seed))
        assert sorted(i // 5 for i in picked) == [0, 1]


def test_sources_and_what_they_read():
    from selection.baselines.reads import VECTOR_READS

    assert make_selector("divfl:stale").reads == "partial-gradients"
    assert make_selector("divfl:probe").reads == "probe-gradients"
    assert make_selector("divfl:fresh").reads == "fresh-updates"
    assert make_selector("divfl:updates").reads == "updates"
    assert {make_selector(f"divfl:{s}").reads for s in ("stale", "probe", "fresh", "updates")} == (
        set(VECTOR_READS)
    )  # every vector a rule can read, one source each
    with pytest.raises(SelectionError, match="source is one of"):
        make_selector("divfl:2")
    with pytest.raises(SelectionError, match="no update vectors"):
        DivFL("divfl:stale", "stale").pick(_problem([1, 2, 3], 2), np.random.default_rng(0))


def test_partial_gradients_are_probed_every_client_first_then_the_picks():
    """divfl:stale reads every client's gradient at round 0 and its picks' after (a probe pass
    each, uploaded model-sized); a client without one is refused, naming it."""
    rule = DivFL("divfl:stale", "stale")
    v = np.random.default_rng(0).normal(size=(5, 3))
    rng = np.random.default_rng(0)
    picked = rule.pick(_problem([10] * 5, 2, vectors=v), rng)
    assert rule.probed_by(5, picked).tolist() == [0, 1, 2, 3, 4]
    picked = rule.pick(_problem([10] * 5, 2, vectors=v), rng)
    assert rule.probed_by(5, picked).tolist() == picked.tolist()
    assert rule.probe_floats == rule.MODEL_SIZED and rule.reports == ()
    v[3] = np.nan
    with pytest.raises(SelectionError, match="no partial gradient of client c3"):
        rule.pick(_problem([10] * 5, 2, vectors=v), rng)


# clustered sampling, Algorithm 2 --------------------------------------------------------------
def test_angles_by_hand():
    v = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0], [np.nan, 1.0]])
    a = update_angles(v)
    np.testing.assert_allclose(a[0, :3], [0, math.pi / 2, math.pi], atol=1e-7)
    # a client with no update (NaN or zero) is at angle 0 from every client, as the authors'
    # get_similarity returns 0.0 for a zero representative gradient (fedsel gave pi/2)
    assert a[3, 3] == 0 and np.allclose(a[3, :3], 0.0) and np.allclose(a[:3, 3], 0.0)
    z = update_angles(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))
    assert np.allclose(z[1:, :], 0.0) and np.allclose(z[:, 1:], 0.0)


def test_the_clusters_are_the_heaviest_subtrees_of_mass_at_most_one_kth():
    """Two tight groups of three equal clients (mass 1/6 each) and K = 2: the tree's two
    subtrees have mass 1/2 <= 1/K each: the clusters are the groups."""
    angles = update_angles(
        np.array([[1, 0.01], [1, 0.02], [1, 0.0], [0.01, 1], [0.0, 1], [0.02, 1]], dtype=float)
    )
    assert similarity_clusters(angles, np.full(6, 1 / 6), 2) == [[0, 1, 2], [3, 4, 5]]
    assert similarity_clusters(angles, np.full(6, 1 / 6), 3) != [[0, 1, 2], [3, 4, 5]]


def test_each_row_is_a_distribution_and_each_client_keeps_its_share():
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(3, 25))
        k = int(rng.integers(1, n + 1))
        sizes = rng.integers(1, 500, size=n)
        r = similarity_distributions(update_angles(rng.normal(size=(n, 6))), sizes, k, rng)
        np.testing.assert_allclose(r.sum(axis=1), 1.0, atol=1e-9)
        np.testing.assert_allclose(r.sum(axis=0), k * sizes / sizes.sum(), atol=1e-9)


def test_clustered_two_draws_one_client_per_similar_group():
    """Two groups of equal mass and K = 2: each distribution is one group, so every round
    commits one client of each."""
    v = np.array([[1, 0.01], [1, 0.02], [1, 0.0], [0.01, 1], [0.0, 1], [0.02, 1]], dtype=float)
    sel = make_selector("clustered:2", seed=0)
    assert sel.reads == "updates"
    for _ in range(50):
        ids = sel.choose(_problem([10] * 6, 2, vectors=v))
        assert sorted(int(c[1:]) // 3 for c in ids) == [0, 1]


# in the loop: what is read and what is charged ------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    from helpers.oracle import tiny_config, tiny_data

    return tiny_config, tiny_data()


def _run(tiny, spec, rounds=2):
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from fl_oracle.sim.oracle import Oracle

    config, data = tiny
    oracle = Oracle(config(), data=data)
    h = run_training(
        oracle, plan_run(make_selector(spec), rounds=rounds, k=2, name=spec, stats_mode="rule")
    )
    return oracle, h.history


def test_what_each_source_is_charged(tiny):
    oracle, updates = _run(tiny, "divfl:updates")
    model = oracle.model_bytes
    n = len(oracle.clients)
    probe = oracle.probe_sizes()
    assert (updates["cost_probe_samples"] == 0).all()
    assert (updates["cost_bytes_up"] < 3 * model).all()  # the two picks' updates
    # partial gradients: every client's probe pass and gradient at round 0, the picks' after
    _, stale = _run(tiny, "divfl:stale", rounds=3)
    picks = [s.split(";") for s in stale["selected"]]
    assert stale["cost_probe_samples"].tolist() == [
        sum(probe.values()),
        *(sum(probe[c] for c in p) for p in picks[1:]),
    ]
    assert stale["cost_bytes_up"].iloc[0] >= (n + 2) * model  # a gradient each, two updates
    assert ((stale["cost_bytes_up"].iloc[1:] >= 4 * model)
            & (stale["cost_bytes_up"].iloc[1:] < 5 * model)).all()  # fmt: skip
    _, fresh = _run(tiny, "divfl:fresh")
    assert (fresh["cost_bytes_up"] >= n * model).all()  # every client trained
    assert (fresh["cost_train_samples"] > updates["cost_train_samples"].max()).all()
    _, probe = _run(tiny, "divfl:probe")
    assert (probe["cost_probe_samples"] == sum(oracle.probe_sizes().values())).all()
    assert (probe["cost_bytes_up"] >= (n + 2) * model).all()  # a gradient each, two updates


def test_stale_vectors_are_the_committed_updates(tiny):
    oracle, h = _run(tiny, "clustered:2", rounds=3)
    v = oracle.update_vectors("stale")
    committed = set(";".join(h["selected"]).split(";"))
    known = {
        c for c, row in zip(oracle.clients["client_id"], v, strict=True) if np.isfinite(row).all()
    }
    assert known == committed


def test_vector_rules_refuse_private_statistics(tiny):
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from fl_oracle.experiments.privacy import StatsPrivacy
    from fl_oracle.sim.oracle import Oracle

    config, data = tiny
    with pytest.raises(SelectionError, match="private statistics"):
        run_training(
            Oracle(config(), data=data),
            plan_run(
                make_selector("divfl:stale"),
                rounds=1,
                k=2,
                name="divfl:stale",
                stats_mode="rule",
                privacy=StatsPrivacy(epsilon=1.0, delta=1e-5, rounds=1),
            ),
        )
