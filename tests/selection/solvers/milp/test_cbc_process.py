"""CBC runs as a process of our own (selection/solvers/milp/cbc.py): it dies with the Python
process that started it, so a study worker killed mid-solve leaves no CBC search running."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
# a round of the cross-device study that CBC does not prove for minutes
HARD = ROOT / "benchmarks" / "data" / "probe_round_n200_1.csv"
SOLVE = f"""
from selection.problem import SelectionProblem
from selection.schema import read_stats
from selection.solvers.registry import make_solver
p = SelectionProblem.from_stats(read_stats({str(HARD)!r}), 20)
make_solver("maxmin", delta=2.0, backend="cbc").solve(p)
"""


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("setpriv") is None,
    reason="needs Linux's setpriv (util-linux) for the parent-death signal",
)
def test_cbc_dies_with_the_process_that_started_it():
    proc = subprocess.Popen([sys.executable, "-c", SOLVE], cwd=ROOT, start_new_session=True)
    try:
        deadline, cbc = time.monotonic() + 120, []
        while not cbc:
            assert proc.poll() is None, "the solve ended before CBC was seen"
            assert time.monotonic() < deadline, "no CBC process within 120 s"
            cbc = [
                c
                for c in _children(proc.pid)
                if "cbc" in Path(f"/proc/{c}/cmdline").read_bytes().decode(errors="replace")
            ]
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(cbc[0]):
            assert time.monotonic() < deadline, f"CBC {cbc[0]} outlived its Python process"
            time.sleep(0.05)
    finally:  # whatever is left of its session (a CBC that outlived it, when this fails)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
