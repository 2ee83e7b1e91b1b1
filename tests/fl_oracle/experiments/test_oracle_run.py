"""The run loop: files, K sampling, and resume after a kill gives the uninterrupted tables."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from fl_oracle.errors import CheckpointError
from fl_oracle.experiments.oracle_run import run_oracle, sample_clients
from fl_oracle.sim.checkpoint import latest_checkpoint, load_checkpoint

from helpers import PYTHONPATH
from helpers.oracle import tiny_config, tiny_data

DATA = tiny_data()
CFG = tiny_config(k=3, lr=0.2)


class Killed(RuntimeError):
    pass


def _tables(out: Path):
    return pd.read_parquet(out / "stats.parquet"), pd.read_csv(out / "rounds.csv")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    run_oracle(CFG, rounds=2, out=out, data=DATA, progress=False)
    return out


def test_run_writes_every_file(uninterrupted):
    out = uninterrupted
    stats, rounds = _tables(out)
    assert sorted(stats["round"].unique()) == [0, 1] and len(stats) == 16
    pd.testing.assert_frame_equal(stats, pd.read_csv(out / "stats.csv"), check_dtype=False)
    assert rounds["selected"].str.count(";").eq(2).all()  # K = 3
    assert (out / "config.toml").read_text().startswith(CFG.to_toml())  # + [sources], [run]
    ck = latest_checkpoint(out / "checkpoints")
    assert ck.name == "round_00002.pt" and load_checkpoint(ck)["oracle"]["round"] == 2
    with pytest.raises(CheckpointError, match="already holds a run"):
        run_oracle(CFG, rounds=2, out=out, data=DATA, progress=False)


def test_resume_after_kill_is_identical(uninterrupted, tmp_path):
    def kill_after_first(t):
        if t == 0:
            raise Killed

    with pytest.raises(Killed):
        run_oracle(
            CFG, rounds=2, out=tmp_path, data=DATA, progress=False, after_round=kill_after_first
        )
    # a kill between the table writes and the checkpoint: tables hold a round the checkpoint lacks
    (tmp_path / "checkpoints" / "round_00001.pt").unlink()
    run_oracle(CFG, rounds=2, out=tmp_path, data=DATA, progress=False, resume=True)
    for a, b in zip(_tables(uninterrupted), _tables(tmp_path), strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_resume_refuses_other_config(uninterrupted):
    with pytest.raises(CheckpointError, match="mu"):
        run_oracle(
            CFG.replace(mu=0.5), rounds=3, out=uninterrupted, data=DATA, resume=True, progress=False
        )


def test_sample_clients_is_seeded_and_proportional():
    clients = pd.DataFrame({"client_id": ["a", "b", "c", "d"], "n_samples": [1000, 1, 1, 1]})
    picks = [sample_clients(clients, 1, seed=0, round_=r) for r in range(20)]
    assert sum(p == ["a"] for p in picks) >= 17
    assert sample_clients(clients, 2, seed=3, round_=1) == sample_clients(
        clients, 2, seed=3, round_=1
    )
    assert sample_clients(clients, None, seed=0, round_=0) == ["a", "b", "c", "d"]


_CHILD = textwrap.dedent(
    """
    import time
    from helpers import oracle as h
    from fl_oracle.experiments.oracle_run import run_oracle
    run_oracle(h.tiny_config(k=3, lr=0.2), rounds=4, out={out!r}, data=h.tiny_data(),
               progress=False, resume={resume}, after_round=lambda t: time.sleep(0.3))
    """
)


@pytest.mark.slow
def test_subprocess_killed_mid_run_resumes_identically(tmp_path):
    full, cut = tmp_path / "full", tmp_path / "cut"
    run_oracle(CFG, rounds=4, out=full, data=DATA, progress=False)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    code = _CHILD.format(out=str(cut), resume=False)
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.time() + 120
    while latest_checkpoint(cut / "checkpoints") is None and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = pd.read_parquet(cut / "stats.parquet")["round"].nunique()
    assert 1 <= done < 4
    run_oracle(CFG, rounds=4, out=cut, data=DATA, progress=False, resume=True)
    for a, b in zip(_tables(full), _tables(cut), strict=True):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("damage", ["drop_round", "duplicate_rows", "rounds_csv_cut"])
def test_resume_refuses_damaged_tables(uninterrupted, tmp_path, damage):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(uninterrupted, run, ignore=shutil.ignore_patterns(".fedsel.lock"))
    stats = pd.read_parquet(run / "stats.parquet")
    if damage == "drop_round":
        stats[stats["round"] != 0].to_parquet(run / "stats.parquet", index=False)
    elif damage == "duplicate_rows":
        pd.concat([stats, stats.iloc[:4]]).to_parquet(run / "stats.parquet", index=False)
    else:
        pd.read_csv(run / "rounds.csv").iloc[1:].to_csv(run / "rounds.csv", index=False)
    with pytest.raises(CheckpointError, match="cannot resume .*(stats.parquet|rounds.csv)"):
        run_oracle(CFG, rounds=4, out=run, data=DATA, progress=False, resume=True)


def test_resume_after_a_kill_before_anything_was_written_starts_afresh(uninterrupted, tmp_path):
    (tmp_path / ".fedsel.lock").write_text("123\n")  # what a kill -9 at start-up leaves
    run_oracle(CFG, rounds=2, out=tmp_path, data=DATA, progress=False, resume=True)
    for a, b in zip(_tables(uninterrupted), _tables(tmp_path), strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_logits_are_written_and_agree_with_the_stats(uninterrupted):
    import numpy as np

    from selection.logits import read_run_logits
    from selection.problem import SelectionProblem

    stats, _ = _tables(uninterrupted)
    for t in (0, 1):
        lg = read_run_logits(uninterrupted, t)
        assert lg.round == t and lg.z.dtype == np.float16
        part = stats[stats["round"] == t]
        assert sorted(lg.ids) == sorted(part["client_id"])
        # one client alone: the ensemble is that client's model; float16 may flip a near-tie
        p = SelectionProblem.from_stats(part, 1, surrogate="ensemble", logits=lg)
        from selection.surrogates import get_surrogate

        U, Ud = get_surrogate("ensemble").block(p, np.arange(p.n)[:, None])
        assert np.abs(Ud - p.Ud).max() <= 100.0 * 2 / lg.y.size * len(lg.domains)
        assert np.abs(U - p.U).mean() < 0.5
