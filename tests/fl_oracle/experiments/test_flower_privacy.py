"""The privacy Mod on Flower: a run with noised statistics, the Mod's clipping and its
refusals (fl_oracle.experiments.flower.privacy_mod)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("opacus")

from fl_oracle.experiments.flower.client_app import make_client_app  # noqa: E402
from fl_oracle.experiments.flower.digits import DigitsSettings, save_data  # noqa: E402
from fl_oracle.experiments.flower.local_grid import LocalGrid  # noqa: E402
from fl_oracle.experiments.flower.privacy_mod import privatize_metrics  # noqa: E402
from fl_oracle.experiments.flower.server_app import FlowerRun, run_strategy  # noqa: E402
from fl_oracle.experiments.flower.server_side import ServerSide
from fl_oracle.experiments.privacy import FIELDS, StatsPrivacy  # noqa: E402

from helpers.oracle import tiny_config, tiny_data


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    data = tiny_data(n_train=200)
    return data, save_data(data, tmp_path_factory.mktemp("flowerdp") / "tiny.pt")


class _Zero:
    def normal(self, loc, scale, size):
        return np.zeros(size)


def test_the_mod_clips_every_reported_statistic_and_keeps_the_rest():
    m = {"loss": 99.0, "F": 1e30, "cos-g": -7.0, "x": [5.0, -5.0], "num-examples": 12,
         "label-hist": [6.0, 0.0, 6.0], "partition-id": 3}  # fmt: skip
    out = privatize_metrics(m, StatsPrivacy(epsilon=1.0, rounds=5), _Zero())
    assert out["loss"] == FIELDS["loss"][1] and out["cos-g"] == FIELDS["cos_g"][0]
    assert np.log(out["F"]) == pytest.approx(FIELDS["F"][1])
    assert out["x"] == [1.0, -1.0]
    assert sum(out["label-hist"]) == pytest.approx(12.0)  # counts of the same total
    assert out["num-examples"] == 12 and out["partition-id"] == 3
    assert privatize_metrics(m, StatsPrivacy(), _Zero()) == m  # off: untouched


def _probe_run(data_file, privacy):
    _, path = data_file
    config = tiny_config(seed=0, clients_per_domain=2, lr=0.2)
    run = FlowerRun(DigitsSettings.of(config, path), "maxmin:2", 3, 2, stats="probe",
                    privacy=privacy)  # fmt: skip
    grid = LocalGrid(make_client_app(run.settings, privacy), 8)
    run_strategy(grid, run)
    return run.result.frames()


def test_a_flower_run_with_the_mod_reports_noised_statistics(data_file):
    """The nodes' probe replies pass the Mod: at a small budget their losses differ from the
    noiseless run's on the same seed, and a repeat with the same seed is identical."""
    _, plain = _probe_run(data_file, None)
    p = StatsPrivacy(epsilon=0.5, rounds=2)
    h1, noisy = _probe_run(data_file, p)
    h2, again = _probe_run(data_file, p)
    assert len(h1) == 2 and (h1["stats_mode"] == "probe").all()
    # no honest node refused for its noised F (the guard judges F only without the mode)
    assert (h1["failed"] == "").all() and not h1["failures"].str.contains("refused").any()
    assert not np.allclose(plain["loss"].to_numpy(), noisy["loss"].to_numpy())
    lo, hi = FIELDS["loss"]
    assert noisy["loss"].between(lo, hi).all()
    assert list(h1["selected"]) == list(h2["selected"])
    np.testing.assert_array_equal(noisy["loss"].to_numpy(), again["loss"].to_numpy())


def test_flower_refuses_what_secure_aggregation_makes_impossible(data_file):
    _, path = data_file
    settings = DigitsSettings.of(tiny_config(seed=0, clients_per_domain=2), path)
    with pytest.raises(ValueError, match="stale is impossible under secure aggregation"):
        FlowerRun(settings, "maxmin:2", 3, 2, stats="stale",
                  privacy=StatsPrivacy(secure_aggregation=True))  # fmt: skip


def test_a_node_reports_once_a_round_and_no_evaluate_round_runs(data_file):
    """Under the privacy mode a committed node's commit reply repeats the statistics its probe
    reply released that round (one report a round, as the accountant counts; no two noisy
    copies to difference), and the evaluate round (unnoised loss, F, gradient) is skipped."""
    _, path = data_file
    config = tiny_config(seed=0, clients_per_domain=2, lr=0.2)
    p = StatsPrivacy(epsilon=0.5, rounds=2)
    run = FlowerRun(DigitsSettings.of(config, path), "maxmin:2", 3, 2, stats="probe", privacy=p)
    app = make_client_app(run.settings, p)
    replies = []

    def recorded(msg, ctx):
        reply = app(msg, ctx)
        replies.append((msg, ctx, reply))
        return reply

    grid = LocalGrid(recorded, 8)
    run_strategy(grid, run)
    assert not [m for m, _, _ in replies if m.metadata.message_type == "evaluate"]
    seen: dict[tuple, dict] = {}
    repeats = 0
    for msg, ctx, reply in replies:
        cfg = msg.content["config"]
        key = (int(ctx.node_config["partition-id"]), int(cfg.get("server-round", 0)))
        m = dict(reply.content["metrics"])
        if key in seen:
            repeats += 1
            for f in ("loss", "F", "label-hist"):
                assert m[f] == seen[key][f], (key, f)
        else:
            seen[key] = m
    assert repeats == 2 * 3  # K = 3 commits a round, two rounds


def test_under_secure_aggregation_flowers_probe_model_is_uncalibrated(data_file):
    from fl_oracle.experiments.flower.strategy import FedselStrategy

    strategy = FedselStrategy(
        "maxmin:2", 3, stats="probe",
        server=ServerSide(validation_gradients=lambda w: None, evaluate_candidates=lambda w, d: {}),
    )  # fmt: skip
    strategy.prepare_privacy(StatsPrivacy(secure_aggregation=True))
    assert strategy.model.calibrate is False


@pytest.mark.parametrize("rule", ["fisher-topk", "oort:0.9"])
def test_under_secure_aggregation_flower_serves_a_rule_on_the_probe_pass(data_file, rule):
    """A rule that reads what nodes report (F, loss) runs under secure aggregation on every
    node's probe pass, as fedsel train serves it; the rows carry the privacy columns."""
    _, path = data_file
    config = tiny_config(seed=0, clients_per_domain=2, lr=0.2)
    p = StatsPrivacy(rounds=2, secure_aggregation=True)
    run = FlowerRun(DigitsSettings.of(config, path), rule, 3, 2, privacy=p)
    assert run.stats == "probe"
    run_strategy(LocalGrid(make_client_app(run.settings, p), 8), run)
    h, stats = run.result.frames()
    assert len(h) == 2 and h["stats_mode"].eq("probe").all() and (h["failed"] == "").all()
    assert h["selected"].str.split(";").map(len).eq(3).all()
    assert np.isinf(h["dp_epsilon"]).all() and h["dp_z"].eq(0.0).all()


def test_a_private_flower_run_records_its_privacy_in_every_row_and_its_config(data_file):
    """dp_epsilon (the ε spent so far, growing to the budget) and dp_z in every history row,
    and [privacy] in config.toml, as fedsel train records them."""
    import tomllib

    from fl_oracle.experiments.flower.server_app import run_toml
    from fl_oracle.experiments.privacy import RunAccountant

    p = StatsPrivacy(epsilon=0.5, rounds=2)
    h, _ = _probe_run(data_file, p)
    acc = RunAccountant(p)
    assert list(h["dp_epsilon"]) == [acc.step(), acc.step()]
    assert h["dp_epsilon"].iloc[-1] <= 0.5 * (1 + 1e-3) and h["dp_z"].eq(p.z).all()
    _, path = data_file
    run = FlowerRun(DigitsSettings.of(tiny_config(seed=0, clients_per_domain=2), path),
                    "maxmin:2", 3, 2, stats="probe", privacy=p)  # fmt: skip
    record = tomllib.loads(run_toml(run, "flower-local", {}))["privacy"]
    assert record == {"dp_epsilon": 0.5, "dp_delta": p.delta, "dp_z": p.z,
                      "secure_aggregation": False}  # fmt: skip
