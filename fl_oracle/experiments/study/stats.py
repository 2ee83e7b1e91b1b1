"""Statistics of a study a reviewer accepts: per-run metrics, paired differences with bootstrap
intervals, Wilcoxon signed-rank tests with Holm's correction, and the surrogate error.

Everything here is computed from the per-round history alone (``history.csv``), so the
summary's intervals can be recomputed from the committed history (same resamples and seed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

__all__ = [
    "METRICS",
    "run_metrics",
    "paired_differences",
    "holm",
    "summary_table",
    "dominance",
    "surrogate_error",
]

# metric -> (label, True if higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "final_avg": ("final average accuracy (%)", True),
    "final_worst": ("final worst-domain accuracy (%)", True),
    "final_gap": ("final domain gap (pp)", False),
    "auc_avg": ("mean average accuracy over rounds (%)", True),
    "auc_worst": ("mean worst-domain accuracy over rounds (%)", True),
    "auc_gap": ("mean domain gap over rounds (pp)", False),
    "rounds_to_target": ("rounds to the target worst-domain accuracy", False),
    "compute_per_round": ("client compute per round (train + probe samples)", False),
    "compute_to_target": ("client compute to the target (train + probe samples)", False),
    "bytes_to_target": ("bytes to the target (up + down)", False),
    "avg_at_budget": ("average accuracy at the reference's compute (%)", True),
    "worst_at_budget": ("worst-domain accuracy at the reference's compute (%)", True),
}
# metrics read from the deployment-cost columns (histories written before them lack them)
COST_METRICS = (
    "compute_per_round",
    "compute_to_target",
    "bytes_to_target",
    "avg_at_budget",
    "worst_at_budget",
)


def run_metrics(history: pd.DataFrame, *, target_worst: float, rounds: int) -> pd.DataFrame:
    """One row per (entry, seed) with every metric of :data:`METRICS`.

    ``rounds_to_target`` is the first number of committed rounds after which the worst-domain
    test accuracy reaches ``target_worst``; a run that never does counts as ``rounds + 1``
    (censored; ``reached`` says which).

    With the deployment-cost columns (:mod:`fl_oracle.experiments.cost`): ``compute_per_round``
    (mean train + probe samples per round), ``compute_to_target`` and ``bytes_to_target``
    (cumulative train + probe samples, bytes up + down, over the rounds to the target; a run
    that never reaches it is charged its whole run plus one round at its mean cost, the
    censoring of ``rounds_to_target``).
    """
    from fl_oracle.experiments.study.cost import costed as has_costs
    from fl_oracle.experiments.study.cost import numeric_costs

    rows = []
    costed = has_costs(history)
    if costed:
        history = numeric_costs(history)
    for (entry, seed), g in history.groupby(["entry", "seed"], sort=False):
        g = g.sort_values("round")
        hit = np.flatnonzero(g["acc_worst"].to_numpy() >= target_worst)
        last = g.iloc[-1]
        extra = {}
        if costed:
            compute = (g["cost_train_samples"] + g["cost_probe_samples"]).to_numpy(float)
            sent = (g["cost_bytes_up"] + g["cost_bytes_down"]).to_numpy(float)
            upto = int(hit[0]) + 1 if len(hit) else len(g)
            tail = 0 if len(hit) else 1  # censored: one more round at the run's mean
            extra = {
                "compute_per_round": float(compute.mean()),
                "compute_to_target": float(compute[:upto].sum() + tail * compute.mean()),
                "bytes_to_target": float(sent[:upto].sum() + tail * sent.mean()),
            }
        rows.append(
            {
                "entry": entry,
                "seed": int(seed),
                "final_avg": float(last["acc_avg"]),
                "final_worst": float(last["acc_worst"]),
                "final_gap": float(last["acc_gap"]),
                "auc_avg": float(g["acc_avg"].mean()),
                "auc_worst": float(g["acc_worst"].mean()),
                "auc_gap": float(g["acc_gap"].mean()),
                "rounds_to_target": float(hit[0] + 1 if len(hit) else rounds + 1),
                "reached": bool(len(hit)),
                **extra,
            }
        )
    return pd.DataFrame(rows)


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error), same order as ``p``."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj


def _interval(d: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    if len(d) < 2:  # one seed: no interval, nothing can be claimed
        return float("nan"), float("nan")
    if np.ptp(d) == 0:  # every seed gives the same difference: the interval is that point
        return float(d.mean()), float(d.mean())
    res = sps.bootstrap(
        (d,),
        np.mean,
        n_resamples=resamples,
        confidence_level=0.95,
        method="BCa",
        random_state=np.random.default_rng(seed),
    )
    lo, hi = res.confidence_interval
    if not (np.isfinite(lo) and np.isfinite(hi)):  # BCa degenerate: percentile instead
        res = sps.bootstrap(
            (d,),
            np.mean,
            n_resamples=resamples,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
        lo, hi = res.confidence_interval
    return float(lo), float(hi)


#: decimals paired differences are kept to (accuracy points): far below any reported digit,
#: far above float noise (an interval's end at -1.4e-14 read as "worse" and printed so)
DECIMALS = 9


def _denoised(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to :data:`DECIMALS`, with -0.0 as 0.0."""
    return np.round(np.asarray(x, dtype=float), DECIMALS) + 0.0


def _wilcoxon(d: np.ndarray) -> float:
    if len(d) == 0 or np.all(d == 0):
        return 1.0
    return float(sps.wilcoxon(d, zero_method="wilcox").pvalue)


PAIRED_COLUMNS = ("entry", "metric", "n", "mean_ref", "mean", "diff", "ci_lo", "ci_hi", "p",
                  "p_holm", "better", "worse")  # fmt: skip


def paired_differences(
    metrics: pd.DataFrame,
    reference: str,
    *,
    entries: Sequence[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Paired differences (entry − reference, seed by seed) for every metric.

    Columns: ``entry, metric, n, mean_ref, mean, diff, ci_lo, ci_hi`` (bootstrap BCa 95 %
    interval of the mean difference), ``p`` (Wilcoxon signed-rank, two-sided), ``p_holm``
    (Holm-adjusted across the entries, per metric), ``better``/``worse`` (the interval excludes
    zero on that metric's good/bad side).
    """
    ref = metrics[metrics["entry"] == reference].set_index("seed")
    entries = [e for e in (entries or metrics["entry"].unique()) if e != reference]
    rows = []
    for metric, (_, higher) in METRICS.items():
        if metric not in metrics.columns:
            continue
        block = []
        for entry in entries:
            cur = metrics[metrics["entry"] == entry].set_index("seed")
            seeds = sorted(set(cur.index) & set(ref.index))
            if not seeds:
                continue
            d = cur.loc[seeds, metric].to_numpy(float) - ref.loc[seeds, metric].to_numpy(float)
            d = _denoised(d)  # equal accuracies differ by 0, not by float noise
            lo, hi = (float(v) for v in _denoised(np.array(_interval(d, resamples, seed))))
            block.append(
                {
                    "entry": entry,
                    "metric": metric,
                    "n": len(seeds),
                    "mean_ref": float(ref.loc[seeds, metric].mean()),
                    "mean": float(cur.loc[seeds, metric].mean()),
                    "diff": float(_denoised(d.mean())),
                    "ci_lo": lo,
                    "ci_hi": hi,
                    "p": _wilcoxon(d),
                }
            )
        if block:
            adj = holm([b["p"] for b in block])
            for b, a in zip(block, adj, strict=True):
                good = (b["ci_lo"] > 0) if higher else (b["ci_hi"] < 0)
                bad = (b["ci_hi"] < 0) if higher else (b["ci_lo"] > 0)
                b.update(p_holm=float(a), better=bool(good), worse=bool(bad))
            rows.extend(block)
    # no entry besides the reference (a study of one entry, or only its runs finished yet):
    # the table is empty but keeps its columns, so the report reads it as "nothing paired"
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


def summary_table(metrics: pd.DataFrame, order: Sequence[str]) -> pd.DataFrame:
    """Per entry: mean and standard deviation over seeds of every metric, and n seeds."""
    g = metrics.groupby("entry")
    out = pd.DataFrame({"n_seeds": g.size()})
    for m in (m for m in METRICS if m in metrics.columns):
        out[f"{m}_mean"] = g[m].mean()
        out[f"{m}_sd"] = g[m].std(ddof=1)
    out["reached_target"] = g["reached"].mean()
    out = out.reindex([e for e in order if e in out.index])
    return out.reset_index().rename(columns={"index": "entry"})


def dominance(
    metrics: pd.DataFrame,
    candidates: Sequence[str],
    baselines: Sequence[str],
    *,
    resamples: int = 10_000,
    seed: int = 0,
    on: tuple[str, str] = ("final_avg", "final_worst"),
) -> pd.DataFrame:
    """Does a candidate beat each baseline on both ``on`` metrics with intervals excluding 0?

    Returns one row per (candidate, baseline) with the paired interval of each metric,
    ``beats`` (both intervals above zero), each metric's Wilcoxon p and its Holm-adjusted
    ``p_holm_<metric>`` over the candidate's **family** of tests (every baseline × every
    metric of ``on``), and ``beats_fw``: both intervals above zero *and* both family-wise
    adjusted p below 0.05. A candidate dominates every baseline when all its rows have
    ``beats``; the claim accounts for the comparisons made when all have ``beats_fw``.

    Beside the per-entry family, the **study-wide** one: ``p_holm_sw_<metric>``, Holm over
    every candidate × baseline × metric comparison of the table in one family, and
    ``beats_sw`` (intervals above zero and every study-wide adjusted p below 0.05) — the
    claim that accounts for every comparison the study made on this plane.
    """
    rows = []
    for base in baselines:
        pd_ = paired_differences(
            metrics, base, entries=list(candidates), resamples=resamples, seed=seed
        )
        for cand in candidates:
            if cand == base:
                continue
            sub = pd_[(pd_["entry"] == cand) & pd_["metric"].isin(on)].set_index("metric")
            if len(sub) < len(on):
                continue
            row = {"entry": cand, "baseline": base}
            for m in on:
                row[f"{m}_diff"] = sub.loc[m, "diff"]
                row[f"{m}_ci_lo"] = sub.loc[m, "ci_lo"]
                row[f"{m}_ci_hi"] = sub.loc[m, "ci_hi"]
                row[f"p_{m}"] = float(sub.loc[m, "p"])
            row["beats"] = bool(all(sub.loc[m, "ci_lo"] > 0 for m in on))
            rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    for _, g in out.groupby("entry", sort=False):  # Holm over baselines × metrics
        ps = np.concatenate([g[f"p_{m}"].to_numpy() for m in on])
        adj = holm(ps).reshape(len(on), len(g))
        for j, m in enumerate(on):
            out.loc[g.index, f"p_holm_{m}"] = adj[j]
    out["beats_fw"] = out["beats"] & np.all(
        [out[f"p_holm_{m}"].to_numpy() < 0.05 for m in on], axis=0
    )
    ps = np.concatenate([out[f"p_{m}"].to_numpy() for m in on])  # one study-wide family
    adj = holm(ps).reshape(len(on), len(out))
    for j, m in enumerate(on):
        out[f"p_holm_sw_{m}"] = adj[j]
    out["beats_sw"] = out["beats"] & np.all(
        [out[f"p_holm_sw_{m}"].to_numpy() < 0.05 for m in on], axis=0
    )
    return out


def surrogate_error(history: pd.DataFrame) -> pd.DataFrame:
    """Predicted (linear model on the round's statistics) vs realized (test accuracy of the
    committed model) worst-domain accuracy and gap, per entry: bias (mean predicted − realized)
    and mean absolute error, over every round and seed."""
    # a rule predicts nothing (its pred_* are empty in a study that skips the records)
    pred = history[["pred_worst", "pred_gap"]].apply(pd.to_numeric, errors="coerce")
    h = history.assign(pred_worst=pred["pred_worst"], pred_gap=pred["pred_gap"])
    h = h.dropna(subset=["pred_worst", "pred_gap"])
    rows = []
    for entry, g in h.groupby("entry", sort=False):
        dw = g["pred_worst"] - g["acc_worst"]
        dg = g["pred_gap"] - g["acc_gap"]
        rows.append(
            {
                "entry": entry,
                "worst_bias": float(dw.mean()),
                "worst_mae": float(dw.abs().mean()),
                "gap_bias": float(dg.mean()),
                "gap_mae": float(dg.abs().mean()),
                "rounds": len(g),
            }
        )
    return pd.DataFrame(rows)
