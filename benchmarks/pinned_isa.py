"""What pinning the kernels' instruction set costs, and what it changes, on this machine.

A run is bit-identical on the machine that made it; on another CPU torch, MKL and oneDNN pick
other kernels (AVX-512 against AVX2, other blockings) and the floats differ in their last
bits, which training amplifies. Three environment variables pin those choices to the
portable baseline: ``ATEN_CPU_CAPABILITY=default`` (ATen's CPU dispatch), ``MKL_CBWR=COMPATIBLE``
(MKL's conditional numerical reproducibility) and ``ONEDNN_MAX_CPU_ISA=SSE41`` (oneDNN's
kernels). This benchmark runs the same ``fedsel train`` (one selector, a few rounds, one
thread) alternately unpinned and pinned, ``--repeats`` times each, and reports per mode the
median wall time, whether its repeats agree bit for bit, and whether the two modes pick the
same clients and reach the same accuracies. The ratio is the cost; whether a pinned run is
identical on *another* CPU needs a second machine and is not measured here (the record's
``cpu``, ``torch_cpu`` and ``isa_pins`` say what ran). Writes ``pinned_isa.md`` and ``.csv``
under ``results/benchmarks/``::

    .venv/bin/python benchmarks/pinned_isa.py --repeats 3
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import markdown_table

from selection.atomic import write_table_atomic, write_text_atomic
from selection.progress import rich_progress

ROOT = Path(__file__).resolve().parents[1]

PINS = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}
MODES = ("unpinned", "pinned")


def one_run(mode: str, out: Path, args: argparse.Namespace) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PINS}
    if mode == "pinned":
        env.update(PINS)
    cmd = [str(ROOT / ".venv/bin/fedsel"), "train", "--selector", args.selector, "--k", "5",
           "--rounds", str(args.rounds), "--seed", "0", "--threads", "1", "--no-progress",
           "--out", str(out)]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    h = pd.read_csv(out / "history.csv")
    stats = pd.read_parquet(out / "stats.parquet")
    floats = stats.select_dtypes("float").to_numpy()  # every statistic the clients reported
    run = tomllib.loads((out / "config.toml").read_text())["run"]
    return {
        "mode": mode,
        "wall_s": wall,
        "torch_cpu": run["torch_cpu"],
        "isa_pins": run.get("isa_pins", ""),
        "selected": "|".join(h["selected"].astype(str)),
        "acc": floats.tobytes() + h["acc_avg"].to_numpy().tobytes(),
        "final_avg": float(h["acc_avg"].iloc[-1]),
        "final_worst": float(h["acc_worst"].iloc[-1]),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--selector", default="maxmin:2@probe")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.rounds < 1:
        ap.error("--repeats and --rounds must be >= 1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, rich_progress() as bar:
        total = 2 * args.repeats
        for i in range(args.repeats):  # alternated: drift hits both modes alike
            for mode in MODES:
                rows.append(one_run(mode, Path(tmp) / f"{mode}{i}", args))
                if bar is not None:
                    bar(len(rows), total, f"{mode} run {i + 1} of {args.repeats}")
    df = pd.DataFrame(rows)
    summary = []
    for mode in MODES:
        m = df[df["mode"] == mode]
        summary.append({
            "mode": mode,
            "torch_cpu": m["torch_cpu"].iloc[0],
            "isa_pins": m["isa_pins"].iloc[0] or "(none)",
            "median_wall_s": round(float(m["wall_s"].median()), 2),
            "repeats_identical": bool(m["acc"].nunique() == 1 and m["selected"].nunique() == 1),
            "final_avg": round(float(m["final_avg"].iloc[0]), 2),
            "final_worst": round(float(m["final_worst"].iloc[0]), 2),
        })  # fmt: skip
    table = pd.DataFrame(summary)
    a, b = (df[df["mode"] == m].iloc[0] for m in MODES)
    same_picks = a["selected"] == b["selected"]
    same_bits = a["acc"] == b["acc"]
    ratio = table["median_wall_s"].iloc[1] / table["median_wall_s"].iloc[0]
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(df.drop(columns=["acc", "selected"]), out / "pinned_isa.csv")
    command = "benchmarks/pinned_isa.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    lines = [
        "# Pinned instruction set: cost and effect on one machine",
        "",
        f"`.venv/bin/python {command.strip()}` — `fedsel train --selector {args.selector} "
        f"--k 5 --rounds {args.rounds} --threads 1`, unpinned and pinned "
        f"({', '.join(f'`{k}={v}`' for k, v in PINS.items())}) alternated, {args.repeats} "
        "runs each, whole processes (start-up included).",
        "",
        markdown_table(table),
        "",
        f"Pinned / unpinned median wall time: **{ratio:.2f}x** (one run of this benchmark).",
        f"Same picks in both modes: {'yes' if same_picks else 'no'}; every reported statistic "
        f"(stats.parquet) and accuracy the same bit for bit: {'yes' if same_bits else 'no'}.",
        "",
        "Each mode is deterministic on this machine when its repeats are identical. Whether a "
        "pinned run is identical on another CPU is not measured here (one CPU type was "
        "available); fedsel therefore does not offer pinning as a flag. The variables work as "
        "set in the environment, and every run's record says which were set (`isa_pins`).",
    ]
    write_text_atomic("\n".join(lines) + "\n", out / "pinned_isa.md")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
