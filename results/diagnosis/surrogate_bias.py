"""Where the linear surrogate misses: predicted U_d(S) vs the realized accuracy of the aggregate.

    .venv/bin/python results/diagnosis/surrogate_bias.py [--seeds 0,1] [--rounds 20]

On the study's oracle settings (``results/study/study.toml``), training driven by ``eps:5``,
each round compares, for the committed selection and 15 random K-selections, the surrogate's
per-domain prediction U_d(S) = mean_{i in S} U_{i,d} (each client's update applied alone, in
full) with the validation accuracy on d of the model the oracle would commit (the
sample-weighted aggregate, ``Oracle.evaluate(..., split="val")``). A domain is *targeted* by S
when S holds at least one of its clients. Writes ``surrogate_bias.csv`` (every comparison) and
``surrogate_bias.md`` (the summary) beside this script.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # markdown_table of benchmarks/oracle.py


def main() -> None:
    import torch
    from oracle import markdown_table

    from fl_oracle.cli.study import study_factory
    from selection.atomic import write_table_atomic, write_text_atomic
    from selection.progress import report, rich_progress
    from selection.selectors import make_selector

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--random", type=int, default=15, help="random K-selections per round")
    args = ap.parse_args()
    torch.set_num_threads(1)
    settings = tomllib.loads((ROOT / "results" / "study" / "study.toml").read_text())
    k = int(settings["k"])
    factory = study_factory({**settings["oracle"], "k": k})
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    with rich_progress() as progress:
        total, done = len(seeds) * args.rounds, 0
        for seed in seeds:
            oracle, sel = factory(seed), make_selector("eps:5", seed=seed)
            rng = np.random.default_rng(1000 + seed)
            doms = list(oracle.domains)
            for t in range(args.rounds):
                table = oracle.round_stats()
                chosen = sel(table, k)
                ids = table["client_id"].to_numpy()
                cands = [list(chosen)] + [
                    list(ids[np.sort(rng.choice(len(ids), k, replace=False))])
                    for _ in range(args.random)
                ]
                for j, s in enumerate(cands):
                    part = table[table["client_id"].isin(s)]
                    real = oracle.evaluate(s, split="val")
                    for d in doms:
                        rows.append(
                            {
                                "seed": seed,
                                "round": t,
                                "committed": j == 0,
                                "domain": d,
                                "targeted": bool((part["domain"] == d).any()),
                                "predicted": float(part[f"U_{d}"].mean()),
                                "realized": float(real[f"acc_{d}"]),
                            }
                        )
                oracle.step(chosen)
                done += 1
                report(progress, done, total, "surrogate bias")
    df = pd.DataFrame(rows)
    df["error"] = df["predicted"] - df["realized"]
    write_table_atomic(df, HERE / "surrogate_bias.csv")
    g = (
        df.groupby(["committed", "targeted"])["error"]
        .agg(["mean", "std", "size"])
        .reset_index()
        .rename(columns={"mean": "bias (pred - real)", "std": "sd", "size": "n"})
    )
    per_dom = df[df["committed"]].groupby(["domain", "targeted"])["error"].mean().unstack()
    per_dom.columns = [f"targeted={c}" for c in per_dom.columns]
    lines = [
        "# Surrogate bias: predicted U_d(S) minus the realized validation accuracy on d",
        "",
        f"`.venv/bin/python results/diagnosis/surrogate_bias.py --seeds {args.seeds} "
        f"--rounds {args.rounds}` (eps:5 drives training; K = {k}; {args.random} random "
        "selections per round beside the committed one).",
        "",
        markdown_table(g.round(2)),
        "",
        "Committed selections, bias per domain (columns: the domain targeted or not):",
        "",
        markdown_table(per_dom.reset_index().round(2)),
        "",
    ]
    write_text_atomic("\n".join(lines), HERE / "surrogate_bias.md")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
