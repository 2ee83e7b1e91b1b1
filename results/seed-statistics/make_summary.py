"""Tables of the seed-statistics reproduction: copy each seed's run tables here, analyse each
seed (``fedsel analyze``'s tables in ``seed<k>/``), analyse all seeds as one table
(``stats.csv`` with ids ``seed<k>:<client>``, ``analysis.html`` etc. here) and write ``tables.md``: per measured round,
the test accuracy of w_t, the F range and rho(F,U), rho(F,U|B), rho(F,B) for each U reading with
bootstrap 95 % intervals, each seed alone and the seeds pooled within the round.

Run after ``results/seed-statistics/run.sh``:
``.venv/bin/python results/seed-statistics/make_summary.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from selection.analysis import ANALYSED_U, SEED, bootstrap_correlations
from selection.analysis_report import write_analysis
from selection.atomic import write_table_atomic
from selection.schema import read_stats

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "runs" / "seed-statistics"
HERE = Path(__file__).resolve().parent
N_BOOT = 2000


def _ci(r: dict, k: str) -> str:
    if not np.isfinite(r[k]):
        return "n/a"
    return f"{r[k]:+.2f} [{r[k + '_lo']:+.2f}, {r[k + '_hi']:+.2f}]"


def _stage(t: int) -> str:
    return "early" if t <= 3 else "middle" if t <= 20 else "trained"


def main() -> None:
    seeds = sorted(p for p in RUNS.glob("seed*") if (p / "stats.parquet").is_file())
    stats, accs = [], []
    for run in seeds:
        dest = HERE / run.name
        dest.mkdir(exist_ok=True)
        for name in ("stats.csv", "rounds.csv", "config.toml"):
            shutil.copyfile(run / name, dest / name)
        df = read_stats(run / "stats.parquet")
        write_analysis(df, dest, n_boot=N_BOOT)
        (dest / "analysis.html").unlink()  # one self-contained report (below) is enough
        stats.append(df.assign(seed=run.name))
        r = pd.read_csv(run / "rounds.csv").assign(seed=run.name)
        accs.append(r)
    df = pd.concat(stats, ignore_index=True)
    rounds = pd.concat(accs, ignore_index=True)
    # all seeds in one round-stats table (ids "seed0:mnist-0"): per round, the seeds pooled
    both = df.assign(client_id=df["seed"] + ":" + df["client_id"])
    write_table_atomic(both, HERE / "stats.csv")
    write_analysis(both.drop(columns="seed"), HERE, n_boot=N_BOOT)
    lines = [
        "# Seed statistics: per measured round",
        "",
        f"Seeds: {', '.join(p.name for p in seeds)}; bootstrap: {N_BOOT} resamples of clients "
        "(percentile 95 % intervals). Accuracy = test accuracy (%) of w_t, the model the round "
        "measures at (mean over seeds). The seed (problem statement): "
        f"ρ(F,U) = {SEED['rho_FU']:+.3f}, ρ(F,U|B) = {SEED['rho_FU_given_B']:+.3f}, "
        f"ρ(F,B) = {SEED['rho_FB']:+.3f}.",
        "",
    ]
    acc_cols = ["acc_mnist", "acc_usps", "acc_svhn", "acc_syn"]
    head = ["round", "stage", "mnist/usps/svhn/syn acc %", "log10 F range", "U median"]
    for reading in [r for r in ANALYSED_U if r in df.columns]:
        lines += [f"## U reading `{reading}` (seeds pooled within the round)", ""]
        lines.append("| " + " | ".join(head + ["ρ(F,U)", "ρ(F,U|B)", "ρ(F,B)", "n"]) + " |")
        lines.append("|" + "---|" * (len(head) + 4))
        for t, g in df.groupby("round"):
            prev = rounds[rounds["round"] == t - 1]
            acc = "/".join(f"{prev[c].mean():.0f}" for c in acc_cols) if len(prev) else "~10 (init)"
            res = bootstrap_correlations(
                g["F"].to_numpy(), g[reading].to_numpy(), g["B"].to_numpy(), n_boot=N_BOOT
            )
            lf = np.log10(g["F"].to_numpy())
            lines.append(
                f"| {t} | {_stage(int(t))} | {acc} | {lf.min():.2f} .. {lf.max():.2f} | "
                f"{g[reading].median():.1f} | {_ci(res, 'rho_FU')} | {_ci(res, 'rho_FU_given_B')} "
                f"| {_ci(res, 'rho_FB')} | {len(g)} |"
            )
        lines.append("")
    lines += ["## ρ(F,U) per seed (reading `U`)", ""]
    lines.append("| round | " + " | ".join(p.name for p in seeds) + " |")
    lines.append("|---|" + "---|" * len(seeds))
    for t, g in df.groupby("round"):
        cells = []
        for p in seeds:
            h = g[g["seed"] == p.name]
            res = bootstrap_correlations(
                h["F"].to_numpy(), h["U"].to_numpy(), h["B"].to_numpy(), n_boot=N_BOOT
            )
            cells.append(_ci(res, "rho_FU") if len(h) else "–")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    lines.append("")
    (HERE / "tables.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {HERE / 'tables.md'} and {len(seeds)} seed folders")


if __name__ == "__main__":
    main()
