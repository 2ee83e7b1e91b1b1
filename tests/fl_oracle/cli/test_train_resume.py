"""`fedsel train --resume`: an interrupted run (Ctrl-C, or kill -9 at any moment) continues to
the history and statistics an uninterrupted run writes, bit for bit on this machine, for
selectors that carry state across rounds (queues, regressions, kept update vectors, random
streams); another command's run is refused, and the refusal of a second start says how many
rounds are done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from helpers import PYTHONPATH

# fedsel train in a process of its own on the tiny federation (kill -9 needs a process)
_SCRIPT = textwrap.dedent(
    """
    import sys
    from helpers import fake_oracle as fake
    import fl_oracle.cli.train as cli_train
    from fl_oracle.cli import main
    from fl_oracle.sim.config import OracleConfig
    from fl_oracle.sim.oracle import Oracle
    data = fake.tiny_data()
    def config(seed, federation=None, **kw):
        return OracleConfig(seed=int(seed), **{**fake.tiny_overrides(), "lr": 0.2})
    cli_train.make_config = config
    cli_train.make_oracle = lambda c, data_=None, **_: Oracle(c, data=data)
    main(["train", "--selector", sys.argv[1], "--k", "3", "--rounds", sys.argv[2],
          "--seed", "1", "--out", sys.argv[3], "--no-progress", *sys.argv[4:]])
    """
)

# stateful across rounds: a regression, virtual queues, kept update vectors, a GP, a bandit
# (two of them in the slow run: each case is three processes of a few seconds)
SELECTORS = [
    "maxmin:2@predicted", "eps-lt:5@probe", "divfl:stale",
    pytest.param("fedcor:2", marks=pytest.mark.slow), pytest.param("oort:0.9", marks=pytest.mark.slow),
]  # fmt: skip


def _train(selector: str, rounds: int, out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    return subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, selector, str(rounds), str(out), *extra],
        env=env, stderr=subprocess.PIPE, text=True, process_group=0,
    )  # fmt: skip


def _finished(proc: subprocess.Popen) -> str:
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return err


def _rounds(out: Path) -> int:
    try:
        return max(0, len((out / "history.csv").read_text().splitlines()) - 1)
    except OSError:
        return 0


def _same_run(a: Path, b: Path) -> None:
    """Equal histories and statistics but for the seconds a round took."""
    for name, read in (("history.csv", pd.read_csv), ("stats.parquet", pd.read_parquet)):
        x, y = read(a / name), read(b / name)
        timing = [c for c in x.columns if "seconds" in c]
        pd.testing.assert_frame_equal(x.drop(columns=timing), y.drop(columns=timing))


@pytest.mark.parametrize("selector", SELECTORS)
def test_a_killed_run_resumes_to_the_uninterrupted_history(selector, tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _finished(_train(selector, 5, whole))
    proc = _train(selector, 5, cut)
    try:
        deadline = time.monotonic() + 300
        while _rounds(cut) < 2:  # kill -9 once two rounds are written
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    done = _rounds(cut)
    assert 2 <= done < 5, done
    again = _train(selector, 5, cut)  # without --resume: refused, saying what is there
    _, err = again.communicate(timeout=120)
    assert again.returncode == 2 and f"{done} of 5 rounds done" in err and "--resume" in err
    _finished(_train(selector, 5, cut, "--resume"))
    _same_run(whole, cut)


def test_resume_refuses_another_commands_run_and_continues_to_more_rounds(tmp_path):
    out = tmp_path / "run"
    _finished(_train("random", 2, out))
    other = _train("fisher-topk", 3, out, "--resume")
    _, err = other.communicate(timeout=120)
    assert other.returncode == 2 and "other selector" in err, err
    _finished(_train("random", 3, out, "--resume"))  # grown by a round
    whole = tmp_path / "whole"
    _finished(_train("random", 3, whole))
    _same_run(whole, out)


def test_an_interrupted_run_says_how_to_go_on(tmp_path):
    out = tmp_path / "run"
    proc = _train("random", 500, out)
    try:
        while _rounds(out) < 1:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert "finished rounds are kept in" in err and "--resume" in err, err
