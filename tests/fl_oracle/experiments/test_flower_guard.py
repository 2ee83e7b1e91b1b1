"""Claims a node makes are bounded (fl_oracle/experiments/flower/guard.py): sizes against the
declaration or the federation's others, update norms against the round's, identities against
what the node said before. A lying node, in process on the local grid: the run completes, the
liar is named once per round, and the aggregate stays with the honest nodes'."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from fl_oracle.experiments.flower.guard import FLOOR, Z_MAX, ClaimGuard, upper_fence
from fl_oracle.experiments.flower.local_grid import LocalGrid
from fl_oracle.experiments.flower.mod import fedsel_stats_mod
from fl_oracle.experiments.flower.server_side import NodePolicy, ServerSide
from fl_oracle.experiments.flower.strategy import FedselStrategy, flatten

from .test_flower import _config
from .test_flower_stock import DOMAINS, N_NODES, Net, evaluate_candidates, load_data, make_app

DIGITS = [600] * 5 + [72] * 5 + [732] * 5 + [100] * 5


def test_the_fence_is_robust_and_never_below_ten_times_the_median():
    assert upper_fence([5, 7]) is None  # too few to judge
    equal = upper_fence([100] * 10)
    assert equal == pytest.approx(100 * np.exp(Z_MAX * FLOOR)) == pytest.approx(1000)
    assert 30_000 < upper_fence(DIGITS) < 60_000  # Digits-4's own spread (72-732) is admitted


def test_sizes_are_capped_to_the_declaration_or_to_the_largest_honest_one():
    ids = [f"c{i}" for i in range(20)]
    honest = dict(zip(ids, DIGITS, strict=True))
    assert ClaimGuard().sizes(honest, {}) == {}  # the real federation: nothing capped
    lie = {**honest, "c0": 600 * 10**6}
    (n, why) = ClaimGuard().sizes(lie, {})["c0"]
    assert n == 732 and "600,000,000" in why
    # judged against the others only: a tenfold claim in a federation of equal sizes is caught,
    # and a claim cannot raise its own fence (Digits-4's two clusters would let it)
    assert ClaimGuard().sizes({**honest, "c10": 80_000}, {})["c10"][0] == 732
    assert set(ClaimGuard().sizes({f"e{i}": 100 for i in range(9)} | {"x": 1001}, {})) == {"x"}
    declared = ClaimGuard(declared_sizes=honest)
    caps = declared.sizes({"c0": 601, "c1": 600, "c5": 72}, {})
    assert caps == {"c0": (600, "claimed 601 examples, declared 600")}
    with pytest.raises(ValueError, match="below 1"):
        ClaimGuard(declared_sizes={"a": 0})


def test_an_outlying_update_is_named_and_clipped_only_when_asked():
    rng = np.random.default_rng(0)
    deltas = {f"c{i}": rng.normal(size=50) * (1 + 0.2 * i) for i in range(8)}
    assert ClaimGuard().updates(deltas) == {}
    deltas["c3"] = deltas["c3"] * 100
    named = ClaimGuard().updates(deltas)
    assert set(named) == {"c3"} and named["c3"][0] == 1.0 and "not clipped" in named["c3"][1]
    scale, why = ClaimGuard(clip=True).updates(deltas)["c3"]
    largest = max(np.linalg.norm(d) for c, d in deltas.items() if c != "c3")
    assert np.linalg.norm(deltas["c3"] * scale) == pytest.approx(largest)
    assert "clipped to" in why


# ---------------------------------------------------------------- a lying node, in process
LIAR, SPOOF = 3, 4  # partition ids: one inflates its size and its update, one claims partition 0


def _lying(app, liars=()):
    def client(msg, ctx):
        reply = app(msg, ctx)
        pid = int(ctx.node_config["partition-id"])
        if pid not in liars or not reply.has_content():
            return reply
        content = reply.content
        metrics = dict(next(iter(content.metric_records.values())))
        arrays = content["arrays"]
        if pid == LIAR:
            metrics["num-examples"] = int(metrics["num-examples"]) * 10**6
            w_t = flatten(msg.content["arrays"])
            w = flatten(arrays)
            scaled, i, sd = w_t + 100.0 * (w - w_t), 0, {}
            for name, a in Net().state_dict().items():
                sd[name] = torch.as_tensor(scaled[i : i + a.numel()]).reshape(a.shape)
                i += a.numel()
            arrays = ArrayRecord(sd)
        elif int(msg.content["config"]["server-round"]) > 1:  # from round 1 on, partition 0
            metrics["partition-id"] = 0
        out = RecordDict({"arrays": arrays, "metrics": MetricRecord(metrics)})
        for key, rec in content.config_records.items():
            out[key] = rec
        return reply.__class__(content=out, reply_to=msg)

    return client


def _run(*, liars=(), clip: bool = True, selector: str = "all", k: int = N_NODES):
    mod = fedsel_stats_mod(Net, lambda ctx: load_data(int(ctx.node_config["partition-id"])))
    grid = LocalGrid(_lying(make_app([mod]), liars), N_NODES)
    for i, ctx in enumerate(grid.contexts.values()):
        ctx.node_config["domain"] = DOMAINS[i % 2]
    s = FedselStrategy(selector, k=k, server=ServerSide(evaluate_candidates=evaluate_candidates),
                       nodes=NodePolicy(wait_for_nodes=0.1, clip_updates=clip))  # fmt: skip
    torch.manual_seed(0)
    result = s.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()), num_rounds=3)
    return s, flatten(result.arrays)


def test_a_lying_node_is_named_bounded_and_the_aggregate_stays_honest():
    honest, w_honest = _run()
    assert all(row["suspects"] == "" for row in honest.history)  # honest nodes: nothing flagged
    guarded, w_guarded = _run(liars=(LIAR,))
    _, w_open = _run(liars=(LIAR,), clip=False)
    assert len(guarded.history) == 3  # the run completes
    for t, row in enumerate(guarded.history):
        named = [part.split(":")[0] for part in row["suspects"].split(" | ") if part]
        assert named == [str(LIAR)], row["suspects"]  # once per round, only the liar
        assert "examples, beyond the others'" in row["suspects"] and "clipped to" in row["suspects"]
        table = guarded.tables[t].set_index("client_id")
        honest_max = table.drop(index=[str(LIAR)], errors="ignore")["n_samples"].max()
        assert table.loc[str(LIAR), "n_samples"] <= honest_max  # the selector saw the capped size
        assert table.loc[str(LIAR), "suspect"] != ""
    # the aggregate: within 20 % of the honest run's movement, where unguarded the liar takes it
    moved = np.linalg.norm(w_honest - flatten(ArrayRecord(Net().state_dict())))
    assert np.linalg.norm(w_guarded - w_honest) < 0.2 * moved
    assert np.linalg.norm(w_open - w_honest) > 5 * moved


def test_a_node_claiming_another_partition_is_refused_by_its_own_id():
    s, _ = _run(liars=(SPOOF,), selector="maxmin:2", k=2)
    assert len(s.history) == 3 and s.history[0]["failed"] == ""
    for row in s.history[1:]:  # from round 1 on it says it is partition 0
        assert row["failed"] == str(SPOOF), row["failures"]
        assert f"node {1001 + SPOOF} echoed partition of 0, was {SPOOF}" in row["failures"]
        assert str(SPOOF) not in row["selected"].split(";")


def test_a_failed_node_is_one_line_however_long_its_error():
    from fl_oracle.experiments.flower.codec import one_line

    wrapped = (
        "<class 'flwr.supercore.exception.ClientAppException'>:<'\n"
        "Exception ClientAppException occurred. Message: Traceback (most recent call last):\n"
        '  File "client_app.py", line 30, in train\n    trainloader, _ = load_data(ctx)\n'
        "TypeError: load_data() missing 2 required positional arguments\n'>"
    )
    assert one_line(wrapped) == "TypeError: load_data() missing 2 required positional arguments"
    assert one_line("<class 'ZeroDivisionError'>:<'division by zero'>") == (
        "ZeroDivisionError: division by zero"
    )
    assert one_line("Error: Node Unavailable\nmore") == "Error: Node Unavailable"
    assert one_line("") == "no reason given" and len(one_line("x" * 1000)) == 300

    def broken(msg, ctx):
        raise RuntimeError("mod failed\n" + "  a traceback line\n" * 50)

    grid = LocalGrid(broken, 3)
    s = FedselStrategy(
        "maxmin:2",
        k=2,
        server=ServerSide(evaluate_candidates=evaluate_candidates),
        nodes=NodePolicy(wait_for_nodes=0.1),
    )
    with pytest.raises(Exception, match="fewer than K=2") as err:
        s.start(grid=grid, initial_arrays=ArrayRecord(Net().state_dict()), num_rounds=1)
    text = str(err.value)
    assert text.count("node error") == 3 and "a traceback line" not in text and "\n" not in text


def test_fedsel_flower_starts_a_superlink_of_its_own_on_free_ports(monkeypatch):
    """flwr's local SuperLink listens on 39091/39093 unless told otherwise, and `flwr run`
    submits to whatever answers there: fedsel's run names free ports of its own (and its own
    FLWR_HOME), so a foreign SuperLink on the defaults never receives it."""
    import socket
    import subprocess
    import types

    from fl_oracle.experiments.flower import run as flower_run

    seen = []

    def fake_run(cmd, **kw):
        seen.append(kw["env"])
        return subprocess.CompletedProcess(cmd, 1, "", "stopped by the test")

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(flower_run, "_stop_local_superlink", lambda home: None)
    fake = types.SimpleNamespace(
        selector="maxmin:2", k=2, rounds=1, stats="fresh", timeout=5.0,
        settings=types.SimpleNamespace(config_toml="", data_file=""),
        result=types.SimpleNamespace(history=[], tables=[]),
    )  # fmt: skip
    for _ in range(2):
        with pytest.raises(RuntimeError, match="ended after 0 of 1 round "):
            flower_run._run_flwr(fake, 4, num_cpus=1, client_cpus=1.0)
    ports = [
        int(env[key])
        for env in seen
        for key in ("FLWR_LOCAL_SUPERLINK_HTTP_API_PORT", "FLWR_LOCAL_CONTROL_API_PORT")
    ]
    assert not {39091, 39093} & set(ports)
    assert seen[0]["FLWR_HOME"] != seen[1]["FLWR_HOME"]
    for port in ports:  # nothing else listens there now
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


@pytest.mark.slow  # a whole Ray-engine run (~80 s): make test-all runs it
def test_fedsel_flower_completes_beside_a_foreign_superlinks_ports(tmp_path):
    """Every port flwr's SuperLink takes by default (Fleet/ServerAppIo/SimulationIo 9091-9096,
    the local SuperLink's 39091 and 39093) held by a foreign listener, as a running foreign
    SuperLink would: fedsel's run uses its own and completes."""
    import os
    import socket
    import subprocess
    import sys

    from helpers import PYTHONPATH

    held = []
    try:
        for port in (9091, 9092, 9093, 9094, 9095, 9096, 39091, 39093):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # already held by something else: held all the same
                s.close()
                continue
            s.listen()
            held.append(s)
        out = tmp_path / "run"
        argv = ["flower", "--selector", "proportional", "--k", "2", "--rounds", "1",
                "--data", "generated", "--num-supernodes", "4", "--out", str(out)]  # fmt: skip
        r = subprocess.run(
            [sys.executable, "-c", "from fl_oracle.cli import main; main()", *argv],
            env={**os.environ, "PYTHONPATH": PYTHONPATH},
            capture_output=True,
            text=True,
            timeout=400,
        )
    finally:
        for s in held:
            s.close()
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "history.csv").is_file() and "1 round," in r.stdout + r.stderr


# ------------------------------------------- statistics that contradict the update or the model


def test_contradiction_is_the_sgd_bound_on_the_update():
    from fl_oracle.experiments.flower.guard import RHO_MAX, contradiction

    # 10 steps at lr 0.1 with sqrt(F) = 2: an update of norm 2 * rho
    assert contradiction(0.5 * 2.0, 4.0, 10, 0.1) is None  # rho 0.5: an honest client's
    assert contradiction(RHO_MAX * 2.0 * 0.999, 4.0, 10, 0.1) is None
    why = contradiction(100 * 0.5 * 2.0, 4.0, 10, 0.1)  # the same update, 100x
    assert why is not None and "F=4 contradicts its update" in why and "50x sqrt(F)" in why
    assert contradiction(0.0, 0.0, 0, 0.1) is None  # no update, nothing claimed
    assert "after 0 local steps" in contradiction(1.0, 4.0, 0, 0.1)
    assert "at most" in contradiction(1.0, 0.0, 10, 0.1)  # F = 0 moves nothing
    assert contradiction(1.0, 4.0, 10**6, 0.1, max_steps=40) == (
        "claimed 1,000,000 local steps, the plan allows 40"
    )


def test_the_model_fingerprint_names_the_weights():
    from fl_oracle.experiments.flower.guard import model_fingerprint

    w = np.linspace(-1, 1, 1000, dtype=np.float32)
    assert model_fingerprint(w) == model_fingerprint(w.astype(np.float64))  # float32 weights
    assert len(model_fingerprint(w)) == 16
    v = w.copy()
    v[500] = np.nextafter(v[500], np.float32(2))  # one weight, one ulp
    assert model_fingerprint(v) != model_fingerprint(w)


STEPS_LIAR, SCALER, REPLAYER = 3, 8, 13  # partition ids of the digits liars below


def _digits_liars(settings):
    """The Digits ClientApp, where three nodes lie about their statistics: ``SCALER`` returns
    100x its update with its honest F, ``STEPS_LIAR`` the same but claims 10^4x its steps to
    explain it, ``REPLAYER`` replays its round-0 statistics (F, loss and model-sha of w_0)
    with every later update."""
    from fl_oracle.experiments.flower.client_app import make_client_app

    inner, first = make_client_app(settings), {}

    def app(message: Message, context) -> Message:
        reply = inner(message, context)
        pid = int(context.node_config["partition-id"])
        if pid not in (STEPS_LIAR, SCALER, REPLAYER) or "delta" not in reply.content:
            return reply
        metrics = dict(reply.content["metrics"])
        info = dict(reply.content["fedsel"])
        delta = reply.content["delta"]["delta"].numpy()
        if pid in (SCALER, STEPS_LIAR):
            delta = 100.0 * delta
        if pid == STEPS_LIAR:
            metrics["steps"] = int(metrics["steps"]) * 10**4
        if pid == REPLAYER:
            first.setdefault(pid, ({k: metrics[k] for k in ("F", "loss")}, info["model-sha"]))
            metrics.update(first[pid][0])
            info["model-sha"] = first[pid][1]
        out = RecordDict({"delta": ArrayRecord({"delta": Array(delta)}),
                          "metrics": MetricRecord(metrics), "fedsel": ConfigRecord(info)})  # fmt: skip
        return Message(out, reply_to=message)

    return app


def test_statistics_that_contradict_the_update_or_the_model_are_refused(tmp_path):
    from fl_oracle.experiments.flower.digits import DigitsSettings, save_data
    from fl_oracle.experiments.flower.server_app import FlowerRun, run_strategy

    from helpers.oracle import tiny_data

    path = save_data(tiny_data(n_train=400), tmp_path / "tiny.pt")
    run = FlowerRun(DigitsSettings.of(_config(), path), "fisher-topk", 5, 3)
    run_strategy(LocalGrid(_digits_liars(run.settings), 20), run)
    hist, stats = run.result.frames()
    ids = {p: run.result.server.client_ids[p] for p in (STEPS_LIAR, SCALER, REPLAYER)}
    assert len(hist) == 3  # the run completes
    for t, row in hist.iterrows():
        failures = dict(part.split(": ", 1) for part in row["failures"].split(" | ") if part)
        liars = {ids[SCALER], ids[STEPS_LIAR]} | ({ids[REPLAYER]} if t > 0 else set())
        assert set(row["failed"].split(";")) == liars, row["failures"]
        assert "contradicts its update" in failures[ids[SCALER]]
        assert "local steps, the plan allows" in failures[ids[STEPS_LIAR]]
        if t > 0:  # w_0's statistics with w_t's update
            assert "statistics for model" in failures[ids[REPLAYER]]
        chosen = set(row["selected"].split(";"))
        assert not chosen & liars and len(chosen) == 5
        # nothing of theirs reached the selector: the round's table holds no row measured now
        table = stats[stats["round"] == t].set_index("client_id")
        assert not (table.reindex(list(liars))["measured_round"] == t).any()
