"""Benchmark: the committed cost study rerun whole on today's code — its wall time, and its
answers against the committed ones.

``fedsel study --config results/study-costs/study.toml`` (24 entries x 10 seeds x 40 rounds,
K = 5, N = 20, two worker processes) into ``--work`` (resumable: a rerun after a kill redoes
only unfinished runs, and the wall time then covers the last start only), timed; then, run by
run, the choices and every test accuracy against ``results/study-costs/history.csv``, and the
verdict's lines side by side. Writes ``study_rerun.md`` and ``study_rerun.csv`` (per entry)::

    .venv/bin/python benchmarks/study_rerun.py [--work runs/study-costs-rerun] [--workers 2]
        [--seeds N]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import machine_facts, markdown_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fl_oracle.experiments.study.runs import read_history
from selection.atomic import write_table_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]

COMMITTED = ROOT / "results" / "study-costs"
OUT = ROOT / "results" / "benchmarks"


def compare(new: pd.DataFrame, old: pd.DataFrame) -> pd.DataFrame:
    """Per entry: runs whose choices and accuracies equal the committed ones, of all."""
    acc = [c for c in old.columns if c.startswith("acc_")]
    rows = []
    for entry, g in old.groupby("entry", sort=False):
        h = new[new["entry"] == entry]
        same_sel = same_acc = runs = 0
        first = ""
        for seed, a in g.groupby("seed"):
            b = h[h["seed"] == seed]
            runs += 1
            if len(a) != len(b):
                continue
            sel = a["selected"].astype(str).to_numpy() == b["selected"].astype(str).to_numpy()
            ok = (a[acc].to_numpy() == b[acc].to_numpy()).all(axis=1) & sel
            same_sel += bool(sel.all())
            same_acc += bool(ok.all())
            if not ok.all() and not first:
                first = f"seed {seed}, round {int(a['round'].to_numpy()[~ok][0])}"
        rows.append(
            {
                "entry": entry,
                "runs": runs,
                "same_choices": same_sel,
                "same_choices_and_accuracies": same_acc,
                "first_difference": first or "-",
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "study-costs-rerun")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--seeds", type=int, default=None, help="the first N seeds only (default: all ten)"
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    command = shlex.join([".venv/bin/python", "benchmarks/study_rerun.py", *sys.argv[1:]])
    load0 = os.getloadavg()[0]
    cmd = [str(ROOT / ".venv" / "bin" / "fedsel"), "study", "--config",
           str(COMMITTED / "study.toml"), "--out", str(args.work), "--workers",
           str(args.workers)]  # fmt: skip
    if args.seeds is not None:
        cmd += ["--seeds", str(args.seeds)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    new = read_history(args.work)
    old = read_history(COMMITTED)
    old = old[old["seed"].isin(new["seed"].unique())]  # the seeds rerun
    table = compare(new, old)
    write_table_atomic(table, args.out / "study_rerun.csv")
    rounds = len(new)
    cpu = pd.to_numeric(new["round_cpu_seconds"], errors="coerce").sum()
    old_cpu = pd.to_numeric(old["round_cpu_seconds"], errors="coerce").sum()
    old_wall = pd.to_numeric(old["round_seconds"], errors="coerce").sum()
    new_wall = pd.to_numeric(new["round_seconds"], errors="coerce").sum()
    same = int(table["same_choices_and_accuracies"].sum())
    runs = int(table["runs"].sum())
    verdict_new = (args.work / "verdict.md").read_text().splitlines()[0]
    verdict_old = (COMMITTED / "verdict.md").read_text().splitlines()[0]
    md = "\n".join(
        [
            "# The cost study rerun on today's code",
            "",
            f"`{command}`",
            "",
            f"Machine: {machine_facts(__import__('torch').device('cpu'))}. 1-minute load "
            f"{load0:.2f} before, {load1:.2f} after.",
            "",
            f"`{shlex.join(cmd[1:])}`: {rounds:,} rounds ({len(table)} entries x "
            f"{new['seed'].nunique()} seeds x 40 rounds) in **{wall / 60:.1f} minutes** of wall "
            f"time on {args.workers} worker processes (this start; a resumed rerun counts its "
            "last start only).",
            "",
            "| | committed study (its histories, the same seeds) | this rerun |",
            "|---|---:|---:|",
            f"| sum of the runs' round seconds (worker-hours) | {old_wall / 3600:.2f} | "
            f"{new_wall / 3600:.2f} |",
            f"| sum of the runs' round CPU seconds (CPU-hours) | {old_cpu / 3600:.2f} | "
            f"{cpu / 3600:.2f} |",
            "",
            f"Runs whose every choice and every test accuracy equal the committed run's: "
            f"**{same} of {runs}**.",
            "",
            markdown_table(table),
            "",
            "The verdict's first line, committed and rerun:",
            "",
            f"> {verdict_old}",
            "",
            f"> {verdict_new}",
            "",
        ]
    )
    write_text_atomic(md, args.out / "study_rerun.md")
    print(md)


if __name__ == "__main__":
    main()
