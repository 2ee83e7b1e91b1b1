"""A real Flower deployment on 127.0.0.1 that lets in only its own nodes: a SuperLink with TLS
and SuperNode authentication (``--enable-supernode-auth``), 4 SuperNodes whose public keys are
registered through the Flower CLI (``flwr supernode register``), ``flwr run`` against them, one
SuperNode killed (SIGKILL) after round 0 — and, in its place, four SuperNodes that try to join
and are refused: one with the CA but a key never registered, one with the CA and no key, one
with a registered key but without the CA (TLS verification fails), one ``--insecure``. The
credentials come from ``fl_oracle.experiments.flower.certs``; the Flower tutorial's deployment
steps are these commands."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fl_oracle.experiments.flower.certs import make_credentials

pytest.importorskip("flwr")
pytestmark = [pytest.mark.slow, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
CLIENTS = ["mnist-0", "usps-0", "svhn-0", "syn-0"]  # partitions 0..3, one client per domain
# SuperNodes that try to join and must not: (flower-supernode flags, what their log says)
ROGUES = {
    "unregistered": (["--auth-supernode-private-key", "{creds}/supernode-5.key",
                      "--root-certificates", "{creds}/ca.crt"],
                     "Failed to activate SuperNode"),
    "no-key": (["--root-certificates", "{creds}/ca.crt"],
               "All SuperNodes must be registered via the CLI"),
    "no-ca": (["--auth-supernode-private-key", "{creds}/supernode-4.key"],  # registered key
              "CERTIFICATE_VERIFY_FAILED"),
    "insecure": (["--insecure"], "Failed to initialize the connection to the SuperLink"),
}  # fmt: skip


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


def _flwr(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "flwr"), *args], capture_output=True, text=True, env=env,
                          timeout=60)  # fmt: skip


def _register(key: Path, env: dict, deadline: float) -> int:
    """``flwr supernode register``: the node id the SuperLink gives the key (retried while the
    SuperLink starts; with ``--format json`` flwr 1.42 exits 0 on failure too, saying
    ``"success": false``)."""
    while True:
        out = _flwr(["supernode", "register", str(key), "local-deployment", "--format", "json"],
                    env)  # fmt: skip
        try:
            said = json.loads(out.stdout)
        except json.JSONDecodeError:
            said = {}
        if out.returncode == 0 and said.get("success"):
            return int(said["node-id"])
        assert time.monotonic() < deadline, out.stdout + out.stderr
        time.sleep(1)


def test_a_deployment_admits_only_its_nodes_and_survives_a_killed_one(tmp_path):
    port = _free_port()
    creds = tmp_path / "credentials"
    files = make_credentials(creds, n_nodes=6)  # 0-3 authorised, 4 (registered, no CA), 5
    home = tmp_path / "flwr-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "local-deployment"\n\n[superlink.local-deployment]\n'
        f'address = "127.0.0.1:{port}"\nroot-certificates = "{files["ca.crt"]}"\n'
    )
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}",
           "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1"}  # fmt: skip
    out = tmp_path / "history"
    superlink = [str(BIN / "flower-superlink"), "--ssl-ca-certfile", str(files["ca.crt"]),
                 "--ssl-certfile", str(files["server.pem"]), "--ssl-keyfile",
                 str(files["server.key"]), "--enable-supernode-auth", "--port", str(port)]  # fmt: skip
    supernode = [str(BIN / "flower-supernode"), "--superlink", f"127.0.0.1:{port}"]
    procs: list[subprocess.Popen] = []
    try:
        procs.append(_start(superlink, tmp_path / "superlink.log", env))
        deadline = time.monotonic() + 60
        ids = [_register(files[f"supernode-{i}.pub"], env, deadline) for i in range(5)]
        nodes = []
        for i in range(4):
            nodes.append(_start([*supernode, "--root-certificates", str(files["ca.crt"]),
                                 "--auth-supernode-private-key", str(files[f"supernode-{i}.key"]),
                                 "--port", str(_free_port()),
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
        # the rogues try to join the running federation, each claiming partition 0
        rogues = {}
        for name, (flags, _) in ROGUES.items():
            rogues[name] = _start([*supernode, *(f.format(creds=creds) for f in flags),
                                   "--max-retries", "2", "--port", str(_free_port()),
                                   "--node-config", "partition-id=0 num-partitions=4"],
                                  tmp_path / f"rogue-{name}.log", env)  # fmt: skip
        procs += rogues.values()
        assert run.wait(timeout=max(1, deadline - time.monotonic())) == 0

        # the rogues were refused, each for its own reason, and gave up
        for name, proc in rogues.items():
            assert proc.wait(timeout=60) != 0, name
            log = (tmp_path / f"rogue-{name}.log").read_text()
            assert ROGUES[name][1] in log, (name, log[-2000:])
            assert "SuperNode ID:" not in log, (name, log[-2000:])  # never activated
        link_log = (tmp_path / "superlink.log").read_text()
        assert "No SuperNode found with the given public key" in link_log  # unregistered
        assert "[/v1/fleet/register-node][ApiError:2001]" in link_log  # no key
        activated = {int(n) for n in re.findall(r"Activated node_id=(\d+)", link_log)}
        assert activated == set(ids[:4]), (activated, ids)
        # the SuperLink knows the registered keys' nodes and no other: the authorised ones
        # joined (the killed one now offline), the registered key without the CA never did
        listed = json.loads(_flwr(["supernode", "ls", "local-deployment", "--format", "json",
                                   "-v"], env).stdout)["nodes"]  # fmt: skip
        status = {int(n["node-id"]): (n["status"], n["online-at"]) for n in listed}
        assert set(status) == set(ids), status
        assert [status[i][0] for i in ids] == ["online"] * 3 + ["offline", "registered"], status
        assert status[ids[4]][1] == "N/A" and all(status[i][1] != "N/A" for i in ids[:4])

        hist = pd.read_csv(history, keep_default_na=False)
        assert hist["round"].tolist() == [0, 1, 2, 3]
        failed = [f for row in hist["failed"] for f in row.split(";") if f]
        assert failed, "the killed node is named in the history"
        assert set(failed) == {"syn-0"}, hist[["round", "failed", "failures"]]
        assert all("syn-0" not in s.split(";") for s in hist["selected"][hist["failed"] != ""])
        assert {c for s in hist["selected"] for c in s.split(";") if c} <= set(CLIENTS)
        stats = pd.read_parquet(out / "stats.parquet")
        assert set(stats["client_id"]) == set(CLIENTS)  # no partition claimed twice in a round
        assert not stats.duplicated(["round", "client_id"]).any()
        last = stats[stats["round"] == 3]
        assert set(last["client_id"]) == set(CLIENTS[:3])  # the others' statistics intact
        assert last[["U", "F", "B", "cos_g"]].notna().all().all()
        assert (out / "config.toml").is_file()
        runs = _flwr(["ls", "local-deployment", "--format", "json"], env)
        listed = json.loads(runs.stdout)
        status = [r.get("status") for r in listed.get("runs", [])]
        assert status and all("finished:completed" in str(s) for s in status), listed
    finally:
        for p in procs:
            _kill(p)
