"""How far clustered sampling's expected aggregation weights move from p_i when its K draws
must be K distinct clients.

Fraboni et al.'s Algorithm 1 draws one client from each of K distributions and weights each
draw 1/K; a client drawn twice counts 2/K, and then every client's expected weight is exactly
its share p_i = n_i / n ("unbiased"). fedsel's selections are K distinct clients, so a client
already drawn is not drawn again (``selection.baselines.clustered.draw_distinct``), which moves
the expected weights. This measures by how much on the Digits-4 federation's sizes (5 clients
per domain of 600 / 72 / 732 / 100 samples, +j for the j-th): the mean over ``--draws`` picks
of each client's weight 1/K·[picked], relative to p_i. Writes ``clustered_bias.md`` and
``.csv`` under ``results/benchmarks/``::

    .venv/bin/python benchmarks/clustered_bias.py
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import markdown_table

from selection.atomic import write_table_atomic, write_text_atomic
from selection.baselines.clustered import ClusteredSampling
from selection.problem import SelectionProblem

ROOT = Path(__file__).resolve().parents[1]

SIZES = {"mnist": 600, "usps": 72, "svhn": 732, "syn": 100}


def federation() -> pd.DataFrame:
    rows = [
        {"round": 0, "client_id": f"{d}-{j}", "domain": d, "n_samples": n + j, "U": 50.0,
         "F": 1.0, "B": 0.1, "cos_g": 0.5, **{f"U_{x}": 50.0 for x in SIZES}}
        for d, n in SIZES.items() for j in range(5)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def bias(k: int, draws: int, seed: int = 0) -> pd.DataFrame:
    """Per client: p_i, the mean weight over ``draws`` picks and their relative difference."""
    p = SelectionProblem.from_stats(federation(), k)
    rule = ClusteredSampling("clustered:1", 1)
    rng = np.random.default_rng(seed)
    w = np.zeros(p.n)
    for _ in range(draws):
        w[rule.pick(p, rng)] += 1.0 / k
    w /= draws
    share = p.n_samples / p.n_samples.sum()
    return pd.DataFrame({"k": k, "client_id": p.ids, "domain": p.client_domains, "p_i": share,
                         "mean_weight": w, "relative": w / share - 1.0})  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=20_000)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks")
    args = ap.parse_args(argv)
    if args.draws < 100:
        ap.error("--draws must be at least 100")
    table = pd.concat([bias(k, args.draws) for k in (5, 10)], ignore_index=True)
    write_table_atomic(table, args.out / "clustered_bias.csv")
    # the Monte Carlo error of a mean weight: sd of (1/K)[picked] / sqrt(draws)
    se = float((np.sqrt(table["mean_weight"] * (1 / table["k"] - table["mean_weight"]))
                / np.sqrt(args.draws) / table["p_i"]).max())  # fmt: skip
    summary = (
        table.groupby("k")["relative"].agg(["min", "max"])
        .join(table.pivot_table(index="k", columns="domain", values="relative", aggfunc="mean"))
        .reset_index().round(3)
    )  # fmt: skip
    cmd = "python " + " ".join(
        shlex.quote(a) for a in ["benchmarks/clustered_bias.py", *(argv or sys.argv[1:])]
    )
    text = (
        "# Clustered sampling's expected weights with K distinct draws\n\n"
        f"`{cmd}`: {args.draws:,} picks of `clustered:1` per K on the Digits-4 sizes; a client's "
        "mean weight (1/K when picked) relative to its share p_i (0 = unbiased). Columns: the "
        "smallest and largest client's relative difference, then each domain's mean. Monte "
        f"Carlo error of a relative difference: at most {se:.3f}.\n\n"
        + markdown_table(summary)
        + "\n"
    )
    write_text_atomic(text, args.out / "clustered_bias.md")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
