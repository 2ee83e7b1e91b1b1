"""Benchmark: is the long-term constraint met in live runs, and what does it do to the picks?

Reads a finished study (default ``results/study-baselines``) and, for every long-term entry
(``eps-lt``, ``fisher-lt``) and the myopic and baseline entries beside it, per seed then
averaged over seeds (bootstrap 95 % interval of the mean):

* ``Q/T`` — each domain's final queue over the rounds, Q_d(T)/T: the bound the drift-plus-
  penalty argument gives on that domain's average shortfall as the selector judged it
  (predicted U_d(S_t)): the constraint is met on average up to this bound; long-term entries
  only;
* ``test shortfall`` — the same constraint measured on the model itself: the time average of
  (mean_d acc_d − acc_d) − ε of the global model's test accuracy, per domain, its maximum over
  domains (ε the entry's; for the other entries, ε = 5);
* ``picks per round`` of each domain, and the final average and worst-domain accuracy.

Writes ``long_term.md`` and ``long_term.csv`` (default ``results/benchmarks``)::

    .venv/bin/python benchmarks/long_term.py [--study results/study-baselines] [--out DIR]
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
from selection.solvers.long_term import QUEUE_PREFIX

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "results" / "benchmarks"
BOOT = 10000


def _interval(x: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float(x.mean()), float("nan"), float("nan")
    means = rng.choice(x, (BOOT, len(x)), replace=True).mean(axis=1)
    return float(x.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _long_term(entry: str) -> bool:
    """A long-term formulation's entry (``eps-lt:5@probe``, ``fisher-lt:5@predicted``)."""
    return entry.split("@")[0].split(":")[0].endswith("-lt")


def _eps(entry: str) -> float:
    head = entry.split("@")[0]
    if _long_term(entry):
        return float(head.split(":")[1].split(",")[0])
    return 5.0


def per_seed(history: pd.DataFrame, domains: list[str]) -> pd.DataFrame:
    """One row per (entry, seed): Q_d(T)/T, the test shortfall, picks per domain, finals."""
    rows = []
    for (entry, seed), h in history.groupby(["entry", "seed"], sort=False):
        h = h.sort_values("round")
        acc = h[[f"acc_{d}" for d in domains]].to_numpy(dtype=float)
        short = (acc.mean(axis=1, keepdims=True) - acc - _eps(entry)).mean(axis=0)
        picks = {d: 0.0 for d in domains}
        for sel in h["selected"].astype(str):
            for c in sel.split(";"):
                dom = c.rsplit("-", 1)[0]
                if dom in picks:
                    picks[dom] += 1.0 / len(h)
        row = {"entry": entry, "seed": int(seed), "rounds": len(h)}
        queues = [f"{QUEUE_PREFIX}{d}" for d in domains]
        if all(q in h.columns for q in queues) and h[queues].notna().all().all():
            for d, q in zip(domains, queues, strict=True):
                row[f"Q/T {d}"] = float(h[q].iloc[-1]) / len(h)
        row.update({f"short {d}": float(s) for d, s in zip(domains, short, strict=True)})
        row["short max"] = float(short.max())
        row.update({f"picks {d}": v for d, v in picks.items()})
        row["final avg"] = float(h["acc_avg"].iloc[-1])
        row["final worst"] = float(h["acc_worst"].iloc[-1])
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, default=ROOT / "results" / "study-baselines")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--entries",
        default="proportional,fisher-topk,qffl:1,eps:5@predicted,eps-rel:0.5@probe",
        help="entries shown beside the eps-lt ones",
    )
    args = ap.parse_args(argv)
    history = read_history(args.study)
    summary = ("avg", "worst", "gap", "std")
    domains = [c[4:] for c in history.columns if c.startswith("acc_") and c[4:] not in summary]
    keep = [e for e in history["entry"].unique() if _long_term(str(e))]
    keep += [e for e in args.entries.split(",") if e in set(history["entry"])]
    seeds = per_seed(history[history["entry"].isin(keep)], domains)
    rng = np.random.default_rng(0)
    table = []
    for entry in keep:
        s = seeds[seeds["entry"] == entry]
        row = {"entry": entry, "seeds": len(s)}
        for col in [c for c in seeds.columns if c not in ("entry", "seed", "rounds")]:
            if s[col].notna().all():
                m, lo, hi = _interval(s[col].to_numpy(), rng)
                row[col] = m
                row[f"{col} lo"], row[f"{col} hi"] = lo, hi
        table.append(row)
    out = pd.DataFrame(table)
    args.out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(out, args.out / "long_term.csv")

    def cell(r, col, digits=2):
        if col not in r or pd.isna(r[col]):
            return ""
        lo, hi = r.get(f"{col} lo"), r.get(f"{col} hi")
        if lo is None or pd.isna(lo):
            return f"{r[col]:.{digits}f}"
        return f"{r[col]:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

    q = pd.DataFrame(
        [
            {"entry": r["entry"], **{d: cell(r, f"Q/T {d}") for d in domains}}
            for _, r in out.iterrows()
            if _long_term(str(r["entry"]))
        ]
    )
    short = pd.DataFrame(
        [
            {
                "entry": r["entry"],
                **{d: cell(r, f"short {d}") for d in domains},
                "max over domains": cell(r, "short max"),
            }
            for _, r in out.iterrows()
        ]
    )
    picks = pd.DataFrame(
        [
            {
                "entry": r["entry"],
                **{d: cell(r, f"picks {d}") for d in domains},
                "final avg": cell(r, "final avg", 1),
                "final worst": cell(r, "final worst", 1),
            }
            for _, r in out.iterrows()
        ]
    )
    cmd = "    .venv/bin/python benchmarks/" + " ".join(
        shlex.quote(a) for a in [Path(__file__).name, *(argv or sys.argv[1:])]
    )
    text = f"""# The long-term ε in live runs

From the study in `{args.study.relative_to(ROOT) if args.study.is_relative_to(ROOT) else args.study}`
({int(seeds["seed"].nunique())} seeds, {int(seeds["rounds"].max())} rounds; mean over seeds,
bootstrap 95 % interval of the mean). Made by

{cmd}

## The bound on each domain's average shortfall, Q_d(T)/T

The drift-plus-penalty argument gives (1/T) Σ_t g_d(S_t) <= Q_d(T+1)/T for the shortfalls
g_d = Ū(S) − U_d(S) − ε as the selector judged them (predicted U_d(S_t)): a value near 0 says
the long-term constraint held on average over the run; a large one that the constraint could
not be met with the information the selector had (its queue grew every round).

{markdown_table(q) if len(q) else "(no long-term entry in this study)"}

## The same constraint on the model's test accuracy

Time average over the rounds of (mean over domains of acc_d) − acc_d − ε, per domain (ε of the
entry; 5 for the others): <= 0 where the trained model itself met the constraint on average.

{markdown_table(short)}

## Picks per round by domain, and the final accuracies

{markdown_table(picks)}
"""
    write_text_atomic(text, args.out / "long_term.md")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
