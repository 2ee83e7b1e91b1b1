"""What a round costs in-process and on Flower's engines, on the default federation.

    .venv/bin/python benchmarks/flower_cost.py [--rounds 3] [--selector maxmin:2]

Runs ``fedsel train`` (the in-process loop), ``fedsel flower`` (Ray simulation) and
``fedsel flower --engine local`` (the same ServerApp/ClientApp in one process) with the same
settings, K = 5 of 20, and times each command end to end and each round (``round_seconds`` of
its history). Also counts the leading rounds in which each engine selected what the in-process run did. Writes
``results/benchmarks/flower_cost.{csv,md}``; run folders go to ``runs/bench-flower/``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks"


def _agree(a: list[str] | None, b: list[str]) -> int:
    """How many leading rounds two runs selected the same clients."""
    n = 0
    for x, y in zip(a or [], b, strict=False):
        if x != y:
            break
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--selector", default="maxmin:2")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from oracle import markdown_table  # benchmarks/oracle.py, beside this script

    from selection.atomic import write_table_atomic, write_text_atomic

    fedsel = str(Path(sys.executable).with_name("fedsel"))
    common = ["--selector", args.selector, "--k", "5", "--rounds", str(args.rounds), "--seed", "0"]
    runs = {
        "in-process (fedsel train)": ["train", *common],
        "Flower, Ray simulation": ["flower", *common, "--num-supernodes", "20"],
        "Flower, local engine": ["flower", *common, "--num-supernodes", "20", "--engine", "local"],
    }
    base = ROOT / "runs" / "bench-flower"
    rows, picks = [], {}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    for i, (name, argv) in enumerate(runs.items()):
        out = base / f"run{i}"
        shutil.rmtree(out, ignore_errors=True)
        print(f"[{i + 1}/{len(runs)}] {name} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        subprocess.run([fedsel, *argv, "--out", str(out)], check=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - t0
        h = pd.read_csv(out / "history.csv", keep_default_na=False)
        picks[name] = h["selected"].tolist()
        sec = h["round_seconds"] if "round_seconds" in h else pd.Series(dtype=float)
        rows.append(
            {
                "engine": name,
                "rounds": len(h),
                "command_seconds": round(wall, 1),
                "round0_seconds": round(float(sec.iloc[0]), 1) if len(sec) else None,
                "later_round_seconds": round(float(sec.iloc[1:].mean()), 1)
                if len(sec) > 1
                else None,
                "final_acc_worst": float(h["acc_worst"].iloc[-1]),
                "rounds_picked_as_train": _agree(picks.get(next(iter(runs))), picks[name]),
            }
        )
    df = pd.DataFrame(rows)
    write_table_atomic(df, OUT / "flower_cost.csv")
    load = os.getloadavg()[0]
    text = (
        "# One federation, three engines: what a round costs\n\n"
        f"`.venv/bin/python benchmarks/flower_cost.py --rounds {args.rounds} --selector "
        f"{args.selector}` (K = 5 of 20, default `cnn`, seed 0; {os.cpu_count()} cores, "
        f"1-minute load {load:.1f} at the end).\n\n{markdown_table(df)}\n\n"
        "rounds_picked_as_train: leading rounds whose selection equals the in-process run's.\n"
    )
    write_text_atomic(text, OUT / "flower_cost.md")
    print(text)


if __name__ == "__main__":
    main()
