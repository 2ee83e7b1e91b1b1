"""Studies on Ray: a head and a second node started as separate processes on 127.0.0.1, a run
whose worker dies is retried, and the history equals the local worker pool's."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fl_oracle.experiments.study.runs import run_study
from fl_oracle.experiments.study.settings import StudySettings
from selection.selectors import Spec, make_selector

from helpers import fake_oracle as fake

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


RAY = Path(sys.executable).with_name("ray")
SETTINGS = StudySettings(seeds=2, rounds=3, k=3, selectors=("proportional", "eps:5", "maxmin:2"),
                         bootstrap=200)  # fmt: skip


class FakeFactory:
    def __call__(self, seed: int):
        return fake.FakeOracle(seed, clients_per_domain=2)


class DiesOnce:
    """make_selector, except that the worker running (maxmin:2, seed 1) dies the first time."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, spec: Spec, seed: int = 0):
        if spec.canonical == "maxmin:2" and seed == 1 and not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os._exit(1)  # the worker process dies mid-run, as a killed node would
        return make_selector(spec, seed=seed)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_cluster(temp_dir: str, port: int) -> None:
    """Kill this cluster's processes only (``ray stop`` would stop every Ray on the machine,
    e.g. a Flower simulation test running beside this one): those naming its temp dir or its
    GCS port, and their children."""
    import psutil

    procs = []
    for p in psutil.process_iter(["cmdline"]):
        parts = p.info["cmdline"] or []
        if any(temp_dir in part or part.endswith(f":{port}") for part in parts):
            procs.append(p)
            procs.extend(p.children(recursive=True))
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=30)


@pytest.fixture
def cluster(tmp_path):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(fake)
    port = _free_port()
    temp_dir = f"/tmp/fedsel-ray-{port}"  # short: Ray's socket paths must fit 107 bytes
    # the workers unpickle the fake oracle, which imports the tests' helper package by name:
    # a folder holding only ``helpers`` goes on their path (``tests/`` itself would shadow the
    # project's packages, see tests/conftest.py)
    shim = tmp_path / "workers-path"
    shim.mkdir()
    (shim / "helpers").symlink_to(Path(fake.__file__).resolve().parent)
    path = os.pathsep.join(filter(None, [str(shim), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": path}
    common = ["--num-cpus", "1", "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]
    try:
        subprocess.run([str(RAY), "start", "--head", "--port", str(port), "--temp-dir", temp_dir,
                        "--include-dashboard=false", *common],
                       check=True, env=env, capture_output=True, timeout=120)  # fmt: skip
        subprocess.run([str(RAY), "start", "--address", f"127.0.0.1:{port}", *common],
                       check=True, env=env, capture_output=True, timeout=120)  # fmt: skip
        yield f"127.0.0.1:{port}"
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        _stop_cluster(temp_dir, port)
        shutil.rmtree(temp_dir, ignore_errors=True)
        cloudpickle.unregister_pickle_by_value(fake)
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_a_study_on_a_two_node_ray_cluster_retries_a_dead_worker_and_matches_local(
    cluster, tmp_path
):
    assert shutil.which(str(RAY))
    marker = tmp_path / "died"
    out_ray = tmp_path / "ray"
    hist_ray = run_study(SETTINGS, out_ray, make_oracle=FakeFactory(),
                         make_selector=DiesOnce(str(marker)), executor="ray",
                         address=cluster)  # fmt: skip
    assert marker.exists()  # one worker died, and its run was retried
    out_local = tmp_path / "local"
    hist_local = run_study(SETTINGS, out_local, make_oracle=FakeFactory(),
                           make_selector=make_selector, workers=1)  # fmt: skip
    cols = ["entry", "seed", "round", "selected", "acc_avg", "acc_worst"]
    a = hist_ray[cols].sort_values(cols[:3]).reset_index(drop=True)
    b = hist_local[cols].sort_values(cols[:3]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == SETTINGS.seeds * len(SETTINGS.selectors) * SETTINGS.rounds
    # the study ran on the two-node cluster (head and second node, separate processes)
    nodes = subprocess.run([str(RAY), "status", "--address", cluster], capture_output=True,
                           text=True, timeout=60).stdout  # fmt: skip
    assert nodes.count("node_") >= 2, nodes
