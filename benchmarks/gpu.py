"""The oracle on a GPU: its CUDA tests, a study round at N = 20, 200 and 1,000 on the device
against the CPU, and the device's peak memory, in one prepared run of at most a few minutes.

For a machine lent with a CUDA device (``nvidia-smi`` lists one): run it there, then commit
the table it writes. Without one it runs with ``--device cpu`` (the test suite runs it so, on
tiny sizes), which checks the script, not the GPU. Per size N (N/4 clients a domain, K = N/10,
at least 2; the study's oracle settings on generated stand-ins), per device: one warm-up run of
``--rounds`` rounds, then the same run timed (wall seconds per round of
:func:`fl_oracle.experiments.runner.run_one` as a study calls it, with ``proportional`` and
with ``maxmin:2@probe``, whose probe pass touches every client), and on CUDA the peak memory
``torch.cuda.max_memory_allocated``. The CPU side is skipped above ``--cpu-max`` clients (it
would take longer than the run's budget). Writes ``gpu.md`` and ``gpu.csv`` under ``--out``
(default ``results/benchmarks/``), with the device's name::

    python benchmarks/gpu.py                       # on the GPU machine
    python benchmarks/gpu.py --device cpu --sizes 8 --rounds 1 --out /tmp/gpu   # anywhere

Not measured yet: a study round that trains several runs' clients in one stacked pass (the
oracle stacks one run's clients; stacking several runs is not built).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import markdown_table

from selection.atomic import write_table_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]

ENTRIES = ("proportional", "maxmin:2@probe")


def cuda_tests() -> str:
    """The CUDA tests' outcome, one line (pytest's summary), or why they did not run."""
    if not torch.cuda.is_available():
        return "not run: no CUDA device"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "tests/fl_oracle/sim/test_cuda_paths.py"],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"},
    )  # fmt: skip
    lines = [x for x in r.stdout.strip().splitlines() if x.strip()]
    return lines[-1] if lines else f"pytest exited {r.returncode}: {r.stderr.strip()[-200:]}"


def time_round(n: int, device: str, rounds: int) -> list[dict]:
    """Wall seconds per round of each entry at N clients on ``device`` (after a warm-up)."""
    from fl_oracle.experiments.runner import OracleFactory, RunTask, run_one
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.selectors import make_selector, parse_spec

    cpd = max(1, n // 4)
    k = max(2, (4 * cpd) // 10)
    factory = OracleFactory({**StudySettings().oracle, "clients_per_domain": cpd,
                             "device": device})  # fmt: skip
    t0 = time.perf_counter()
    factory.load()
    load = time.perf_counter() - t0
    rows = []
    for entry in ENTRIES:
        spec = parse_spec(entry)
        cache: dict = {}
        run_one(factory, make_selector, RunTask(spec, 0, rounds, k, records=()), cache)  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        run_one(factory, make_selector, RunTask(spec, 1, rounds, k, records=()), cache)
        if device == "cuda":
            torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / rounds
        peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else float("nan")
        rows.append({"N": 4 * cpd, "K": k, "entry": entry, "device": device,
                     "round_s": round(wall, 4), "data_load_s": round(load, 2),
                     "peak_mib": round(peak, 1)})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--sizes", default="20,200,1000", help="N, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu-max", type=int, default=200, help="largest N also timed on the CPU")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes {args.sizes!r}: whole numbers, comma-separated")
    if not sizes or min(sizes) < 4 or args.rounds < 1:
        ap.error("--sizes need N >= 4 and --rounds >= 1")
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here")
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu only (no GPU measured)"
    tests = cuda_tests() if device == "cuda" else "not run: --device cpu"
    rows = []
    for n in sizes:
        rows += time_round(n, device, args.rounds)
        if device == "cuda" and n <= args.cpu_max:
            rows += time_round(n, "cpu", args.rounds)
    table = pd.DataFrame(rows)
    write_table_atomic(table, args.out / "gpu.csv")
    cmd = " ".join(shlex.quote(a) for a in ["python", "benchmarks/gpu.py", *(argv or sys.argv[1:])])
    text = (
        "# The oracle on a GPU\n\n"
        f"`{cmd}` on {name} (torch {torch.__version__}). CUDA tests: {tests}. Wall seconds "
        "per study round after a warm-up run, peak device memory (MiB) on CUDA.\n\n"
        + markdown_table(table)
        + "\n\nA stacked pass over several runs' clients is not built "
        "yet: no row measures it.\n"
    )
    write_text_atomic(text, args.out / "gpu.md")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
