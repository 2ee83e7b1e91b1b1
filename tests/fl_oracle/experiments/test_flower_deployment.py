"""A real Flower deployment on 127.0.0.1 that lets in only its own nodes: a SuperLink with TLS
and SuperNode authentication (``--enable-supernode-auth``), 4 SuperNodes whose public keys are
registered through the Flower CLI (``flwr supernode register``), ``flwr run`` against them, one
SuperNode killed (SIGKILL) after round 0 — and, in its place, four SuperNodes that try to join
and are refused: one with the CA but a key never registered, one with the CA and no key, one
with a registered key but without the CA (TLS verification fails), one ``--insecure``. The
credentials come from ``fl_oracle.experiments.flower.certs``; the Flower tutorial's deployment
steps are these commands.

Beside the four honest nodes a fifth, authorised, lies (issue 40, "tested as an attack"): its
``flwr-clientapp`` (the process its SuperNode starts by name) is a wrapper that claims 10⁶ × its
examples and returns 100 × its update every round. In round 0 it also reports 10⁴ × its F, so
that F and the update agree: its size is capped and its update clipped, and it is named once in
the round's ``suspects`` (its statistics row says ``suspect``). In round 1 it reports its honest
F beside the 100-fold update: refused, since the F contradicts the update. In the last round it
claims partition 0's id: refused under its own id. The run completes. Tolerance, stated: the
round it is clipped, the global model moves no further than the round's largest honest update
(the ``clipped to`` bound the history states: a sample-weighted mean of updates none longer
than it); every round it moves less than ``MOVE_TOL`` × the liar's own honest update, where
unguarded its 10⁶-fold weight would carry its 100-fold update: about 100 × that. The liar's
wrapper records the global model it is sent each round and its honest update's norm.
Five nodes starting a ``flwr-clientapp`` process per message on two cores: ~2 min a round
under load, hence 3 rounds and a 900 s limit."""

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
# 8 partitions (2 clients a domain, domain-major ids): the honest nodes hold one of each
# domain, the liar svhn-1; the other partitions have no node
PARTS = {0: "mnist-0", 2: "usps-0", 4: "svhn-0", 6: "syn-0"}
CLIENTS = list(PARTS.values())
LIAR_PID, LIAR = 5, "svhn-1"
MOVE_TOL = 10.0  # the global step's norm, in units of the liar's own honest update's
# round 0: a consistent lie (F x 10^4); round 1: F contradicts the update; last: partition 0
ROUNDS, CONTRADICT_AT, SPOOF_FROM = 3, 1, 2
_LIAR = """#!{python}
# flwr-clientapp as a lying node runs it: the digits ClientApp's reply, then the lies
import json, os, sys
import numpy as np
from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict, Message
from flwr.clientapp import ClientApp

_call = ClientApp.__call__

def _lying(self, message, context):
    reply = _call(self, message, context)
    if not reply.has_content() or "delta" not in reply.content:
        return reply
    cfg = message.content["config"]
    t = int(cfg["fedsel-round"])
    w = np.concatenate([a.numpy().ravel() for a in message.content["arrays"].values()])
    delta = reply.content["delta"]["delta"].numpy()
    log = {log!r}
    np.save(os.path.join(log, f"w{{t}}.npy"), w)  # the global model w_t it was sent
    with open(os.path.join(log, "norms.jsonl"), "a") as fh:
        fh.write(json.dumps({{"round": t, "norm": float(np.linalg.norm(delta))}}) + "\\n")
    metrics = dict(reply.content["metrics"])
    metrics["num-examples"] = int(metrics["num-examples"]) * 10**6
    if t < {contradict_at}:
        metrics["F"] = float(metrics["F"]) * 1e4
    if t >= {spoof_from}:
        metrics["partition-id"] = 0
    out = RecordDict({{"delta": ArrayRecord({{"delta": Array(100.0 * delta)}}),
                      "metrics": MetricRecord(metrics), "fedsel": reply.content["fedsel"]}})
    return Message(out, reply_to=message)

ClientApp.__call__ = _lying
from flwr.supernode.cli import flwr_clientapp
sys.argv[0] = "flwr-clientapp"
sys.exit(flwr_clientapp())
"""


def _liar_bin(tmp_path: Path, spoof_from: int) -> Path:
    """A folder whose ``flwr-clientapp`` lies (first on the lying SuperNode's PATH)."""
    folder, log = tmp_path / "liar-bin", tmp_path / "liar-log"
    folder.mkdir()
    log.mkdir()
    script = folder / "flwr-clientapp"
    script.write_text(_LIAR.format(python=sys.executable, log=str(log), spoof_from=spoof_from,
                                   contradict_at=CONTRADICT_AT))  # fmt: skip
    script.chmod(0o755)
    return folder


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
    # keys 0-3 the honest nodes, 4 registered (used without the CA), 5 never registered, 6 the
    # liar's (registered: an authorised node that lies)
    files = make_credentials(creds, n_nodes=7)
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
        liar_id = _register(files["supernode-6.pub"], env, deadline)
        nodes = []
        for i, pid in enumerate(PARTS):
            nodes.append(_start([*supernode, "--root-certificates", str(files["ca.crt"]),
                                 "--auth-supernode-private-key", str(files[f"supernode-{i}.key"]),
                                 "--port", str(_free_port()),
                                 "--node-config", f"partition-id={pid} num-partitions=8"],
                                tmp_path / f"supernode{i}.log", env))  # fmt: skip
        procs += nodes
        liar_env = {**env, "PATH": f"{_liar_bin(tmp_path, spoof_from=SPOOF_FROM)}:{env['PATH']}"}
        procs.append(_start([*supernode, "--root-certificates", str(files["ca.crt"]),
                             "--auth-supernode-private-key", str(files["supernode-6.key"]),
                             "--port", str(_free_port()),
                             "--node-config", f"partition-id={LIAR_PID} num-partitions=8"],
                            tmp_path / "liar.log", liar_env))  # fmt: skip
        time.sleep(5)
        run = subprocess.Popen(
            [str(BIN / "flwr"), "run", str(ROOT), "local-deployment", "--run-config",
             f"num-partitions=8 selector='all' k=2 num-server-rounds={ROUNDS} out='{out}'",
             "--stream"],
            stdout=(tmp_path / "run.log").open("w"), stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        deadline = time.monotonic() + 900
        history = out / "history.csv"
        while time.monotonic() < deadline:  # round 0 done: kill syn-0's node
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
                                   "--node-config", "partition-id=0 num-partitions=8"],
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
        assert activated == {*ids[:4], liar_id}, (activated, ids, liar_id)
        # the SuperLink knows the registered keys' nodes and no other: the authorised ones
        # joined (the killed one now offline), the registered key without the CA never did
        listed = json.loads(_flwr(["supernode", "ls", "local-deployment", "--format", "json",
                                   "-v"], env).stdout)["nodes"]  # fmt: skip
        status = {int(n["node-id"]): (n["status"], n["online-at"]) for n in listed}
        assert set(status) == {*ids, liar_id}, status
        assert [status[i][0] for i in ids] == ["online"] * 3 + ["offline", "registered"], status
        assert status[liar_id][0] == "online", status
        assert status[ids[4]][1] == "N/A" and all(status[i][1] != "N/A" for i in ids[:4])

        hist = pd.read_csv(history, keep_default_na=False)
        assert hist["round"].tolist() == list(range(ROUNDS))
        failed = [f for row in hist["failed"] for f in row.split(";") if f]
        assert failed, "the killed node is named in the history"
        assert set(failed) == {"syn-0", LIAR}, hist[["round", "failed", "failures"]]
        assert all("syn-0" not in s.split(";") for s in hist["selected"][hist["failed"] != ""])
        assert {c for s in hist["selected"] for c in s.split(";") if c} <= {*CLIENTS, LIAR}
        stats = pd.read_parquet(out / "stats.parquet")
        # no partition claimed twice in a round
        assert set(stats["client_id"]) == {*CLIENTS, LIAR}
        assert not stats.duplicated(["round", "client_id"]).any()
        last = stats[stats["round"] == ROUNDS - 1]
        assert set(last["client_id"]) == set(CLIENTS[:3])  # the others' statistics intact
        assert last[["U", "F", "B", "cos_g"]].notna().all().all()
        _check_the_liar(hist, stats, tmp_path / "liar-log")
        assert (out / "config.toml").is_file()
        runs = _flwr(["ls", "local-deployment", "--format", "json"], env)
        listed = json.loads(runs.stdout)
        status = [r.get("status") for r in listed.get("runs", [])]
        assert status and all("finished:completed" in str(s) for s in status), listed
    finally:
        for p in procs:
            _kill(p)


def _check_the_liar(hist: pd.DataFrame, stats: pd.DataFrame, log: Path) -> None:
    """Named once a round: bounded before the selector and the aggregate read it while its
    lies agree, refused when its F contradicts its update and under its own id the round it
    claims partition 0; the global model moved as an honest one: within MOVE_TOL x its own
    honest update every round."""
    import numpy as np

    for _, row in hist.iterrows():
        t = int(row["round"])
        named = [part.split(":")[0] for part in row["suspects"].split(" | ") if part]
        if t < CONTRADICT_AT:
            assert named == [LIAR], row["suspects"]  # once, and no honest node
            assert "examples, beyond the others'" in row["suspects"], row["suspects"]
            assert "clipped to" in row["suspects"], row["suspects"]
            table = stats[stats["round"] == t].set_index("client_id")
            honest_max = table.drop(index=[LIAR])["n_samples"].max()
            assert table.loc[LIAR, "n_samples"] <= honest_max  # the capped size, not 10^6x
            assert table.loc[LIAR, "suspect"] != ""
            assert LIAR not in row["failed"].split(";")
        elif t < SPOOF_FROM:  # its honest F beside a 100x update
            assert named == [], row["suspects"]
            assert "contradicts its update" in row["failures"], row
            assert LIAR not in row["selected"].split(";")
        else:  # claims partition 0: refused under its own id, so nothing of it is used
            assert named == [], row["suspects"]
            assert f"echoed partition of {CLIENTS[0]}, was {LIAR}" in row["failures"], row
            assert LIAR not in row["selected"].split(";")
    norms = {}
    for line in (log / "norms.jsonl").read_text().splitlines():
        rec = json.loads(line)
        norms[rec["round"]] = rec["norm"]
    assert sorted(norms) == list(range(ROUNDS)), norms
    for t in range(SPOOF_FROM):
        w_t, w_next = np.load(log / f"w{t}.npy"), np.load(log / f"w{t + 1}.npy")
        moved = float(np.linalg.norm(w_next - w_t))
        print(f"round {t}: the global model moved {moved:.4g}; the liar's own update "
              f"{norms[t]:.4g} (unguarded about 100x that)")  # fmt: skip
        if t < CONTRADICT_AT:  # clipped: no further than the largest honest update
            suspects = hist.loc[hist["round"] == t, "suspects"].iloc[0]
            bound = float(re.search(r"clipped to ([0-9.e+-]+)", suspects).group(1))
            assert 0 < moved <= bound * 1.01, (t, moved, bound)  # 3 significant digits printed
        assert 0 < moved < MOVE_TOL * norms[t], (t, moved, norms[t])
