"""The demo's report: data first (functions tests check), then one self-contained HTML file.

:func:`report_data` computes everything the report shows — one entry per selector with its
curve, final metrics, best-column marks and dominance relations; the fronts with the
surrogate's error; the problem statement's statistics; the set-up. :func:`render_html` draws it with plotly
(plotly.js embedded once, in the first figure). :func:`write_outputs` writes report.html,
summary.csv, history.csv and fronts.csv atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from fl_oracle.experiments.demo.html import render_html
from fl_oracle.experiments.demo.run import DemoResult
from selection.analysis import correlations, scatter_data
from selection.atomic import write_table_atomic, write_text_atomic
from selection.indicators import nondominated_mask
from selection.plotly_js import write_report

__all__ = [
    "BEST",
    "curves",
    "best_per_column",
    "pareto_of_means",
    "surrogate_error",
    "seed_statistics",
    "report_data",
    "final_seeds",
    "write_outputs",
]

# Final-table columns and whether larger is better.
BEST: dict[str, bool] = {
    "avg_mean": True,
    "worst_mean": True,
    "gap_mean": False,
    "std_mean": False,
    "solve_seconds_mean": False,
}


def curves(history: pd.DataFrame) -> pd.DataFrame:
    """Per selector and round: mean and std over seeds of acc_avg and acc_worst (%)."""
    g = history.groupby(["selector", "round"], sort=False)
    out = g.agg(
        avg_mean=("acc_avg", "mean"),
        avg_std=("acc_avg", "std"),
        worst_mean=("acc_worst", "mean"),
        worst_std=("acc_worst", "std"),
        n_seeds=("seed", "nunique"),
    )
    return out.fillna(0.0).reset_index()


def best_per_column(summary: pd.DataFrame) -> dict[str, list[str]]:
    """For each final-table column, the selector(s) with the best mean value (ties kept)."""
    best = {}
    for col, larger in BEST.items():
        v = summary[col].to_numpy(dtype=float)
        target = np.nanmax(v) if larger else np.nanmin(v)
        best[col] = [
            s for s, x in zip(summary["selector"], v, strict=True) if np.isclose(x, target)
        ]
    return best


def pareto_of_means(summary: pd.DataFrame) -> pd.DataFrame:
    """Final (avg, worst) of every selector (seed means): non-dominated flag and who dominates whom.

    Returns:
        Columns ``selector, avg, worst, nondominated, dominates, dominated_by`` (the last two
        ';'-joined selector specs; both objectives maximized).
    """
    P = summary[["avg_mean", "worst_mean"]].to_numpy(dtype=float)
    nd = nondominated_mask(P, maximise=True, keep_weakly=True)
    names = list(summary["selector"])
    ge = (P[:, None, :] >= P[None, :, :]).all(axis=2)
    gt = (P[:, None, :] > P[None, :, :]).any(axis=2)
    dom = ge & gt  # dom[i, j]: i dominates j
    return pd.DataFrame(
        {
            "selector": names,
            "avg": P[:, 0],
            "worst": P[:, 1],
            "nondominated": nd.astype(bool),
            "dominates": [";".join(n for n, d in zip(names, row, strict=True) if d) for row in dom],
            "dominated_by": [
                ";".join(n for n, d in zip(names, col, strict=True) if d) for col in dom.T
            ],
        }
    )


def surrogate_error(fronts: pd.DataFrame) -> pd.DataFrame:
    """Realized minus predicted, per sweep method and objective: mean, mean |.|, max |.| (pp)."""
    rows = []
    if fronts.empty:
        return pd.DataFrame(columns=["method", "objective", "points", "bias", "mae", "max_abs"])
    for method, part in fronts.groupby("method", sort=False):
        for obj in ("utility", "gap", "worst"):
            e = part[f"err_{obj}"].to_numpy(dtype=float)
            rows.append(
                {
                    "method": method,
                    "objective": obj,
                    "points": len(e),
                    "bias": float(e.mean()),
                    "mae": float(np.abs(e).mean()),
                    "max_abs": float(np.abs(e).max()),
                }
            )
    return pd.DataFrame(rows)


def seed_statistics(stats: pd.DataFrame) -> dict:
    """The problem statement's correlations on the reference runs' statistics (:mod:`selection.analysis`).

    ρ(F,U|B) is the partial Spearman correlation (the partial correlation of the ranks).

    Args:
        stats: round-stats rows of several seeds (a ``seed`` column tells them apart).

    Returns:
        ``pooled`` (dict: n, rho_FU, p_FU, rho_FU_given_B, rho_FB, p_FB, rho_UB over every
        row), ``per_round`` (DataFrame: seed, round and the same columns per (seed, round)
        table), ``scatter`` (DataFrame: seed, round, client_id, domain, log_F, U, B).
    """
    pooled = correlations(stats).set_index("round").loc["pooled"].to_dict()
    per, scatter = [], []
    for seed, part in stats.groupby("seed", sort=True):
        c = correlations(part)
        per.append(c[c["round"] != "pooled"].assign(seed=int(seed)))
        scatter.append(scatter_data(part).assign(seed=int(seed)))
    per_round = pd.concat(per, ignore_index=True) if per else pd.DataFrame()
    if not per_round.empty:
        per_round["round"] = per_round["round"].astype(int)
        per_round = per_round[["seed", *[c for c in per_round.columns if c != "seed"]]]
    return {
        "pooled": {k: (int(v) if k == "n" else float(v)) for k, v in pooled.items()},
        "per_round": per_round,
        "scatter": pd.concat(scatter, ignore_index=True) if scatter else pd.DataFrame(),
    }


def report_data(result: DemoResult) -> dict:
    """Everything the report shows, computed before plotting.

    Returns:
        ``selectors`` (spec -> {curve, final, best_in, nondominated, dominates, dominated_by}),
        ``final_table``, ``best``, ``plane``, ``fronts``, ``surrogate_error``, ``seed_stats``,
        ``setup``, ``domains``, ``final_seeds`` (selector, seed, acc_avg, acc_worst at each
        run's last round).
    """
    cur = curves(result.history)
    best = best_per_column(result.summary)
    plane = pareto_of_means(result.summary)
    selectors = {}
    for rec, prow in zip(result.summary.to_dict("records"), plane.to_dict("records"), strict=True):
        spec = rec["selector"]
        selectors[spec] = {
            "curve": cur[cur["selector"] == spec].drop(columns="selector").reset_index(drop=True),
            "final": rec,
            "best_in": [c for c, who in best.items() if spec in who],
            "nondominated": bool(prow["nondominated"]),
            "dominates": [s for s in prow["dominates"].split(";") if s],
            "dominated_by": [s for s in prow["dominated_by"].split(";") if s],
        }
    return {
        "selectors": selectors,
        "final_table": result.summary,
        "best": best,
        "plane": plane,
        "fronts": result.fronts,
        "surrogate_error": surrogate_error(result.fronts),
        "seed_stats": seed_statistics(result.stats),
        "setup": result.setup,
        "domains": list(result.domains),
        "final_seeds": final_seeds(result.history),
    }


def final_seeds(history: pd.DataFrame) -> pd.DataFrame:
    """Each run's last round: ``selector, seed, acc_avg, acc_worst`` (the plane's faint dots)."""
    cols = ["selector", "seed", "acc_avg", "acc_worst"]
    if history.empty:
        return pd.DataFrame(columns=cols)
    last = history.loc[history.groupby(["selector", "seed"], sort=False)["round"].idxmax()]
    return last[cols].reset_index(drop=True)


def write_outputs(
    result: DemoResult, out: str | os.PathLike, *, record: str | None = None
) -> list[Path]:
    """Write report.html, summary.csv, history.csv and fronts.csv under ``out`` (atomically),
    and ``record`` (the run record's TOML: commit, machine, seconds) as record.toml."""
    out = Path(out)
    data = report_data(result)
    paths = [
        write_table_atomic(result.history, out / "history.csv"),
        write_table_atomic(result.fronts, out / "fronts.csv"),
        write_report(render_html(data), out / "report.html"),
    ]
    if record is not None:
        paths.append(write_text_atomic(record, out / "record.toml"))
    # last: its presence marks the demo as complete (fedsel.experiments.runfolder)
    return [write_table_atomic(result.summary, out / "summary.csv"), *paths]
