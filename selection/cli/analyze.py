"""``fedsel analyze``: the Fisher–utility correlations of a round-stats table, per round and
U reading, with bootstrap intervals; tables, figures and a page in the output folder."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from selection.cli.options import OVERWRITE, refuse_earlier

__all__ = ["analyze", "register"]

#: what an analysis writes in its folder (an earlier one is refused without --overwrite)
WRITTEN = ("per_round.csv", "statement.csv", "analysis.csv", "sample_weights.csv",
           "analysis.json", "analysis.html")  # fmt: skip


def analyze(
    stats: Path = typer.Option(..., "--stats", "-s", help="Round-stats table (.parquet/.csv)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder."),
    boot: int = typer.Option(1000, "--boot", min=0, help="Bootstrap resamples (0 = none)."),
    boot_seed: int = typer.Option(0, "--boot-seed", min=0, help="Seed of the resampling."),
    overwrite: bool = OVERWRITE,
) -> None:
    """Per round and U reading: Spearman rho(F,U), rho(F,U|B), rho(F,B) with bootstrap 95%
    intervals; the pooled value beside its warning; the problem statement's numbers; figures per round."""
    from selection.analysis import POOLED_WARNING
    from selection.analysis_report import write_analysis
    from selection.schema import read_stats

    refuse_earlier(out, WRITTEN, "analyze", overwrite)  # before any work: nothing earlier lost
    result = write_analysis(read_stats(stats), out, n_boot=boot, seed=boot_seed)
    per = result.per_round

    def ci(r, k: str) -> str:
        lo, hi = r[f"{k}_lo"], r[f"{k}_hi"]
        return f"{r[k]:+.3f} [{lo:+.3f}, {hi:+.3f}]"

    print("round reading   n  rho(F,U) [95% CI]        rho(F,U|B) [95% CI]      rho(F,B) [95% CI]")
    for _, r in per.iterrows():
        if r["round"] == "pooled":
            continue
        print(
            f"{r['round']:>5} {r['reading']:<7} {r['n']:>3}  {ci(r, 'rho_FU'):<24} "
            f"{ci(r, 'rho_FU_given_B'):<24} {ci(r, 'rho_FB')}"
        )
    for _, r in per[per["round"] == "pooled"].iterrows():
        print(f"pooled rho(F,U)={ci(r, 'rho_FU')} ({r['reading']}; see the warning)")
    print(f"warning: {POOLED_WARNING}")
    print(
        "the problem statement (on its trained model): rho(F,U)=-0.550 rho(F,U|B)=-0.547 "
        "rho(F,B)=+0.064"
    )
    print(f"wrote {out}/per_round.csv, statement.csv, analysis.csv, .json, .html", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add ``analyze`` to the fedsel app."""
    app.command("analyze")(analyze)
