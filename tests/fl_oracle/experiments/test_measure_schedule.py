"""Training-only rounds: a measured round's statistics equal those of a run measuring every
round; rounds.csv marks measured rounds; the U readings; the run record in config.toml."""

import tomllib

import numpy as np
import pandas as pd
import pytest

from fl_oracle.experiments.oracle_run import measure_schedule, run_oracle
from fl_oracle.sim.config import OracleConfig

from helpers.oracle import tiny_config, tiny_data

DATA = tiny_data()


@pytest.mark.parametrize("k", [None, 3])
def test_measured_rounds_equal_a_fully_measured_run(tmp_path, k):
    cfg = tiny_config(k=k, lr=0.2)
    full = run_oracle(cfg, rounds=4, out=tmp_path / "full", data=DATA, progress=False)
    sparse = run_oracle(
        cfg,
        rounds=4,
        out=tmp_path / "sparse",
        data=DATA,
        progress=False,
        measure_round=measure_schedule(every=2, start=1),
    )
    assert sorted(sparse["round"].unique()) == [1, 3]
    pd.testing.assert_frame_equal(
        full[full["round"].isin([1, 3])].reset_index(drop=True), sparse.reset_index(drop=True)
    )
    rf, rs = (pd.read_csv(tmp_path / n / "rounds.csv") for n in ("full", "sparse"))
    assert rs["measured"].tolist() == [False, True, False, True] and rf["measured"].all()
    pd.testing.assert_frame_equal(rf.drop(columns="measured"), rs.drop(columns="measured"))
    # resume of a sparse run continues the schedule and keeps the measured rows
    more = run_oracle(
        cfg,
        rounds=6,
        out=tmp_path / "sparse",
        data=DATA,
        progress=False,
        resume=True,
        measure_round=measure_schedule(every=2, start=1),
    )
    assert sorted(more["round"].unique()) == [1, 3, 5]


def test_u_readings_and_run_record(tmp_path):
    cfg = tiny_config()
    stats = run_oracle(cfg, rounds=1, out=tmp_path / "r", data=DATA, progress=False)
    for col in ("U_own", "U_local", "dU"):
        assert col in stats.columns
    own = [stats.loc[i, f"U_{d}"] for i, d in enumerate(stats["domain"])]
    np.testing.assert_allclose(stats["U_own"], own)
    assert stats["U_local"].between(0, 100).all()
    assert ((stats["U"] - stats["dU"]).round(9).nunique()) == 1  # dU = U - acc(w_t)
    text = (tmp_path / "r" / "config.toml").read_text()
    assert OracleConfig.from_toml(text) == cfg
    raw = tomllib.loads(text)
    assert {"fedsel_version", "git_commit", "torch_version", "device", "threads"} <= set(raw["run"])
    assert raw["sources"]["mnist"]["train"]["n_images"] == 120


def test_no_local_holdout_drops_u_local(tmp_path):
    cfg = tiny_config(local_holdout=0)
    stats = run_oracle(cfg, rounds=1, out=tmp_path / "r", data=DATA, progress=False)
    assert "U_local" not in stats.columns and "U_own" in stats.columns


def test_measure_schedule_rules():
    m = measure_schedule(every=10, start=5, at=[0, 1])
    assert [t for t in range(30) if m(t)] == [0, 1, 5, 15, 25]
    with pytest.raises(ValueError):
        measure_schedule(every=0)
    only = measure_schedule(every=None, at=[0, 3])
    assert [t for t in range(10) if only(t)] == [0, 3]
    with pytest.raises(ValueError, match="give rounds"):
        measure_schedule(every=None, at=[])


_CLI_DATA: dict = {}  # the CLI's default client sizes (600 / 72 / 732 / 100), one per domain


@pytest.mark.parametrize(
    ("flags", "measured"),
    [
        (["--measure-at", "0,2"], [0, 2]),  # alone: only those rounds
        (["--measure-at", "3", "--measure-every", "2"], [0, 2, 3]),  # with a schedule: as well
        (["--measure-at", "0", "--measure-from", "2"], [0, 2, 3]),
    ],
)
def test_cli_measure_at_alone_measures_only_those_rounds(tmp_path, monkeypatch, flags, measured):
    import fl_oracle.sim.loading as loading
    import fl_oracle.sim.oracle as oracle_mod
    from fl_oracle.cli import main

    data = _CLI_DATA.setdefault("d", tiny_data(n_train=800, n_test=20))
    for module in (oracle_mod, loading):  # the Oracle's name and the runners'
        monkeypatch.setattr(module, "load_federation_data", lambda *a, **k: data)
    out = tmp_path / "run"
    main(["oracle", "--rounds", "4", "--out", str(out), "--clients-per-domain", "1",
          "--val-per-domain", "30", "--local-holdout", "0", "--model", "cnn-small",
          "--fisher-samples", "8", "--threads", "1", "--device", "cpu", "--no-progress",
          "--no-logits", *flags])  # fmt: skip
    stats = pd.read_parquet(out / "stats.parquet")
    assert sorted(stats["round"].unique()) == measured
    assert len(pd.read_csv(out / "rounds.csv")) == 4 and not (out / "logits").exists()
