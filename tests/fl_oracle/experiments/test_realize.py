"""Realized points: replaying a round of an oracle run gives the true aggregates' accuracies."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fl_oracle.sim.oracle as oracle_mod
from fl_oracle.cli import main
from fl_oracle.errors import CheckpointError, OracleError
from fl_oracle.experiments.oracle_run import run_oracle
from fl_oracle.experiments.realize import realize_selections
from fl_oracle.sim.oracle import Oracle

from helpers.oracle import tiny_config, tiny_data

DATA = tiny_data()
CFG = tiny_config(k=3, lr=0.2)
SELS = [("mnist-0", "svhn-1"), ("usps-0",), ("mnist-1", "usps-1", "syn-0")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    run_oracle(CFG, rounds=3, out=out, data=DATA, progress=False)
    return out


def _replayed_by_hand(run: Path, t: int):
    """The oracle driven again from scratch through the run's committed selections."""
    o = Oracle(CFG, data=DATA)
    hist = pd.read_csv(run / "rounds.csv")
    for r in range(t):
        o.round_stats()
        o.step(hist["selected"].iloc[r].split(";"))
    return [o.evaluate_aggregate(list(s)) for s in SELS]


@pytest.mark.parametrize("t", [0, 2])
def test_replay_equals_the_run_driven_again(run, t):
    stats = pd.read_parquet(run / "stats.parquet")
    real = realize_selections(run, t, SELS, stats[stats["round"] == t], data=DATA)
    want = _replayed_by_hand(run, t)
    assert real.domains == tuple(CFG.domains)
    np.testing.assert_array_equal(real.utility, [u for u, _ in want])
    np.testing.assert_array_equal(real.domain, np.stack([ud for _, ud in want]))
    assert real.drift == 0.0  # the host that made the run reproduces it bit for bit
    # a single client's realized U_d is its stored U_<d>
    row = stats[(stats["round"] == t) & (stats["client_id"] == "usps-0")]
    np.testing.assert_allclose(real.domain[1], row[[f"U_{d}" for d in CFG.domains]].iloc[0])


def test_replay_refuses_what_the_run_cannot_give(run):
    with pytest.raises(CheckpointError, match="no checkpoint round_00009"):
        realize_selections(run, 9, SELS, data=DATA)
    with pytest.raises(OracleError, match="'nope-0'"):
        realize_selections(run, 1, [("nope-0",)], data=DATA)


def test_sweep_realize_draws_and_records_the_realized_points(run, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(oracle_mod, "load_federation_data", lambda *a, **k: DATA)
    out = tmp_path / "sweep"
    main(["sweep", "--stats", str(run / "stats.parquet"), "--k", "2", "--method", "maxmin",
          "--delta", "0,5", "--round", "1", "--out", str(out), "--realize"])  # fmt: skip
    front = pd.read_csv(out / "front.csv")
    sels = [tuple(s.split(";")) for s in front["selected"]]
    real = realize_selections(run, 1, sels, data=DATA)
    np.testing.assert_allclose(front["realized_utility"], real.utility)
    np.testing.assert_allclose(front["realized_worst"], real.domain.min(1))
    np.testing.assert_allclose(front["realized_U_usps"], real.domain[:, 1])
    page = (out / "front.html").read_text()
    assert "maxmin, realized" in page and "replaying the round (--realize)" in page
    assert "replaying round 1" in capsys.readouterr().err


def test_sweep_realize_needs_an_oracle_run(tmp_path, capsys):
    stats = tmp_path / "stats.csv"
    stats.write_text(Path("results/examples/stats.csv").read_text())
    with pytest.raises(SystemExit) as exc:
        main(["sweep", "--stats", str(stats), "--k", "5", "--method", "eps", "--eps", "5",
              "--out", str(tmp_path / "o"), "--realize"])  # fmt: skip
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("fedsel: error: --realize needs the run folder")
    assert not (tmp_path / "o").exists()
