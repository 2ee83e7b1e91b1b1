"""The race's error rate over many synthetic races with known differences.

Five entries with known means of final worst-domain and final average accuracy (two tied for
best, one 0.5 point below, one 2 below, one 8 below), paired seeds: a seed effect shared by
every entry (common random numbers, SD 5) plus each run's own noise (SD 3 on the worst domain,
1.5 on the average; normal, or a centred exponential with a long upper tail), clipped to
[0, 100]. Each repetition runs a race (:mod:`fl_oracle.experiments.study.racing`: looks at
5, 10, 15, 20 seeds, δ = 1 point) and counts whether any claim is false: an entry shown worse
that is a best one, tied or best that lies more than δ below the best, best that is not a best
one. Beside the race as built (Bonferroni over looks, metrics and comparisons), the same race
with one uncorrected interval per look shows what the correction buys. Writes
``race_error.md`` and ``.csv`` under ``results/benchmarks/``::

    .venv/bin/python benchmarks/race_error.py --repeats 400
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import markdown_table

from fl_oracle.experiments.study import racing
from selection.atomic import write_table_atomic, write_text_atomic
from selection.progress import rich_progress

ROOT = Path(__file__).resolve().parents[1]

MEANS = {"a": (80.0, 85.0), "b": (80.0, 84.0), "c": (79.5, 85.0), "d": (78.0, 83.0),
         "e": (72.0, 80.0)}  # fmt: skip


def metrics(seeds: int, rng: np.random.Generator, skew: bool) -> pd.DataFrame:
    rows = []
    for s in range(seeds):
        shared = rng.normal(0, 5, size=2)
        for e, mu in MEANS.items():
            raw = rng.exponential(3.0, size=2) - 3.0 if skew else rng.normal(0, 3.0, size=2)
            x = np.clip(np.array(mu) + shared + raw * np.array([1.0, 0.5]), 0, 100)
            rows.append({"entry": e, "seed": s, "final_worst": x[0], "final_avg": x[1]})
    return pd.DataFrame(rows)


def race(m: pd.DataFrame, r: racing.Race) -> pd.DataFrame:
    running = list(MEANS)
    logs = []
    for n in r.looks():
        look = racing.look_table(m, running, list(range(n)), r, len(MEANS))
        logs.append(look)
        if racing.finished(look, running):
            break
        running = racing.next_entries(look, running, keep=())
    return pd.concat(logs, ignore_index=True)


def wrong(log: pd.DataFrame, delta: float) -> bool:
    for col, metric in ((0, "final_worst"), (1, "final_avg")):
        top = max(v[col] for v in MEANS.values())
        for entry, status in zip(log.loc[log["metric"] == metric, "entry"],
                                 log.loc[log["metric"] == metric, "status"], strict=True):  # fmt: skip
            gap = MEANS[entry][col] - top
            if (status == "worse" and gap == 0) or (status in ("tied", "best") and gap < -delta):
                return True
            if status == "best" and gap < 0:
                return True
    return False


class Uncorrected(racing.Race):
    """The same race with one uncorrected interval per look (level α)."""

    def level(self, m: int) -> float:
        return self.alpha


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=400)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks")
    args = ap.parse_args(argv)
    if args.repeats < 10 or not 0 < args.alpha < 1:
        ap.error("--repeats must be at least 10 and --alpha in (0, 1)")
    built = racing.Race(delta=1.0, first=5, batch=5, alpha=args.alpha, budget=20)
    rows = []
    with rich_progress() as bar:
        for noise in ("normal", "skewed"):
            for name, r in (("race (Bonferroni)", built),
                            ("uncorrected", Uncorrected(**vars(replace(built))))):  # fmt: skip
                rng = np.random.default_rng(7)
                bad = 0
                for i in range(args.repeats):
                    bad += wrong(race(metrics(20, rng, noise == "skewed"), r), r.delta)
                    bar(i + 1, args.repeats, f"{noise}, {name}")
                rate = bad / args.repeats
                se = (rate * (1 - rate) / args.repeats) ** 0.5
                rows.append({"noise": noise, "procedure": name, "alpha": args.alpha,
                             "repeats": args.repeats, "races_with_a_false_claim": bad,
                             "error_rate": round(rate, 4), "se": round(se, 4)})  # fmt: skip
    table = pd.DataFrame(rows)
    write_table_atomic(table, args.out / "race_error.csv")
    cmd = " ".join(
        shlex.quote(a) for a in ["python", "benchmarks/race_error.py", *(argv or sys.argv[1:])]
    )
    text = (
        "# The race's error rate over synthetic races\n\n"
        f"`{cmd}`: five entries with known means (two tied for best, then 0.5, 2 and 8 points "
        "below), paired seeds, looks at 5, 10, 15 and 20 seeds, δ = 1 point; a race errs when "
        "any of its claims is false (an entry shown worse that is a best one, tied or best more "
        "than δ below the best). The race as built against the same race with one uncorrected "
        "interval per look.\n\n" + markdown_table(table) + "\n"
    )
    write_text_atomic(text, args.out / "race_error.md")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
