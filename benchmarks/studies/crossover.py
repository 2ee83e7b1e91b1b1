"""The value of information's crossover of a raced study: per formulation and raced metric, the
lowest quality of ``noisy:R`` from which it is in the tied-best set up to fresh truth
(:mod:`fl_oracle.experiments.study.crossover`), with the achieved rank correlations.

    .venv/bin/python benchmarks/studies/crossover.py results/study-value-of-information

Reads the study's ``race.csv`` (the race's looks) and its runs' histories (``runs/*/seed*.csv``,
each with ``entry`` and ``info_rho``); writes ``crossover.csv`` and ``crossover.md`` into the
study folder (atomically) and prints the table. A race still running gives its answer so far.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from fl_oracle.experiments.study.crossover import crossover_table
from fl_oracle.experiments.study.racing import race_verdict
from selection.atomic import write_table_atomic, write_text_atomic


def crossover_of(folder: Path) -> pd.DataFrame:
    """The crossover table of the raced study in ``folder``."""
    log = folder / "race.csv"
    if not log.is_file():
        raise SystemExit(f"crossover: {folder} holds no race (no race.csv)")
    verdict = race_verdict(pd.read_csv(log), None)
    runs = sorted((folder / "runs").glob("*/seed*.csv"))
    history = pd.concat([pd.read_csv(p) for p in runs], ignore_index=True) if runs else None
    return crossover_table(verdict, history)


def markdown(table: pd.DataFrame, folder: Path, looks: int, seeds: int) -> str:
    head = (
        f"# The value of information: crossover of `{folder.as_posix()}`\n\n"
        f"`.venv/bin/python benchmarks/studies/crossover.py {folder.as_posix()}` "
        f"(the race at look {looks}, up to {seeds} seeds an entry).\n\n"
        "crossover: the lowest nominal quality R of `noisy:R` from which the formulation is in "
        "the tied-best set (best or tied at the race's δ) at every higher quality up to fresh "
        "truth (R = 100); below: the highest quality under it shown worse; rho_*: the achieved "
        "within-round rank correlation there.\n\n"
    )
    cols = ["formulation", "metric", "answer", "crossover", "below", "rho_crossover",
            "rho_below", "statuses"]  # fmt: skip
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table[cols].itertuples(index=False):
        cells = ["" if isinstance(v, float) and v != v else (f"{v:.2f}" if isinstance(v, float)
                 else str(v)) for v in row]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", type=Path, help="the raced study's folder")
    args = ap.parse_args(argv)
    table = crossover_of(args.study)
    log = pd.read_csv(args.study / "race.csv")
    write_table_atomic(table, args.study / "crossover.csv")
    text = markdown(table, args.study, int(log["look"].max()), int(log["n"].max()))
    write_text_atomic(text, args.study / "crossover.md")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
