"""Benchmark: what private statistics cost selection.

Two formulations (``maxmin:2@probe``, ``fisher-fair:1@probe``: every client's probe pass,
loss, F, B, cos_g and the D first-order utilities reported each round) and two baselines that
read reported statistics (``fisher-topk``: every client's F; ``qffl:1``: the picks' losses, its
aggregation weights) trained with the privacy mode of :mod:`fl_oracle.experiments.privacy` at
a run budget ε ∈ {∞, 8, 2, 1} (δ = 1e-5), each ε a paired study over the same seeds
(``fedsel study --dp-epsilon``; the noise is the seed's, so a rerun repeats). Per entry and ε:
final worst-domain and average test accuracy (mean over seeds, bootstrap 95 % interval of the
mean) and the paired difference to the same entry at ε = ∞.

Writes ``privacy_cost.csv`` and ``privacy_cost.md`` (default ``results/benchmarks``); the study
folders go to ``--work`` (resumable: a rerun redoes only unfinished runs)::

    .venv/bin/python benchmarks/privacy_cost.py [--seeds 5] [--rounds 30] [--workers 2]
        [--epsilons inf,8,2,1] [--work runs/privacy-bench] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import machine_facts, markdown_table

from selection.atomic import write_table_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "results" / "benchmarks"
ENTRIES = ("fisher-topk", "qffl:1", "maxmin:2@probe", "fisher-fair:1@probe")


def bootstrap_ci(x: np.ndarray, reps: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of the mean of ``x``."""
    rng = np.random.default_rng(seed)
    means = rng.choice(x, (reps, len(x)), replace=True).mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def run_one_epsilon(eps: float, seeds: int, rounds: int, workers: int, work: Path, progress):
    from fl_oracle.experiments.runner import OracleFactory
    from fl_oracle.experiments.study.runs import run_study
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.selectors import make_selector

    settings = StudySettings(
        seeds=seeds,
        rounds=rounds,
        selectors=ENTRIES,
        reference=ENTRIES[0],
        dp_epsilon=eps,
        bootstrap=1000,
    )
    factory = OracleFactory(dict(settings.oracle))
    factory.load()
    tag = "inf" if math.isinf(eps) else f"{eps:g}"
    return run_study(
        settings,
        work / f"eps_{tag}",
        make_oracle=factory,
        make_selector=make_selector,
        workers=workers,
        progress=lambda done, total, label: progress(f"epsilon {tag}: {done}/{total} rounds"),
    )


def summarize(hist: dict[float, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    base = hist.get(math.inf)
    for eps, h in hist.items():
        last = h[h["round"] == h["round"].max()]
        for entry, g in last.groupby("entry", sort=False):
            g = g.sort_values("seed")
            row = {"epsilon": "inf" if math.isinf(eps) else eps, "entry": entry}
            for m in ("acc_worst", "acc_avg"):
                v = g[m].to_numpy(dtype=float)
                lo, hi = bootstrap_ci(v)
                row[f"final_{m}"] = round(float(v.mean()), 2)
                row[f"final_{m}_ci"] = f"[{lo:.2f}, {hi:.2f}]"
                if base is not None and not math.isinf(eps):
                    b = base[(base["round"] == base["round"].max()) & (base["entry"] == entry)]
                    d = v - b.sort_values("seed")[m].to_numpy(dtype=float)
                    lo, hi = bootstrap_ci(d)
                    row[f"d_{m}_vs_inf"] = f"{d.mean():+.2f} [{lo:+.2f}, {hi:+.2f}]"
            if "dp_z" in g:
                row["z"] = round(float(g["dp_z"].iloc[0]), 3)
                row["epsilon_spent"] = round(float(g["dp_epsilon"].max()), 3)
            rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epsilons", default="inf,8,2,1")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "privacy-bench")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    command = shlex.join([".venv/bin/python", "benchmarks/privacy_cost.py", *sys.argv[1:]])
    epsilons = [float(e) for e in args.epsilons.split(",")]
    load0 = os.getloadavg()[0]
    hist = {}
    cols = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*cols) as bar:
        task = bar.add_task("privacy", total=None)
        for eps in epsilons:
            hist[eps] = run_one_epsilon(
                eps,
                args.seeds,
                args.rounds,
                args.workers,
                args.work,
                lambda w: bar.update(task, description=w),
            )
    df = summarize(hist)
    write_table_atomic(df, args.out / "privacy_cost.csv")
    import torch

    show = ["epsilon", "entry", "z", "epsilon_spent", "final_acc_worst", "final_acc_worst_ci",
            "d_acc_worst_vs_inf", "final_acc_avg", "final_acc_avg_ci", "d_acc_avg_vs_inf"]  # fmt: skip
    md = "\n".join(
        [
            "# What private statistics cost selection",
            "",
            f"`{command}`",
            "",
            f"Machine: {machine_facts(torch.device('cpu'))}. 1-minute load {load0:.2f} before, "
            f"{os.getloadavg()[0]:.2f} after.",
            "",
            f"{args.seeds} seeds x {args.rounds} rounds, K = 5, the study's default federation; "
            "delta = 1e-5; z: the noise multiplier of each round's Gaussian mechanism (noise "
            "standard deviation z·√m unit widths on a report of m fields); epsilon_spent: the "
            "accountant's epsilon after the last round. Final accuracies: mean over seeds "
            "[bootstrap 95 % interval]; d_*_vs_inf: the same entry and seed without privacy, "
            "paired.",
            "",
            markdown_table(df[[c for c in show if c in df.columns]].fillna("")),
            "",
        ]
    )
    write_text_atomic(md, args.out / "privacy_cost.md")
    print(md)


if __name__ == "__main__":
    main()
