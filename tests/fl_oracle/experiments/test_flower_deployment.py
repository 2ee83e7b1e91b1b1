"""A real Flower deployment on 127.0.0.1: a SuperLink and 4 SuperNodes as separate processes,
``flwr run`` against them, one SuperNode killed (SIGKILL) mid-run. The Flower tutorial's deployment
steps are these commands."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("flwr")
pytestmark = [pytest.mark.slow, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
CLIENTS = ["mnist-0", "usps-0", "svhn-0", "syn-0"]  # partitions 0..3, one client per domain


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    fh = log.open("w")
    return subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)  # fmt: skip


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the node and the app processes it started
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def test_a_deployment_survives_a_killed_supernode_and_names_it(tmp_path):
    port = _free_port()
    home = tmp_path / "flwr-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "local-deployment"\n\n[superlink.local-deployment]\n'
        f'address = "127.0.0.1:{port}"\ninsecure = true\n'
    )
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}",
           "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1"}  # fmt: skip
    out = tmp_path / "history"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(_start([str(BIN / "flower-superlink"), "--insecure", "--port", str(port)],
                            tmp_path / "superlink.log", env))  # fmt: skip
        time.sleep(5)
        nodes = []
        for i in range(4):
            nodes.append(_start([str(BIN / "flower-supernode"), "--insecure", "--superlink",
                                 f"127.0.0.1:{port}", "--port", str(_free_port()),
                                 "--node-config", f"partition-id={i} num-partitions=4"],
                                tmp_path / f"supernode{i}.log", env))  # fmt: skip
        procs += nodes
        time.sleep(5)
        run = subprocess.Popen(
            [str(BIN / "flwr"), "run", str(ROOT), "local-deployment", "--run-config",
             f"num-partitions=4 selector='maxmin:2' k=2 num-server-rounds=4 out='{out}'",
             "--stream"],
            stdout=(tmp_path / "run.log").open("w"), stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        deadline = time.monotonic() + 400
        history = out / "history.csv"
        while time.monotonic() < deadline:  # round 0 done: kill partition 3's node
            if history.is_file() and len(pd.read_csv(history)) >= 1:
                break
            assert run.poll() is None, (tmp_path / "run.log").read_text()[-2000:]
            time.sleep(0.5)
        _kill(nodes[3])
        assert run.wait(timeout=max(1, deadline - time.monotonic())) == 0
        hist = pd.read_csv(history, keep_default_na=False)
        assert hist["round"].tolist() == [0, 1, 2, 3]
        failed = [f for row in hist["failed"] for f in row.split(";") if f]
        assert failed, "the killed node is named in the history"
        assert set(failed) == {"syn-0"}, hist[["round", "failed", "failures"]]
        assert all("syn-0" not in s.split(";") for s in hist["selected"][hist["failed"] != ""])
        stats = pd.read_parquet(out / "stats.parquet")
        last = stats[stats["round"] == 3]
        assert set(last["client_id"]) == set(CLIENTS[:3])  # the others' statistics intact
        assert last[["U", "F", "B", "cos_g"]].notna().all().all()
        assert (out / "config.toml").is_file()
        runs = subprocess.run([str(BIN / "flwr"), "ls", "local-deployment", "--format", "json"],
                              capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        listed = json.loads(runs.stdout)
        status = [r.get("status") for r in listed.get("runs", [])]
        assert status and all("finished:completed" in str(s) for s in status), listed
    finally:
        for p in procs:
            _kill(p)
