"""fedsel on Flower: the strategy, the Digits-4 apps, ``fedsel flower``, and the faithful port.

Equivalence (issue 12, item 4): with the same seed, data and settings, the Flower apps and the
in-process loop (``fedsel train``'s ``run_training`` on the oracle) make the same selections and
reach the same accuracies. The tolerance: a Flower node trains alone, the oracle trains the
clients sharing a step budget as one stacked batch, and float32 kernels round differently for
the two (|ΔΔ| ≈ 1.5e-8 after a local epoch). Accuracies and U are counts of correct samples, so
they agree exactly unless a sample sits within that rounding of a decision boundary: allowed
is one sample per domain (100 / n_test points); F, loss and B-dissimilarity agree to 1e-4
relative, cos_g to 1e-4 (the rounding grows over rounds: 2e-5 by round 2 in the Ray run, whose
actors run other kernels). The selections must be identical. Measured here: all equal, the
accuracies exactly.

Two engines drive the same ServerApp strategy and ClientApp code: the in-process grid
(``LocalGrid``, fast: most tests) and Flower's simulation engine on Ray (one CLI run of 20
SuperNodes x 3 rounds, ~30-40 s on two cores).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

from fl_oracle.experiments.flower.client_app import make_client_app  # noqa: E402
from fl_oracle.experiments.flower.digits import DigitsSettings, save_data  # noqa: E402
from fl_oracle.experiments.flower.local_grid import LocalGrid  # noqa: E402
from fl_oracle.experiments.flower.run import run_flower  # noqa: E402
from fl_oracle.experiments.flower.server_app import FlowerRun, run_strategy  # noqa: E402
from fl_oracle.experiments.flower.server_side import ServerSide
from fl_oracle.experiments.flower.strategy import FedselStrategy, FlowerRunError  # noqa: E402

from helpers.oracle import DOMAINS, tiny_config, tiny_data

N_TEST = 40  # tiny_data's test samples per domain
N_VAL = 30  # tiny_config's validation samples per domain


def _config(seed: int = 0, **changes):
    base = dict(seed=seed, clients_per_domain=5, lr=0.2)
    base.update(changes)
    return tiny_config(**base)


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    data = tiny_data(n_train=400)
    path = save_data(data, tmp_path_factory.mktemp("flower") / "tiny.pt")
    return data, path


def _oracle_run(config, data, spec: str, rounds: int, k: int, stats: str = "fresh"):
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from fl_oracle.sim.oracle import Oracle
    from selection.selectors import make_selector

    oracle = Oracle(config, data=data)
    plan = plan_run(
        make_selector(spec, seed=config.seed),
        rounds=rounds,
        k=k,
        name=spec,
        seed=config.seed,
        stats_mode=stats,
    )
    return run_training(oracle, plan)


def assert_same_run(flower_hist, flower_stats, ref) -> None:
    """The equivalence of the module docstring."""
    h, r = flower_hist.reset_index(drop=True), ref.history
    assert list(h["selected"]) == list(r["selected"])
    for d in DOMAINS:
        np.testing.assert_allclose(h[f"acc_{d}"], r[f"acc_{d}"], rtol=0, atol=100 / N_TEST + 1e-9)
    for col in ("global_loss", "B_dissimilarity"):
        np.testing.assert_allclose(h[col], r[col], rtol=1e-4)
    np.testing.assert_allclose(h["mu"], r["mu"])
    # the deployment pays the same client work in both drivers (fresh: every node trains once)
    for col in ("cost_train_samples", "cost_probe_samples"):
        assert (h[col].to_numpy() == r[col].to_numpy()).all(), col
    assert (h["upper_bound"] == r["upper_bound"]).all()
    # one round step (choose_round) in both cycles: every column the loop records is in
    # Flower's history, and the predicted objectives mean the same (the surrogate, the same
    # selection's values, within one validation sample per domain)
    assert set(r.columns) <= set(h.columns), set(r.columns) - set(h.columns)
    assert (h["surrogate"] == r["surrogate"]).all() and (h["fallback"] == r["fallback"]).all()
    for col in [c for c in r.columns if c.startswith("pred_")]:
        np.testing.assert_allclose(h[col], r[col], rtol=0, atol=100 / N_VAL + 1e-6, err_msg=col)
    s, o = flower_stats.reset_index(drop=True), ref.stats
    assert list(s.columns) == list(o.columns)
    assert list(s["client_id"]) == list(o["client_id"])
    pd.testing.assert_series_equal(s["chosen"], o["chosen"])
    for col in ("n_samples", "steps", "round", "measured_round"):
        assert (s[col].to_numpy() == o[col].to_numpy()).all(), col
    for col in ["U", *[f"U_{d}" for d in DOMAINS], "U_own", "dU"]:
        np.testing.assert_allclose(s[col], o[col], rtol=0, atol=100 / N_VAL + 1e-9)
    np.testing.assert_allclose(s["F"], o["F"], rtol=1e-4)
    np.testing.assert_allclose(s["loss"], o["loss"], rtol=1e-4)
    np.testing.assert_allclose(s["cos_g"], o["cos_g"], rtol=0, atol=1e-4)
    np.testing.assert_allclose(s["B"], o["B"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(s["gamma_achieved"], o["gamma_achieved"], rtol=1e-3)


# ------------------------------------------------------------------ the faithful port, fast


@pytest.mark.parametrize(
    "spec,changes",
    [
        ("maxmin:2", {"mu": 0.01}),
        ("qffl:1", {"gamma": 0.9, "local_epochs": 2.0}),  # q-FFL weights, γ-inexact stops
        ("random", {}),
        ("divfl:fresh", {}),  # every node's update of the round, read by the rule
        # aggregation weights as a decision: chosen with the picks, or fixed to 1/K
        ("maxmin:2@weighted+agg=best", {}),
        ("eps-rel:0.5@agg=uniform", {}),
    ],
)
def test_flower_apps_match_the_in_process_loop(data_file, spec, changes):
    data, path = data_file
    config = _config(**changes)
    run = FlowerRun(DigitsSettings.of(config, path), spec, 5, 3)
    res = run_flower(run, 20, engine="local")
    hist, stats = res.frames()
    ref = _oracle_run(config, data, spec, 3, 5)
    assert_same_run(hist, stats, ref)
    assert (hist["engine"] == "flower").all() and (hist["failed"] == "").all()
    assert (hist["n_aggregated"] == 5).all()
    if "agg=" in spec:  # Flower commits the weights the loop commits, and records them
        assert list(hist["agg_weights"]) == list(ref.history["agg_weights"])


def test_a_rule_reading_the_aggregated_updates_sees_the_loops(data_file):
    """clustered:2 reads the update last aggregated from each node: in round 1 those of round
    0's picks, the same in Flower as in the loop, so the two choose alike. (Later rounds may
    part: the angles between nearly parallel updates amplify the float32 round trip of
    Flower's arrays, and Ward's tree follows.)"""
    data, path = data_file
    config = _config()
    run = FlowerRun(DigitsSettings.of(config, path), "clustered:2", 5, 2)
    hist, _ = run_flower(run, 20, engine="local").frames()
    ref = _oracle_run(config, data, "clustered:2", 2, 5).history
    assert list(hist["selected"]) == list(ref["selected"])
    assert (hist["cost_train_samples"] == ref["cost_train_samples"]).all()


def test_stale_mode_measures_unseen_nodes_only(data_file):
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(_config(), path), "maxmin:2", 5, 3, stats="stale")
    grid = LocalGrid(make_client_app(run.settings), 20)
    run_strategy(grid, run)
    hist, stats = run.result.frames()
    train = [m for m in grid.sent if m.metadata.message_type == "train"]
    phases = [m.content["config"]["fedsel-phase"] for m in train]
    assert phases.count("measure") == 20  # round 0 only
    assert phases.count("commit") == 10  # round 0's picks commit the updates they measured
    assert (stats.groupby("round").size() == 20).all()
    # round 2: the rows of round 1's selection were measured then, the rest at round 0
    r2 = stats[stats["round"] == 2].set_index("client_id")
    chosen1 = set(hist["selected"].iloc[1].split(";"))
    assert set(r2.index[r2["measured_round"] == 1]) == chosen1
    assert all(len(s.split(";")) == 5 for s in hist["selected"])


def test_pool_measures_p_nodes_and_commits_their_updates(data_file):
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(_config(), path), "maxmin:2", 5, 3, stats="pool:8")
    grid = LocalGrid(make_client_app(run.settings), 20)
    run_strategy(grid, run)
    hist, stats = run.result.frames()
    train = [m for m in grid.sent if m.metadata.message_type == "train"]
    phases = [m.content["config"]["fedsel-phase"] for m in train]
    assert phases == ["measure"] * 24  # eight a round, nobody trains a second time
    assert (stats.groupby("round").size() == 8).all()
    for t, sel in enumerate(hist["selected"]):
        pool = set(stats.loc[stats["round"] == t, "client_id"])
        assert set(sel.split(";")) <= pool and len(sel.split(";")) == 5
    assert not hist["upper_bound"].any() and (hist["stats_mode"] == "pool:8").all()
    per_node = hist["cost_bytes_down"].iloc[0] / 8
    assert (hist["cost_bytes_down"] == 8 * per_node).all()
    # the pool is drawn ∝ the sizes reported so far: rounds 1 and 2 differ from round 0's
    pools = [frozenset(stats.loc[stats["round"] == t, "client_id"]) for t in range(3)]
    assert len(set(pools)) > 1


@pytest.mark.parametrize("info", ["probe", "predicted", "boosted", "drift"])
def test_probe_phase_matches_the_in_process_loop(data_file, info):
    """The probe pass as a message phase: every node answers a probe message (no training)
    against the server's validation gradients, the K chosen train; selections, predictions and
    the client work charged equal the in-process loop's."""
    data, path = data_file
    config = _config()
    run = FlowerRun(DigitsSettings.of(config, path), "maxmin:2", 5, 3, stats=info)
    grid = LocalGrid(make_client_app(run.settings), 20)
    run_strategy(grid, run)
    hist, stats = run.result.frames()
    phases = [m.content["config"]["fedsel-phase"] for m in grid.sent
              if m.metadata.message_type == "train"]  # fmt: skip
    assert phases.count("probe") == 60 and phases.count("commit") == 15
    assert stats["predicted"].all() and not hist["upper_bound"].any()
    ref = _oracle_run(config, data, "maxmin:2", 3, 5, stats=info)
    r = ref.history
    assert list(hist["selected"]) == list(r["selected"])
    np.testing.assert_allclose(hist["pred_worst"], r["pred_worst"], atol=1e-3)
    for col in ("cost_train_samples", "cost_probe_samples"):
        assert (hist[col].to_numpy() == r[col].to_numpy()).all(), col
    for d in DOMAINS:
        np.testing.assert_allclose(hist[f"acc_{d}"], r[f"acc_{d}"], atol=100 / N_TEST + 1e-9)


def _every_information_model() -> list[str]:
    """Each registered information model, its argument filled where it takes one."""
    from selection.information import information_models

    example = {"P": "4", "A": "20", "R": "70"}
    out = []
    for cls in information_models().values():
        name, _, arg = cls.spec_form().partition(":")
        out.append(f"{name}:{example[arg]}" if arg else name)
    return out


@pytest.mark.parametrize("info", _every_information_model())
def test_a_flower_run_is_charged_exactly_as_fedsel_train(data_file, info):
    """Issue 53: the same federation, seed and information model cost the same bytes a round
    in both drivers (a Flower probe run was charged 216 B a round more: its replies' metric
    records were counted whole, bookkeeping included, where fedsel train charges what the
    model declares; both now charge by fl_oracle.experiments.cost.upload_floats)."""
    data, path = data_file
    config = _config(clients_per_domain=1)
    run = FlowerRun(DigitsSettings.of(config, path), "maxmin:2", 2, 2, stats=info)
    hist, _ = run_flower(run, 4, engine="local").frames()
    ref = _oracle_run(config, data, "maxmin:2", 2, 2, stats=info).history
    assert list(hist["stats_mode"]) == list(ref["stats_mode"]) == [info] * 2
    # the same history: every column of the loop's row (Flower adds its own bookkeeping)
    assert set(ref.columns) - set(hist.columns) == set()
    for col in ("cost_bytes_up", "cost_bytes_down"):
        assert hist[col].tolist() == ref[col].astype(float).tolist(), col
    if not info.startswith("pool"):  # Flower draws its first pool uniformly (no sizes yet)
        assert list(hist["selected"]) == list(ref["selected"])
        for col in ("cost_train_samples", "cost_probe_samples"):
            assert hist[col].tolist() == ref[col].astype(float).tolist(), col


def test_a_plugin_information_model_runs_in_both_drivers_alike(data_file):
    """Issue 49: both drivers play one round (fl_oracle.experiments.transport.play_round), so a
    model the drivers never heard of (here: every client trains in even rounds, the others
    show each client's last report) runs in Flower exactly as in fedsel train: the same
    choices, the same work and bytes charged, the same statistics shown."""
    from selection.information.base import _REGISTRY, register
    from selection.information.stale import Stale

    @register
    class EveryOther(Stale):
        name = "every-other"
        summary = "every client trains in even rounds; odd rounds show the last reports"

        def trains_before(self, t, clients, k):
            if t % 2 == 0:
                return [str(c) for c in clients["client_id"]]
            return super().trains_before(t, clients, k)

    try:
        data, path = data_file
        config = _config(clients_per_domain=1)
        run = FlowerRun(DigitsSettings.of(config, path), "maxmin:2", 2, 3, stats="every-other")
        hist, stats = run_flower(run, 4, engine="local").frames()
        ref = _oracle_run(config, data, "maxmin:2", 3, 2, stats="every-other")
    finally:
        del _REGISTRY["every-other"]
    r = ref.history
    assert list(hist["selected"]) == list(r["selected"])
    # rounds 0 and 2: all four train; round 1: the two committed train after the choice
    assert hist["cost_bytes_up"].tolist() == r["cost_bytes_up"].astype(float).tolist()
    assert hist["cost_train_samples"].tolist() == r["cost_train_samples"].astype(float).tolist()
    assert r["cost_train_samples"].iloc[0] > r["cost_train_samples"].iloc[1]
    assert stats.groupby("round")["measured_round"].min().tolist() == [0, 0, 2]
    assert ref.stats.groupby("round")["measured_round"].min().tolist() == [0, 0, 2]


@pytest.mark.parametrize("model", ["probe", "predicted", "stale", "pool:8"])
def test_the_strategy_runs_the_specs_own_information_model(model):
    """A spec's @MODEL is the strategy's model; a stats naming another one is refused."""
    kw = {
        "server": ServerSide(
            validation_gradients=lambda w: None, evaluate_candidates=lambda w, d: {}
        )
    }
    s = FedselStrategy(f"maxmin:2@{model}", k=2, **kw)
    assert s.stats_mode == model
    assert FedselStrategy(f"maxmin:2@{model}", k=2, stats=model, **kw).stats_mode == model
    other = "fresh"
    with pytest.raises(ValueError, match=f"--information {other} contradicts the spec's @{model}"):
        FedselStrategy(f"maxmin:2@{model}", k=2, stats=other, **kw)
    assert FedselStrategy("proportional", k=2).stats_mode == "fresh"  # as before: every node


def test_a_bad_probe_reply_is_that_nodes_failure_not_the_rounds(data_file):
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(_config(), path), "maxmin:2", 5, 1, stats="probe")
    inner = make_client_app(run.settings)

    def app(message: Message, context) -> Message:
        reply = inner(message, context)
        pid = int(context.node_config["partition-id"])
        if message.content["config"].get("fedsel-phase") == "probe" and pid in (2, 3):
            m = dict(reply.content["metrics"])
            m.pop("x") if pid == 2 else m.update({"loss": float("nan")})
            reply.content["metrics"] = MetricRecord(m)
        return reply

    run_strategy(LocalGrid(app, 20), run)
    hist, stats = run.result.frames()
    failed = hist["failed"].iloc[0].split(";")
    assert len(stats) == 18 and len(failed) == 2 and not set(failed) & set(stats["client_id"])
    failures = hist["failures"].iloc[0]
    assert "probe reply: lacks x" in failures and "non-finite statistics" in failures


def test_information_models_flower_cannot_run_are_refused():
    with pytest.raises(ValueError, match="needs the server's validation_gradients"):
        FedselStrategy("maxmin:2", k=2, stats="probe")
    with pytest.raises(ValueError, match="needs P"):
        FedselStrategy("maxmin:2", k=2, stats="pool")


# ------------------------------------------------------------------ failures and bad input


def _faulty(settings, *, raise_for=(), bare_for=(), phase="commit", at_round=1) -> ClientApp:
    """The Digits ClientApp with faults: some partitions raise, others reply without stats."""
    inner = make_client_app(settings)

    def app(message: Message, context) -> Message:
        pid = int(context.node_config["partition-id"])
        cfg = message.content["config"] if "config" in message.content.config_records else {}
        hit = cfg.get("fedsel-phase") == phase and cfg.get("fedsel-round") == at_round
        if hit and pid in raise_for:
            raise RuntimeError(f"disk full on node {pid}")
        reply = inner(message, context)
        if hit and pid in bare_for:
            return Message(RecordDict({"delta": reply.content["delta"]}), reply_to=message)
        return reply

    return app


def test_a_node_failing_mid_round_is_left_out_and_logged(data_file):
    # stale: the K picks train at the commit (fresh commits the measured updates instead)
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(_config(), path), "all", 20, 2, stats="stale")
    run_strategy(LocalGrid(_faulty(run.settings, raise_for={3}, bare_for={7}), 20), run)
    hist, _ = run.result.frames()
    assert hist["failed"].tolist() == ["", "mnist-3;usps-2"]
    assert "disk full on node 3" in hist["failures"].iloc[1]
    assert "reported no statistics" in hist["failures"].iloc[1]
    assert hist["n_aggregated"].tolist() == [20, 18]
    assert np.isfinite(hist["acc_avg"]).all()


def test_a_stale_run_goes_on_when_the_only_nodes_it_asks_fail():
    """Stale asks only the nodes it has never heard from; when all of those fail again, the
    round goes on with the last reports of the others (a first version stopped the run:
    "only 0 of 4 connected nodes have statistics")."""

    def node(msg, ctx):  # node i: its model w + i + 1, F = i + 1; node 3 always fails
        i = int(ctx.node_config["partition-id"])
        if i == 3:
            raise RuntimeError("disk full")
        w = ArrayRecord({"w": Array(msg.content["arrays"]["w"].numpy() + i + 1.0)})
        m = {
            "partition-id": i,
            "num-examples": 10,
            "F": i + 1.0,
            "loss": 2.0,
            "label-hist": [1.0, 1.0],
            "U": 10.0 * i,
            "U_a": 10.0 * i,
            "U_b": 10.0 * i,
        }
        info = ConfigRecord({"domain": "ab"[i % 2]})
        content = RecordDict({"arrays": w, "metrics": MetricRecord(m), "fedsel": info})
        return Message(content, reply_to=msg)

    strategy = FedselStrategy("fisher-topk", k=2, stats="stale", fraction_evaluate=0.0)
    w0 = ArrayRecord({"w": Array(np.zeros(2, dtype=np.float32))})
    result = strategy.start(grid=LocalGrid(node, 4), initial_arrays=w0, num_rounds=3)
    hist = result.fedsel_history
    assert hist["selected"].tolist() == ["1;2"] * 3  # the two largest F that ever reported
    assert all("disk full" in f for f in hist["failures"])  # asked again every round
    # each round shows the picks' reports from their last commit (round 0: everyone measured)
    assert result.fedsel_stats.groupby("round")["measured_round"].max().tolist() == [0, 0, 1]


def test_measure_failures_and_silent_nodes_leave_the_table(data_file):
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(_config(), path), "maxmin:2", 5, 2)
    app = _faulty(run.settings, raise_for={0}, phase="measure", at_round=0)
    run_strategy(LocalGrid(app, 20, silent={1001 + 19}), run)
    hist, stats = run.result.frames()
    assert stats.groupby("round").size().tolist() == [18, 19]  # syn-4 never answers
    assert "node-1001: node error" in hist["failures"].iloc[0]  # not yet mapped to mnist-0
    assert "no reply in this exchange" in hist["failures"].iloc[0]
    assert hist["failed"].iloc[1] == "node-1020"  # never seen: known by its node id only
    assert "mnist-0" not in hist["selected"].iloc[0]


class _LosesNodeAtCommit(LocalGrid):
    """Node 1008 (partition 7, usps-2) dies when asked to commit in round 1."""

    def push_messages(self, messages):
        messages = list(messages)
        for m in messages:
            cfg = m.content["config"]
            self.lost = (
                {1008}
                if cfg.get("fedsel-phase") == "commit" and cfg.get("fedsel-round") == 1
                else set()
            )
            yield from super().push_messages([m])


def test_a_node_lost_mid_round_is_named_once_by_its_client_id(data_file):
    # a SuperLink answers for a dead node with an error whose sender is the SuperLink (node 1);
    # only reply_to_message_id names the node: the history must name that node, once
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(_config(), path), "all", 20, 2, stats="stale")
    run_strategy(_LosesNodeAtCommit(make_client_app(run.settings), 20), run)
    hist, _ = run.result.frames()
    assert hist["failed"].tolist() == ["", "usps-2"]
    assert hist["failures"].iloc[1] == "usps-2: node error: node went offline"
    assert hist["n_aggregated"].tolist() == [20, 19]
    # never seen before it died: known by its own node id, never by the SuperLink's
    run = FlowerRun(DigitsSettings.of(_config(), path), "proportional", 5, 1)
    run_strategy(LocalGrid(make_client_app(run.settings), 20, lost={1008}), run)
    hist, _ = run.result.frames()
    assert hist["failed"].tolist() == ["node-1008"]


def test_too_few_statistics_or_nodes_is_a_clear_error(data_file):
    _, path = data_file
    settings = DigitsSettings.of(_config(), path)
    run = FlowerRun(settings, "maxmin:2", 5, 1)
    app = _faulty(settings, raise_for=set(range(17)), phase="measure", at_round=0)
    with pytest.raises(FlowerRunError, match="only 3 of 20 connected nodes have statistics"):
        run_strategy(LocalGrid(app, 20), run)
    run = FlowerRun(settings, "maxmin:2", 5, 1, wait_for_nodes=0.2)
    with pytest.raises(FlowerRunError, match=r"K=5 exceeds the 3 connected node"):
        run_strategy(LocalGrid(make_client_app(settings), 3), run)


def test_unknown_selector_fails_at_construction():
    from selection.errors import SelectionError

    with pytest.raises(SelectionError):
        FedselStrategy("nope:3", k=2)


# ------------------------------------------------------------------ the strategy in any app


def _toy_client(message: Message, context) -> Message:
    """A user's client: returns its trained model (not a delta) and reports U itself."""
    pid = int(context.node_config["partition-id"])
    w = message.content["arrays"]["w"].numpy()
    dom = "a" if pid % 2 == 0 else "b"
    new = w + (pid + 1.0)
    hist = [float(pid + 1), 1.0, 0.0]
    metrics = {
        "partition-id": pid,
        "num-examples": 10 * (pid + 1),
        "F": 1.0 + pid,
        "loss": 2.0,
        "label-hist": hist,
        "U": 10.0 * pid,
        "U_a": 10.0 * pid if dom == "a" else 1.0,
        "U_b": 10.0 * pid if dom == "b" else 1.0,
    }
    content = RecordDict(
        {
            "arrays": ArrayRecord({"w": Array(new)}),
            "metrics": MetricRecord(metrics),
            "fedsel": ConfigRecord({"domain": dom}),
        }
    )
    return Message(content, reply_to=message)


def test_strategy_with_a_users_client_and_hand_made_replies():
    strategy = FedselStrategy("weighted:1,0,0,0,0", k=2, fraction_evaluate=0.0)
    grid = LocalGrid(_toy_client, 4)
    w0 = ArrayRecord({"w": Array(np.zeros(3, dtype=np.float32))})
    msgs = list(strategy.configure_train(1, w0, ConfigRecord(), grid))
    # fresh: Flower sends every node's measure message (configure_train sent nothing itself);
    # the choice is made on their replies and the top-U nodes' updates are the commit
    assert grid.sent == [] and len(msgs) == 4
    assert all(m.content["config"]["fedsel-phase"] == "measure" for m in msgs)
    assert all("proximal-mu" in m.content["config"] for m in msgs)
    arrays, metrics = strategy.aggregate_train(1, grid.send_and_receive(msgs))
    assert len(grid.sent) == 4  # nobody trains again
    # sample-weighted mean of the two updates: (30*3 + 40*4) / 70
    np.testing.assert_allclose(arrays["w"].numpy(), np.full(3, 250 / 70), rtol=1e-6)
    assert metrics["n-aggregated"] == 2
    row = strategy.history[0]
    assert row["selected"] == "2;3" and row["failed"] == ""
    # what crossed: w_t (3 float32) to each of the 4 nodes; each reply's update and metrics
    assert row["cost_bytes_down"] == 4 * 12 and row["upper_bound"]
    assert row["cost_bytes_up"] >= 4 * 12 and np.isnan(row["cost_train_samples"])
    table = strategy.tables[0]
    assert list(table["client_id"]) == ["0", "1", "2", "3"]
    assert table["B"].between(0, np.log(2)).all()


# ------------------------------------------------------------------ the command


@pytest.fixture(scope="module")
def flower_cli(data_file):
    import fl_oracle.cli.flower as cli_flower
    from fl_oracle.cli import main

    _, path = data_file
    mp = pytest.MonkeyPatch()
    keep = ("seed", "clients_per_domain", "mu", "gamma", "lr", "local_epochs")

    def tiny(config):
        over = {a: getattr(config, a) for a in keep}
        over["lr"] = 0.2 if config.lr == 0.05 else config.lr  # the tiny model needs a bigger step
        return DigitsSettings.of(tiny_config(**over), path)

    mp.setattr(cli_flower, "make_settings", tiny)

    def run(*args: str, code: int = 0, out: Path | None = None):
        try:
            main(["flower", *args] + (["--out", str(out)] if out is not None else []))
        except SystemExit as exc:
            assert (exc.code or 0) == code, f"fedsel flower {' '.join(args)} exited {exc.code}"
        else:
            assert code == 0

    yield run, tiny
    mp.undo()


def test_fedsel_flower_on_the_simulation_engine_matches_fedsel_train(
    flower_cli, data_file, tmp_path
):
    """The issue's command on Flower's Ray engine (tiny data), against the in-process loop."""
    run, tiny = flower_cli
    args = "--selector maxmin:2 --k 5 --rounds 3 --num-supernodes 20 --seed 0 --num-cpus 2"
    run(*args.split(), out=tmp_path)
    hist = pd.read_csv(tmp_path / "history.csv", keep_default_na=False)
    stats = pd.read_parquet(tmp_path / "stats.parquet")
    assert all(len(s.split(";")) == 5 for s in hist["selected"])
    data, _ = data_file
    from fl_oracle.sim.config import OracleConfig

    config = tiny(OracleConfig(seed=0, clients_per_domain=5)).config
    assert_same_run(hist, stats, _oracle_run(config, data, "maxmin:2", 3, 5))
    rec = tomllib.loads((tmp_path / "config.toml").read_text())
    assert rec["run"]["engine"] == "flower-ray" and rec["run"]["num_supernodes"] == 20
    assert rec["clients_per_domain"] == 5


@pytest.mark.parametrize(
    ("selector", "stats", "mode"),
    [("maxmin:2@probe", None, "probe"), ("maxmin:2@pool:8", None, "pool:8"),
     ("maxmin:2@predicted", None, "predicted"), ("maxmin:2@stale", "stale", "stale"),
     ("maxmin:2", None, "fresh"), ("proportional", None, "fresh")],
)  # fmt: skip
def test_fedsel_flower_honours_the_specs_information_model(
    flower_cli, tmp_path, selector, stats, mode
):
    """Issue 53: ``--selector maxmin:2@probe`` ran fresh (upper_bound True) on Flower."""
    run, _ = flower_cli
    extra = ["--information", stats] if stats else []
    run("--selector", selector, "--k", "4", "--rounds", "1", "--num-supernodes", "20",
        "--engine", "local", *extra, out=tmp_path)  # fmt: skip
    hist = pd.read_csv(tmp_path / "history.csv", keep_default_na=False)
    assert list(hist["stats_mode"]) == [mode]
    assert list(hist["upper_bound"]) == [mode == "fresh"]
    assert tomllib.loads((tmp_path / "config.toml").read_text())["run"]["stats_mode"] == mode


def test_fedsel_flower_local_engine_and_bad_input(flower_cli, tmp_path, capsys):
    run, _ = flower_cli
    base = ["--rounds", "1", "--num-supernodes", "20", "--engine", "local"]
    run("--selector", "eps:5", "--k", "4", *base, out=tmp_path / "ok")
    hist = pd.read_csv(tmp_path / "ok" / "history.csv", keep_default_na=False)
    assert len(hist) == 1 and len(hist["selected"].iloc[0].split(";")) == 4
    run("--selector", "maxmin:2", "--k", "4", "--information", "probe", *base, out=tmp_path / "pr")
    hist = pd.read_csv(tmp_path / "pr" / "history.csv", keep_default_na=False)
    assert list(hist["stats_mode"]) == ["probe"] and hist["cost_probe_samples"].iloc[0] > 0
    capsys.readouterr()
    run("--selector", "random", "--k", "4", "--information", "pool", *base, code=2,
        out=tmp_path / "bad")  # fmt: skip
    assert "pool needs P" in capsys.readouterr().err
    # what Flower's replies cannot serve is refused before any data or engine starts
    for spec, needle in (("maxmin:2@ensemble+verify", "needs every candidate's validation"),
                         ("maxmin:2@verify", "verified picks need")):  # fmt: skip
        run("--selector", spec, "--k", "4", *base, code=2, out=tmp_path / "bad")
        err = capsys.readouterr().err.strip().splitlines()
        assert needle in err[-1] and len(err) == 1
    run("--selector", "nope:1", "--k", "4", *base, code=2, out=tmp_path / "bad")
    assert "nope" in capsys.readouterr().err
    run("--selector", "random", "--k", "25", *base, code=2, out=tmp_path / "bad")
    assert "K=25 exceeds the 20 nodes" in capsys.readouterr().err
    run("--selector", "random", "--k", "2", "--rounds", "1", "--num-supernodes", "10",
        code=2, out=tmp_path / "bad")  # fmt: skip
    assert "multiple of 4" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    # one run per folder: a second run into it is refused and nothing it holds changes;
    # --overwrite replaces it
    before = {p.name: p.read_bytes() for p in (tmp_path / "ok").iterdir() if p.is_file()}
    run("--selector", "random", "--k", "4", *base, code=2, out=tmp_path / "ok")
    err = capsys.readouterr().err
    assert "already holds a run (flower" in err and "--overwrite" in err
    assert {p.name: p.read_bytes() for p in (tmp_path / "ok").iterdir() if p.is_file()} == before
    (tmp_path / "tr").mkdir()
    (tmp_path / "tr" / "history.csv").write_text("round\n0\n")
    run("--selector", "random", "--k", "4", *base, code=2, out=tmp_path / "tr")
    assert "already holds a run (train" in capsys.readouterr().err
    run("--selector", "random", "--k", "4", *base, "--overwrite", out=tmp_path / "ok")
    again = pd.read_csv(tmp_path / "ok" / "history.csv", keep_default_na=False)
    assert again["selector"].iloc[0] == "random"


def test_flwr_run_follows_the_run_folder_rule(tmp_path, monkeypatch):
    """The ServerApp of ``flwr run``: config.toml with the record, another run refused,
    ``overwrite = true`` replaces it, the lock free afterwards."""
    import types

    import fl_oracle.experiments.flower.server_app as sa
    from fl_oracle.experiments.runfolder import RunFolderError

    ran = []

    def fake_strategy(grid, run):
        ran.append(run.selector)
        sa.write_run(run.out, pd.DataFrame({"round": [0], "selector": [run.selector]}),
                     pd.DataFrame({"round": [0]}))  # fmt: skip

    monkeypatch.setattr(sa, "run_strategy", fake_strategy)
    monkeypatch.setattr(sa, "DigitsServer", lambda settings: types.SimpleNamespace(provenance=dict))
    out = tmp_path / "fl"

    def ctx(**extra):
        rc = {"num-partitions": 8, "selector": "random", "k": 2, "out": str(out), **extra}
        return types.SimpleNamespace(run_config=rc)

    main = getattr(sa._main, "__wrapped__", sa._main)
    main(None, ctx())
    rec = tomllib.loads((out / "config.toml").read_text())
    assert rec["run"]["engine"] == "flower-deployment" and rec["run"]["selector"] == "random"
    assert rec["run"]["num_supernodes"] == 8 and rec["clients_per_domain"] == 2
    with pytest.raises(RunFolderError, match="already holds a run \\(flower"):
        main(None, ctx(selector="eps:5"))
    assert ran == ["random"]
    main(None, ctx(selector="eps:5", overwrite=True))
    assert ran == ["random", "eps:5"]
    assert pd.read_csv(out / "history.csv")["selector"].tolist() == ["eps:5"]
    import fcntl

    with open(out / ".fedsel.lock", "a") as fh:  # released
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_deployed_node_trains_on_its_own_files(data_file, tmp_path):
    # node 19 (partition 19, syn-4) reads its own SYN files (syn/train/<digit>/*.png, a layout
    # the oracle reads) from --node-config data-root=... domain=syn, not the simulated shard
    from PIL import Image

    rng = np.random.default_rng(0)
    for d in range(10):
        folder = tmp_path / "own" / "syn" / "train" / str(d)
        folder.mkdir(parents=True)
        for j in range(4):
            arr = rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)
            Image.fromarray(arr).save(folder / f"{j}.png")
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(_config(), path), "proportional", 5, 2)
    grid = LocalGrid(make_client_app(run.settings), 20)
    grid.contexts[1020].node_config.update({"data-root": str(tmp_path / "own"), "domain": "syn"})
    run_strategy(grid, run)
    hist, stats = run.result.frames()
    assert hist["failed"].tolist() == ["", ""]
    own = stats[stats["client_id"] == "syn-4"]
    assert (own["n_samples"] == 39).all()  # its 40 files, one kept for the partition's validation
    others = stats[stats["client_id"] != "syn-4"]
    assert (others["n_samples"] != 39).all()
    grid.contexts[1020].node_config.pop("domain")
    run = FlowerRun(DigitsSettings.of(_config(), path), "proportional", 5, 1)
    run_strategy(grid, run)
    hist, _ = run.result.frames()
    assert "no domain" in hist["failures"].iloc[0]


def test_run_config_keys_are_read_in_one_place():
    from fl_oracle.experiments.flower.digits import (
        settings_from_run_config,
        strategy_run_config,
    )

    v = strategy_run_config({"k": "3", "overwrite": "true"})
    assert v["k"] == 3 and v["overwrite"] is True and v["selector"] == "maxmin:2"
    with pytest.raises(
        ValueError, match="'selectr' is not one fedsel reads; did you mean 'selector'"
    ):
        settings_from_run_config({"selectr": "eps:5"}, 20)
    import tomllib as _t

    app_cfg = _t.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    defaults = app_cfg["tool"]["flwr"]["app"]["config"]
    # every key fedsel reads is in the app config (flwr run refuses overrides of other keys),
    # and the app config's defaults are the oracle's
    from fl_oracle.experiments.flower.digits import RUN_CONFIG_FIELDS, RUN_CONFIG_STRATEGY
    from fl_oracle.sim.config import OracleConfig

    assert set(defaults) == set(RUN_CONFIG_FIELDS) | set(RUN_CONFIG_STRATEGY)
    got = settings_from_run_config(defaults, 20).config
    assert got == OracleConfig(clients_per_domain=5, device="cpu")


@pytest.mark.slow  # a second Ray start beside the default suite's: make test-all runs it
def test_without_a_project_folder_the_ray_engine_falls_back_to_run_simulation(
    data_file, monkeypatch
):
    # installed from a wheel, flwr run has no app folder to build: the in-process simulation
    # entry point runs the same apps, with the same selections as the local engine
    monkeypatch.setattr("shutil.which", lambda *a, **k: None)  # no flwr command to run
    _, path = data_file
    ray_run = FlowerRun(DigitsSettings.of(_config(), path), "maxmin:2", 5, 2)
    run_flower(ray_run, 20, engine="ray", num_cpus=2, client_cpus=1.0)
    local = FlowerRun(DigitsSettings.of(_config(), path), "maxmin:2", 5, 2)
    run_flower(local, 20, engine="local")
    a, _ = ray_run.result.frames()
    b, _ = local.result.frames()
    assert a["selected"].tolist() == b["selected"].tolist()


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("random@ensemble", "random is a baseline rule: it reads no surrogate"),
        ("maxmin:2@ensemble+verify", "needs every candidate's validation logits"),
        ("divfl:probe", "reads the nodes' gradients at the model they received"),
    ],
)
def test_fedsel_flower_refuses_before_flower_starts(tmp_path, spec, needle):
    """Issue 40: a real ``fedsel flower`` process on the default (Ray) engine answers a selector
    it cannot run with its one line alone, in seconds: no Flower log line beside it (the
    refusal comes before any data, SuperLink or engine), exit 2, no run folder."""
    import os
    import subprocess
    import sys
    import time

    from helpers import PYTHONPATH

    out = tmp_path / "run"
    code = "from fl_oracle.cli import main; main()"
    argv = ["flower", "--selector", spec, "--k", "2", "--rounds", "1", "--data", "generated"]
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", code, *argv, "--out", str(out)],
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - t0
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(err) == 1, r.stderr
    assert err[0].startswith("fedsel: error: ") and needle in err[0], err
    assert r.stdout == "" and not out.exists()
    assert took < 30, took


def test_fedsel_flower_help_says_what_flower_cannot_serve():
    """The --selector help no longer advertises, unqualified, what flower refuses."""
    from fl_oracle.cli.flower import flower_selector_help

    text = flower_selector_help()
    assert "Not in Flower" in text and "ensemble, softvote surrogates and verify" in text


@pytest.mark.parametrize("spec", ["weighted:1,0,0,0,0", "proportional"])
def test_flowers_dp_wrapper_composes_with_the_strategy(spec):
    """Flower's own DifferentialPrivacyServerSideFixedClipping wraps FedselStrategy: the
    messages configure_train returns are the round's training, the wrapper clips every reply's
    model to the clipping norm around w_t before fedsel aggregates, then noises the result."""
    from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping

    inner = FedselStrategy(spec, k=2, fraction_evaluate=0.0)
    dp = DifferentialPrivacyServerSideFixedClipping(
        inner, noise_multiplier=0.0, clipping_norm=0.5, num_sampled_clients=2
    )
    w0 = ArrayRecord({"w": Array(np.zeros(3, dtype=np.float32))})
    result = dp.start(grid=LocalGrid(_toy_client, 4), initial_arrays=w0, num_rounds=2)
    assert len(inner.history) == 2 and all(r["n_aggregated"] == 2 for r in inner.history)
    # every update (node i moves w by i + 1 in each coordinate) is clipped to norm 0.5, so
    # each round moves w by at most 0.5 (no noise at multiplier 0)
    w = result.arrays["w"].numpy()
    assert np.linalg.norm(w) <= 2 * 0.5 + 1e-5 and np.linalg.norm(w) > 0.5
    dp_noisy = DifferentialPrivacyServerSideFixedClipping(
        FedselStrategy(spec, k=2, fraction_evaluate=0.0),
        noise_multiplier=1.0, clipping_norm=0.5, num_sampled_clients=2,
    )  # fmt: skip
    noisy = dp_noisy.start(grid=LocalGrid(_toy_client, 4), initial_arrays=w0, num_rounds=1)
    assert not np.allclose(noisy.arrays["w"].numpy(), result.arrays["w"].numpy())


@pytest.mark.parametrize("verbose", [False, True])
def test_fedsel_flower_keeps_flowers_info_log_quiet_and_uncoloured_off_a_terminal(
    flower_cli, tmp_path, verbose
):
    """fedsel flower --engine local wrote about 48 lines of Flower's INFO log, with raw ANSI
    colour codes, to a stderr that was no terminal: warnings only unless --verbose, and no
    colour codes where the stream is not a terminal."""
    import io
    import logging

    from flwr.common.logger import LOGGER_NAME, ConsoleHandler

    run, _ = flower_cli
    [handler] = [
        h for h in logging.getLogger(LOGGER_NAME).handlers if isinstance(h, ConsoleHandler)
    ]
    log = io.StringIO()  # a pipe or a log file: not a terminal
    old = handler.setStream(log)
    try:
        run("--selector", "proportional", "--k", "4", "--rounds", "1", "--num-supernodes", "20",
            "--engine", "local", *(["--verbose"] if verbose else []), out=tmp_path)  # fmt: skip
    finally:
        handler.setStream(old)
    text = log.getvalue()
    assert "\x1b[" not in text
    assert ("INFO" in text) == verbose, text[:500]
    if not verbose:
        assert "proximal_mu=0.0" not in text and len(text.splitlines()) <= 2, text
