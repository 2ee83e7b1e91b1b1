"""Racing: seeds spent where contests are close (``race = true`` in ``study.toml``).

A study that races adds seeds in looks: every entry still in contention runs the seeds of a
look, then, per raced metric (final worst-domain and final average accuracy), the entries are
compared with the best by **multiple comparisons with the best** (Hsu's constrained MCB, as
Edwards & Hsu give it for unequal variances): simultaneous intervals for
θ_i = μ_i − max_{j≠i} μ_j from the paired differences of every two entries on the look's
seeds. From them, per metric:

* an entry is **shown worse** when some other entry is ahead of it (θ_i's upper bound 0: it
  cannot be the best);
* an entry is **tied** with the best at δ when θ_i's lower bound is at least −δ (it is within
  δ points of the best, whichever that is);
* otherwise it is **unresolved** (its interval's half-width says how far the race got).

An entry shown worse on every raced metric is dropped from later looks (the reference entry
always runs: the report's paired statistics compare every entry with it). The race stops when
no running entry is unresolved on any metric, or when the seed budget (``seeds``) is spent.

Error rate: each look's MCB intervals use the two-sided Bonferroni critical value
t_{1 − α'/(2(m−1)), n−1} over the m − 1 comparisons with the best, m the study's entries, at
α' = α / (looks × metrics); Bonferroni over the planned looks and the metrics makes the
probability that any interval of any look misses its θ at most α (``race_alpha``), so every
"worse" and "tied" claim of the whole race holds together with probability ≥ 1 − α. The only
approximation is the t distribution of a mean of n ≥ ``race_first`` paired differences of
bounded accuracies (tests/fl_oracle/experiments/study/test_racing.py measures the error rate
over repeated synthetic races).

Every decision is a function of the finished runs of the seeds a look covers, so a killed race
resumed replays its looks to the same decisions and continues identically.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from selection.words import counted

__all__ = ["Race", "mcb", "look_table", "race_verdict", "RACED", "STATUS"]

#: the metrics a race compares (columns of :func:`fl_oracle.experiments.study.stats.run_metrics`)
RACED = ("final_worst", "final_avg")
#: a contest's outcome for one entry and metric
STATUS = ("best", "tied", "worse", "unresolved")


@dataclass(frozen=True)
class Race:
    """How a study races (``race_*`` in ``study.toml``).

    Attributes:
        delta: the resolution, accuracy points: entries within δ of the best are tied.
        first: seeds of the first look.
        batch: seeds added per later look.
        alpha: family-wise error over every look, metric and entry.
        budget: the most seeds an entry runs (the study's ``seeds``).
        metrics: the raced metrics.
    """

    delta: float = 1.0
    first: int = 10
    batch: int = 5
    alpha: float = 0.05
    budget: int = 40
    metrics: tuple[str, ...] = RACED

    def looks(self) -> list[int]:
        """The seed counts at which the race looks.

        Examples:
            >>> Race(first=10, batch=5, budget=22).looks()
            [10, 15, 20, 22]
        """
        n = [min(self.first, self.budget)]
        while n[-1] < self.budget:
            n.append(min(n[-1] + self.batch, self.budget))
        return n

    def level(self, m: int) -> float:
        """The two-sided level of each look's comparisons with the best (Bonferroni over the
        looks, the metrics and the m − 1 comparisons)."""
        return self.alpha / (len(self.looks()) * len(self.metrics) * max(m - 1, 1))


def mcb(values: pd.DataFrame, level: float) -> pd.DataFrame:
    """Constrained multiple comparisons with the best on paired data.

    Args:
        values: one row per seed, one column per entry (the metric; higher is better); every
            entry has every seed.
        level: the two-sided level of each pairwise interval (:meth:`Race.level`).

    Returns:
        One row per entry: ``mean``, ``lower``, ``upper`` (simultaneous bounds on
        θ_i = μ_i − max_{j≠i} μ_j) and ``half_width`` (the largest d·se of its comparisons).

    Examples:
        >>> v = pd.DataFrame({"a": [80.0, 81, 79, 80, 82], "b": [60.0, 61, 58, 62, 60]})
        >>> t = mcb(v, 0.05)
        >>> float(t.loc["b", "upper"])  # b cannot be the best
        0.0
        >>> float(t.loc["a", "lower"]), bool(t.loc["a", "upper"] > 15)  # a is, by > 15 points
        (0.0, True)
    """
    x = values.to_numpy(dtype=float)
    n, m = x.shape
    names = list(values.columns)
    if n < 2:
        raise ValueError(f"mcb: {n} seed(s); a comparison needs at least 2")
    mean = x.mean(axis=0)
    d = float(sps.t.ppf(1 - level / 2, n - 1))
    diff = x[:, :, None] - x[:, None, :]  # (n, i, j): x_i - x_j per seed
    se = diff.std(axis=0, ddof=1) / math.sqrt(n)
    gap = mean[:, None] - mean[None, :]
    eye = np.eye(m, dtype=bool)
    up = np.where(eye, np.inf, gap + d * se)
    upper = np.maximum(up.min(axis=1), 0.0)
    possible = upper > 0  # G: the entries that may be the best
    lower = np.empty(m)
    for i in range(m):
        others = possible & ~eye[i]
        if possible[i] and not others.any():
            lower[i] = 0.0  # the only one that may be best
        else:
            lower[i] = min(0.0, float(np.min(gap[i, others] - d * se[i, others])))
    half = np.where(eye, 0.0, d * se).max(axis=1)
    return pd.DataFrame(
        {"mean": mean, "lower": lower, "upper": upper, "half_width": half}, index=names
    )


def _status(row: pd.Series, delta: float) -> str:
    if row["lower"] >= 0.0 and row["upper"] > 0.0:
        return "best"  # the only entry that may be best: ahead of every other
    if row["lower"] >= -delta:
        return "tied"
    if row["upper"] <= 0.0:
        return "worse"
    return "unresolved"


def look_table(
    metrics: pd.DataFrame, entries: Sequence[str], seeds: Sequence[int], race: Race, m: int
) -> pd.DataFrame:
    """One look: per raced metric and entry, the MCB bounds and the contest's status.

    Args:
        metrics: :func:`~fl_oracle.experiments.study.stats.run_metrics` rows (entry, seed, ...).
        entries: the entries running at this look (they share ``seeds``).
        seeds: the look's seeds.
        race: the race settings.
        m: the study's number of entries (the Bonferroni count).

    Returns:
        Columns ``n, metric, entry, mean, lower, upper, half_width, status``.
    """
    rows = []
    sub = metrics[metrics["entry"].isin(entries) & metrics["seed"].isin(seeds)]
    for metric in race.metrics:
        wide = sub.pivot(index="seed", columns="entry", values=metric)[list(entries)]
        if wide.isna().any().any() or len(wide) != len(seeds):
            raise ValueError(
                f"race: the look at {counted(len(seeds), 'seed')} lacks runs of {metric}"
            )
        t = mcb(wide, race.level(m))
        t["status"] = [_status(r, race.delta) for _, r in t.iterrows()]
        rows.append(t.rename_axis("entry").reset_index().assign(metric=metric, n=len(seeds)))
    cols = ["n", "metric", "entry", "mean", "lower", "upper", "half_width", "status"]
    return pd.concat(rows, ignore_index=True)[cols]


def next_entries(look: pd.DataFrame, running: Sequence[str], keep: Sequence[str]) -> list[str]:
    """The entries that run the next look: those not shown worse on every metric (and the
    ``keep`` entries, e.g. the reference, always)."""
    worse = look.groupby("entry")["status"].agg(lambda s: (s == "worse").all())
    return [e for e in running if e in keep or not bool(worse.get(e, False))]


def finished(look: pd.DataFrame, running: Sequence[str]) -> bool:
    """No running entry is unresolved on any metric."""
    live = look[look["entry"].isin(running)]
    return not (live["status"] == "unresolved").any()


def race_verdict(log: pd.DataFrame, race: Race) -> pd.DataFrame:
    """Per raced metric: the leader, the tied-best set, the entries shown worse and the
    unresolved ones (with the half-width reached), each entry at its last look.

    Returns:
        One row per (metric, entry): ``status`` (``best``/``tied``/``worse``/``unresolved``),
        ``leader`` (the highest mean at the last look), ``n`` (the entry's seeds), ``mean``,
        ``lower``, ``upper``, ``half_width``.
    """
    last = log.sort_values("n").groupby(["metric", "entry"], sort=False).tail(1)
    out = []
    for metric, g in last.groupby("metric", sort=False):
        final = log[(log["metric"] == metric) & (log["n"] == log["n"].max())]
        leader = final.loc[final["mean"].idxmax(), "entry"] if len(final) else ""
        out.append(g.assign(leader=leader))
    v = pd.concat(out, ignore_index=True)
    return v[["metric", "entry", "status", "leader", "n", "mean", "lower", "upper", "half_width"]]
