"""Ctrl-C and SIGTERM stop a multi-process study within seconds, keep its finished runs, and
say how to go on; started again, it finishes what is left."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import PYTHONPATH

# The study's first line gives SIGINT Python's own handler, as a command typed at a terminal has
# it. Started with SIGINT ignored (a background job of a non-interactive shell, as `make test &`
# or a CI runner may start the suite), a child inherits SIG_IGN, Python then installs no
# KeyboardInterrupt handler, and SIGINT does nothing by design (what shells intend for background
# jobs; SIGTERM still stops it): that, not load or a fresh clone, was the SIGINT case's timeout.
_SCRIPT = textwrap.dedent(
    """
    import signal
    import sys
    handler = signal.SIG_IGN if sys.argv[3] == "ignored" else signal.default_int_handler
    signal.signal(signal.SIGINT, handler)
    from helpers import fake_oracle as fake
    import fl_oracle.cli.study as cli_study
    from fl_oracle.cli import main
    from fl_oracle.experiments.runner import OracleFactory
    data = fake.tiny_data()
    cli_study.study_factory = lambda o: OracleFactory(fake.tiny_overrides(), data)
    main(["study", "--out", sys.argv[1], "--selectors", "proportional,random,stratified",
          "--seeds", "2", "--rounds", sys.argv[2], "--k", "3", "--workers", "2"])
    """
)


def _children(pid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited child not yet reaped by whoever adopted it)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize(
    ("sig", "sigint"),
    [(signal.SIGINT, "default"), (signal.SIGTERM, "default"), (signal.SIGTERM, "ignored")],
)
def test_a_signal_stops_the_workers_within_seconds(tmp_path, sig, sigint):
    """The third case: a study whose SIGINT is ignored (a background job) stops on SIGTERM."""
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    out = tmp_path / "st"
    code = _SCRIPT
    # 3,000-round runs take minutes each: a stop that waited for the runs in flight would show;
    # a process group of its own: whatever the test's end, nothing it started outlives it
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(out), "3000", sigint],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
    )
    try:
        _stop_and_check(proc, out, sig)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    # the lock went with the process: the folder is free for the next command at once
    import fcntl

    with open(out / ".fedsel.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _stop_and_check(proc: subprocess.Popen, out: Path, sig: int) -> None:
    deadline = time.monotonic() + 120
    while len(_children(proc.pid)) < 2 or not (out / "sources.toml").is_file():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.2)
    time.sleep(3)  # the workers are inside their first runs
    workers = _children(proc.pid)
    proc.send_signal(sig)
    t0 = time.monotonic()
    proc.wait(timeout=60)
    stopped_after = time.monotonic() - t0
    err = proc.stderr.read().strip().splitlines()
    assert proc.returncode == 130, err
    # stopped inside the first runs: none finished, and the message does not promise a folder
    # (the line fedsel writes; a loaded machine may add the multiprocessing tracker's warning)
    said = [ln for ln in err if ln.startswith("fedsel: error:")]
    assert said and said[-1] == (
        "fedsel: error: interrupted; no run had finished; run the same command again to start "
        "the study"
    )
    assert stopped_after < 30
    time.sleep(0.5)
    alive = [p for p in workers if _running(p)]
    assert not alive, f"workers left running: {alive}"
    assert not list(out.rglob("seed*.csv")) and not list(out.rglob("*.tmp"))
