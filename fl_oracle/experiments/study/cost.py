"""The study charged for its information: deployment cost per entry, matched-cost accuracy,
and the affordable-selection goal checked plainly.

Read from the history's cost columns (:mod:`fl_oracle.experiments.cost`); a study whose runs
predate them has no cost section (every function returns empty results).

* **Cost per entry** (``cost.csv``): the information model, whether it is the oracle's upper
  bound, client compute per round (train + probe samples) and its ratio to the reference's
  (the study's reference entry: ``fedavg`` or ``proportional``, which read nothing), bytes per round and their ratio, compute and bytes
  to the worst-domain target.
* **Matched cost** (metrics ``avg_at_budget``, ``worst_at_budget``): an entry's average and
  worst-domain accuracy after the last round whose cumulative client compute is within the
  reference's whole-run compute on the same seed (an entry cheaper per round runs every
  round; a dearer one is read where it had spent the reference's budget).
* **The goal** (:func:`goal_lines`): which entries run at ≤ ``BUDGET``× the reference's
  compute per round and beat every baseline on final average and final worst-domain accuracy
  (paired intervals and the family-wise test), and how their compute to the target compares
  with the best baseline's (the ratio of means, bootstrap 95 % interval over seeds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from fl_oracle.experiments.cost import COST_COLUMNS

__all__ = ["BUDGET", "costed", "matched_cost", "cost_table", "goal_lines", "compute_figure"]

BUDGET = 1.25  # x the reference's (FedAvg's) client compute per round


def costed(history: pd.DataFrame) -> bool:
    """Does the history carry the deployment-cost columns, with values (a driver that
    cannot count them writes NaN)?"""
    if history.empty or not all(c in history.columns for c in COST_COLUMNS):
        return False
    return bool(pd.to_numeric(history["cost_train_samples"], errors="coerce").notna().any())


def numeric_costs(history: pd.DataFrame) -> pd.DataFrame:
    """The history with its cost columns as numbers (CSV round trips write NaN as "")."""
    return history.assign(**{c: pd.to_numeric(history[c], errors="coerce") for c in COST_COLUMNS})


def _compute(g: pd.DataFrame) -> np.ndarray:
    return (g["cost_train_samples"] + g["cost_probe_samples"]).to_numpy(float)


def matched_cost(history: pd.DataFrame, metrics: pd.DataFrame, reference: str) -> pd.DataFrame:
    """``metrics`` with ``avg_at_budget`` and ``worst_at_budget`` (module docstring)."""
    if not costed(history):
        return metrics
    history = numeric_costs(history)
    ref = history[history["entry"] == reference]
    budget = {int(s): float(_compute(g).sum()) for s, g in ref.groupby("seed")}
    at = {}
    for (entry, seed), g in history.groupby(["entry", "seed"], sort=False):
        if int(seed) not in budget:
            continue
        g = g.sort_values("round")
        spent = np.cumsum(_compute(g))
        j = int(np.searchsorted(spent, budget[int(seed)] + 1e-9, side="right")) - 1
        if j < 0:  # its first round alone costs more than the reference's whole run
            at[(entry, int(seed))] = (np.nan, np.nan)
            continue
        row = g.iloc[j]
        at[(entry, int(seed))] = (float(row["acc_avg"]), float(row["acc_worst"]))
    out = metrics.copy()
    keys = list(zip(out["entry"], out["seed"].astype(int), strict=True))
    out["avg_at_budget"] = [at.get(k, (np.nan, np.nan))[0] for k in keys]
    out["worst_at_budget"] = [at.get(k, (np.nan, np.nan))[1] for k in keys]
    return out


def cost_table(
    history: pd.DataFrame,
    metrics: pd.DataFrame,
    reference: str,
    information: Mapping[str, str],
) -> pd.DataFrame:
    """One row per entry (module docstring); empty without cost columns. ``information``:
    each entry's information model as its spec parsed it (``Entry.spec.information``: an
    :class:`~selection.information.Information`, or ``rule`` for a baseline rule without one)."""
    if not costed(history) or "compute_per_round" not in metrics.columns:
        return pd.DataFrame()
    history = numeric_costs(history)
    sent = history.assign(_bytes=history["cost_bytes_up"] + history["cost_bytes_down"])
    per_round_bytes = sent.groupby("entry")["_bytes"].mean()
    g = metrics.groupby("entry", sort=False)
    ref_compute = float(g["compute_per_round"].mean().get(reference, np.nan))
    ref_bytes = float(per_round_bytes.get(reference, np.nan))
    rows = []
    for entry, m in g:
        mode = information.get(entry, "")
        rows.append(
            {
                "entry": entry,
                "information": str(mode),
                # a registered model declares it; a rule (or an entry no longer in the
                # settings) is none
                "upper_bound": bool(getattr(getattr(mode, "model", None), "upper_bound", False)),
                "compute_per_round": float(m["compute_per_round"].mean()),
                "compute_ratio": float(m["compute_per_round"].mean()) / ref_compute,
                "bytes_per_round": float(per_round_bytes[entry]),
                "bytes_ratio": float(per_round_bytes[entry]) / ref_bytes,
                "compute_to_target": float(m["compute_to_target"].mean()),
                "bytes_to_target": float(m["bytes_to_target"].mean()),
                "reached_target": float(m["reached"].mean()),
            }
        )
    return pd.DataFrame(rows)


def _ratio_interval(
    num: np.ndarray, den: np.ndarray, resamples: int, seed: int = 0
) -> tuple[float, float, float]:
    """mean(num) / mean(den) with a paired bootstrap 95 % percentile interval over seeds."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(num), (resamples, len(num)))
    boot = num[idx].mean(1) / den[idx].mean(1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(num.mean() / den.mean()), float(lo), float(hi)


def goal_lines(
    table: pd.DataFrame,
    metrics: pd.DataFrame,
    dominance: pd.DataFrame,
    baselines: Sequence[str],
    *,
    reference: str,
    resamples: int = 10_000,
) -> list[str]:
    """The goal, stated plainly (module docstring); empty without a cost table."""
    if table.empty:
        return []
    lines = []
    afford = table[(table["compute_ratio"] <= BUDGET) & ~table["upper_bound"]]
    cands = [e for e in afford["entry"] if e not in baselines and e != reference]
    c = table.set_index("entry")
    lines.append(
        f"Deployment cost (client compute per round, train + probe samples, relative to "
        f"{reference}, which reads nothing): "
        + "; ".join(
            f"{r.entry}{' (fresh: the upper bound)' if r.upper_bound else ''} "
            f"{r.compute_ratio:.2f}x compute, {r.bytes_ratio:.2f}x bytes"
            for r in table.itertuples()
        )
        + "."
    )
    base = [b for b in baselines if b in c.index]
    if not base:
        return lines
    best = min(base, key=lambda b: c.at[b, "compute_to_target"])
    winners = []
    if not dominance.empty:
        for e in cands:
            d = dominance[dominance["entry"] == e]
            if len(d) == len(base) and d["beats_fw"].all():
                winners.append(e)
    lines.append(
        f"Within {BUDGET:g}x {reference}'s compute per round, entries built from the "
        f"formulations that beat every baseline on final average and final worst-domain "
        f"accuracy (paired intervals and the family-wise test): {', '.join(winners) or 'none'}"
        f" (of {len(cands)} within the budget)."
    )
    ref_m = metrics[metrics["entry"] == best].set_index("seed")["compute_to_target"]
    parts = []
    for e in cands:
        cur = metrics[metrics["entry"] == e].set_index("seed")["compute_to_target"]
        seeds = sorted(set(cur.index) & set(ref_m.index))
        if not seeds:
            continue
        r, lo, hi = _ratio_interval(
            cur.loc[seeds].to_numpy(float), ref_m.loc[seeds].to_numpy(float), resamples
        )
        parts.append((r, f"{e} {r:.2f}x [{lo:.2f}, {hi:.2f}]" + (" (≤ 0.5x)" if hi <= 0.5 else "")))
    parts.sort()
    lines.append(
        f"Client compute to the worst-domain target against the best baseline's ({best}, "
        f"{c.at[best, 'compute_to_target']:,.0f} samples; ratio of means, bootstrap 95 % "
        f"interval; ≤ 0.5x where the whole interval is): "
        + ("; ".join(p for _, p in parts) or "none")
        + "."
    )
    return lines


def compute_figure(history: pd.DataFrame, entries: Sequence[str], colors: dict) -> dict:
    """Worst-domain accuracy against cumulative client compute (means over seeds)."""
    if not costed(history):
        return {"data": [], "layout": {}}
    history = numeric_costs(history)
    traces = []
    for e in entries:
        g = history[history["entry"] == e].sort_values(["seed", "round"])
        if g.empty:
            continue
        g = g.assign(spent=g.groupby("seed")["cost_train_samples"].cumsum()
                     + g.groupby("seed")["cost_probe_samples"].cumsum())  # fmt: skip
        by = g.groupby("round")
        traces.append(
            {"type": "scatter", "mode": "lines", "name": e,
             "x": (by["spent"].mean() / 1e6).tolist(), "y": by["acc_worst"].mean().tolist(),
             "line": {"color": colors.get(e, "#777"), "width": 1.5}}
        )  # fmt: skip
    layout = {"xaxis": {"title": {"text": "cumulative client compute (million samples)"}},
              "yaxis": {"title": {"text": "worst-domain test accuracy (%)"}},
              "height": 460, "margin": {"t": 10}}  # fmt: skip
    return {"data": traces, "layout": layout}
