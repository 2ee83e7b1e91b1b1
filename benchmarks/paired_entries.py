"""Paired differences between two entries of one finished study, on the same seeds.

A study's own tables pair every entry with its reference (``paired.csv``) and with the
baselines (``dominance.csv``); this answers "A against B" for any two entries: the final
average and final worst-domain accuracy of A minus B on each seed, mean and bootstrap 95 %
interval of the mean (10,000 resamples, generator seeded 0). Writes ``<name>.md`` and
``<name>.csv`` (default ``results/benchmarks/predictor_live``)::

    .venv/bin/python benchmarks/paired_entries.py --study results/study-baselines \\
        --pairs "eps-lt:5@boosted|eps-lt:5@probe,eps-lt:5@boosted-lcb:20|eps-lt:5@boosted"
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

from fl_oracle.experiments.study.runs import read_history
from selection.atomic import write_table_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]

BOOT = 10000
PAIRS = (
    "eps-lt:5@boosted|eps-lt:5@probe,fisher-fair:1@boosted|fisher-fair:1@probe,"
    "eps-lt:5@boosted-lcb:20|eps-lt:5@boosted,fisher-fair:1@boosted-lcb:20|fisher-fair:1@boosted"
)


def paired(history: pd.DataFrame, a: str, b: str, rng: np.random.Generator) -> dict:
    """Final-round differences A − B per seed, both metrics, with bootstrap intervals."""
    last = history[history["round"] == history["round"].max()]
    out = {"A": a, "B": b}
    for metric in ("acc_avg", "acc_worst"):
        wide = last.pivot(index="seed", columns="entry", values=metric)
        if a not in wide.columns or b not in wide.columns:
            raise SystemExit(f"paired entries: {a!r} or {b!r} is not an entry of the study")
        x = (wide[a] - wide[b]).dropna().to_numpy(dtype=float)
        means = rng.choice(x, (BOOT, len(x)), replace=True).mean(axis=1)
        out[f"{metric}_diff"] = float(x.mean())
        out[f"{metric}_lo"] = float(np.quantile(means, 0.025))
        out[f"{metric}_hi"] = float(np.quantile(means, 0.975))
        out["seeds"] = len(x)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, default=ROOT / "results" / "study-baselines")
    ap.add_argument("--pairs", default=PAIRS, help="A|B,C|D: each A minus its B")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks")
    ap.add_argument("--name", default="predictor_live")
    args = ap.parse_args(argv)
    history = read_history(args.study)
    rng = np.random.default_rng(0)
    rows = [paired(history, *p.split("|"), rng) for p in args.pairs.split(",")]
    table = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(table, args.out / f"{args.name}.csv")

    def cell(r, m):
        return f"{r[f'{m}_diff']:+.2f} [{r[f'{m}_lo']:+.2f}, {r[f'{m}_hi']:+.2f}]"

    shown = pd.DataFrame(
        [
            {
                "A": f"`{r['A']}`",
                "B": f"`{r['B']}`",
                "final avg, A − B": cell(r, "acc_avg"),
                "final worst, A − B": cell(r, "acc_worst"),
                "seeds": r["seeds"],
            }
            for _, r in table.iterrows()
        ]
    )
    study = args.study.relative_to(ROOT) if args.study.is_relative_to(ROOT) else args.study
    cmd = " ".join(shlex.quote(a) for a in ["benchmarks/paired_entries.py", *sys.argv[1:]])
    text = f"""# Paired entries of `{study}`

Final-round accuracy (%) of A minus B on the same seeds, mean and bootstrap 95 % interval of
the mean. Made by

    .venv/bin/python {cmd}

{markdown_table(shown)}
"""
    write_text_atomic(text, args.out / f"{args.name}.md")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
