"""The study's verdict: plain sentences and a table that claim only what the paired statistics
support.

:func:`verdict_summary` is the one-line takeaway (who beats every baseline, by the family-wise
test), :func:`verdict` the sentences per metric and plane, :func:`verdict_table` one row per
entry, :func:`levelling_down` the sentence on entries that gain on the worst domain by losing on
the best one. All of them read the tables :mod:`.stats` computes; nothing here draws.
"""

from __future__ import annotations

import pandas as pd

from fl_oracle.experiments.study.settings import StudySettings
from fl_oracle.experiments.study.stats import METRICS
from selection.words import counted, signed

__all__ = ["PLANES", "levelling_down", "verdict", "verdict_summary", "verdict_table"]


PLANES: dict[str, tuple[str, str]] = {
    "final": ("final_avg", "final_worst"),
    "auc": ("auc_avg", "auc_worst"),
}
_PLANE_WORDS = {
    "final": "final average and final worst-domain accuracy",
    "auc": "average and worst-domain accuracy over the whole run (means over rounds)",
}


def _holm_floor(n: int, m: int) -> str:
    """A sentence when Holm over ``m`` entries cannot reject with ``n`` paired seeds."""
    p_min = 2.0 / 2**n  # the smallest two-sided exact Wilcoxon p with n non-zero pairs
    if m < 1 or p_min * m < 0.05:
        return ""
    return (
        f"With {counted(n, 'seed')} the smallest two-sided Wilcoxon p is {p_min:.4f}, so Holm's correction "
        f"over {counted(m, 'entry')} (first threshold 0.05/{m} = {0.05 / m:.4f}) cannot reject at 5 %: "
        "here the claims rest on the paired bootstrap intervals; more seeds would let the test "
        "confirm them."
    )


def verdict(
    settings: StudySettings, paired: pd.DataFrame, doms: dict[str, pd.DataFrame]
) -> list[str]:
    """Plain sentences, each claiming only what a paired 95 % interval supports; entries whose
    Wilcoxon test also survives Holm's correction are marked ``*``."""
    ref = settings.reference
    lines = [
        f"Paired over {counted(settings.seeds, 'seed')} x {counted(settings.rounds, 'round')}, K={settings.k}: every "
        f"difference below is an entry minus {ref} on the same seed, with a bootstrap 95 % "
        "interval; * marks a Wilcoxon signed-rank test that also passes Holm's correction "
        "across entries (p_holm < 0.05)."
    ]
    if paired.empty:
        if len(settings.selectors) == 1:
            return [*lines, f"No paired differences: {ref} is the study's only entry."]
        return [*lines, "No paired differences yet (runs missing)."]
    for metric in (
        "final_worst", "final_avg", "auc_worst", "auc_avg", "worst_at_budget", "avg_at_budget"
    ):  # fmt: skip
        label = METRICS[metric][0]
        sub = paired[paired["metric"] == metric]
        if sub.empty:
            continue

        def fmt(df: pd.DataFrame) -> str:
            return "; ".join(
                f"{r.entry}{'*' if r.p_holm < 0.05 else ''} {signed(r.diff)} "
                f"[{signed(r.ci_lo)}, {signed(r.ci_hi)}]"
                for r in df.sort_values("diff", ascending=False).itertuples()
            )

        lines.append(
            f"{label}: better than {ref}: {fmt(sub[sub['better']]) or 'none'}. "
            f"Worse: {fmt(sub[sub['worse']]) or 'none'}."
        )
    floor = _holm_floor(int(paired["n"].min()), int(paired.groupby("metric").size().max()))
    if floor:
        lines.append(floor)
    for plane, dom in doms.items():
        if dom.empty:
            continue
        what = _PLANE_WORDS[plane]
        beats_all = [e for e, g in dom.groupby("entry", sort=False) if bool(g["beats"].all())]
        n_base = dom["baseline"].nunique()
        fam = f"{counted(n_base, 'baseline')} × 2 metrics, per entry"
        n_sw = 2 * len(dom)
        if beats_all:
            fw = [e for e in beats_all if bool(dom[dom["entry"] == e]["beats_fw"].all())]
            has_sw = "beats_sw" in dom
            sw = [e for e in beats_all if has_sw and bool(dom[dom["entry"] == e]["beats_sw"].all())]
            lines.append(
                f"On {what}: formulations whose paired intervals exclude zero against every "
                f"baseline ({n_base}) on both: {', '.join(beats_all)}. "
                + (
                    f"Of these, the per-entry family-wise test (Wilcoxon, Holm over the {fam}) "
                    f"also rejects every comparison for: {', '.join(fw)} — these beat every "
                    "baseline."
                    if fw
                    else f"The per-entry family-wise test (Wilcoxon, Holm over the {fam}) "
                    "rejects every comparison for none of them: no entry is claimed to beat "
                    "every baseline."
                )
                + f" Study-wide (Holm over all {n_sw} entry × baseline × metric comparisons "
                f"of this plane in one family): {', '.join(sw) or 'none'}."
            )
        else:
            best = dom.groupby("entry")["beats"].sum().sort_values(ascending=False).head(3)
            lines.append(
                f"On {what}: no formulation beats every baseline on both with intervals "
                "excluding zero; the closest: "
                + ", ".join(
                    f"{e} ({int(n)}/{counted(n_base, 'baseline')})" for e, n in best.items()
                )
                + "."
            )
    return lines


_TABLE_METRICS = {
    "final avg": "final_avg",
    "final worst": "final_worst",
    "run avg": "auc_avg",
    "run worst": "auc_worst",
}


def verdict_table(
    settings: StudySettings, paired: pd.DataFrame, doms: dict[str, pd.DataFrame]
) -> pd.DataFrame:
    """One row per entry: its paired difference to the reference on the four metrics
    (``+d [lo, hi]``, ``*`` where the Holm-corrected Wilcoxon test agrees), and for each
    formulation how many baselines it beats on both metrics of a plane (intervals excluding
    zero; how many of those also by the per-entry family-wise test, Holm over the entry's
    baselines × 2 metrics, and by the study-wide one, Holm over every comparison of the
    plane)."""
    rows = []
    for entry in settings.selectors:
        if entry == settings.reference:
            continue
        row = {"entry": entry}
        for col, metric in _TABLE_METRICS.items():
            r = paired[(paired["entry"] == entry) & (paired["metric"] == metric)]
            if r.empty:
                row[col] = ""
                continue
            r = r.iloc[0]
            mark = "*" if r["p_holm"] < 0.05 else ""
            row[col] = f"{signed(r['diff'])} [{signed(r['ci_lo'])}, {signed(r['ci_hi'])}]{mark}"
        for plane, label in (("final", "beats (final)"), ("auc", "beats (run)")):
            dom = doms.get(plane, pd.DataFrame())
            mine = dom[dom["entry"] == entry] if not dom.empty else dom
            if mine.empty:
                row[label] = ""
                continue
            n, b, fw, sw = mine["baseline"].nunique(), int(mine["beats"].sum()), 0, 0
            if "beats_fw" in mine:
                fw = int(mine["beats_fw"].sum())
            if "beats_sw" in mine:
                sw = int(mine["beats_sw"].sum())
            row[label] = f"{b}/{n} ({fw} per-entry Holm, {sw} study-wide)"
        rows.append(row)
    return pd.DataFrame(rows)


def verdict_summary(settings: StudySettings, paired: pd.DataFrame, doms) -> str:
    """The plain-language takeaway: who beats every baseline where, by the family-wise test."""

    def winners(plane: str) -> list[str]:
        dom = doms.get(plane, pd.DataFrame())
        if dom.empty or "beats_fw" not in dom:
            return []
        return [e for e, g in dom.groupby("entry", sort=False) if bool(g["beats_fw"].all())]

    final, run = winners("final"), winners("auc")
    if final:
        head = (
            f"{', '.join(final)} beat{'s' if len(final) == 1 else ''} every baseline on final "
            "average and final worst-domain accuracy, by the paired intervals and the "
            "family-wise test."
        )
    elif run:
        head = (
            "No formulation beats every baseline at the final round; over the whole run "
            f"{', '.join(run)} {'does' if len(run) == 1 else 'do'} (paired intervals and the "
            "family-wise test)."
        )
    else:
        head = "No formulation beats every baseline, at the final round or over the run."
    sub = paired[paired["metric"] == "final_worst"]
    if sub.empty:
        return head
    best = sub.sort_values("diff", ascending=False).iloc[0]
    tie = _tie(settings.reference, sub, float(best["diff"]))
    if tie:
        return f"{head} {tie}"
    if best["diff"] < 0:  # the reference itself ends highest (paired holds the others only)
        return (
            f"{head} Highest final worst-domain accuracy: {settings.reference}, the reference; "
            f"the closest other, {best['entry']}, ends {signed(best['diff'], 1)} points from it "
            f"(95 % interval [{signed(best['ci_lo'], 1)}, {signed(best['ci_hi'], 1)}])."
        )
    return (
        f"{head} Highest final worst-domain accuracy: {best['entry']} "
        f"({signed(best['diff'], 1)} points over {settings.reference}, 95 % interval "
        f"[{signed(best['ci_lo'], 1)}, {signed(best['ci_hi'], 1)}])."
    )


#: differences this close (points) are a tie in the headline (it prints one decimal)
TIE_POINTS = 0.05
MEAN = "mean"  # the paired table's column of an entry's own mean (not a surrogate's name)


def _tie(reference: str, sub: pd.DataFrame, top: float) -> str:
    """The headline's sentence where several entries (the reference among them when the top
    paired difference is about zero) share the highest final worst-domain accuracy; "" where
    one entry leads."""
    if top < -TIE_POINTS:
        return ""
    tied = list(sub.loc[top - sub["diff"] < TIE_POINTS, "entry"])
    if abs(top) < TIE_POINTS:
        tied.append(f"{reference} (the reference)")
    if len(tied) < 2:
        return ""
    names = ", ".join(tied[:-1]) + f" and {tied[-1]}"
    means = sub.get(MEAN)  # the entries' own means (paired_differences' column)
    at = "" if means is None else f" at {float(means[sub['entry'] == tied[0]].iloc[0]):.2f} %"
    return (
        f"Highest final worst-domain accuracy: a tie{at} between {names} (mean paired "
        f"differences within {TIE_POINTS:g} points)."
    )


def levelling_down(settings: StudySettings, mix: pd.DataFrame, threshold: float = 5.0) -> str:
    """One sentence: the entries that end far below the reference on its best domain."""
    if mix.empty or settings.reference not in set(mix["entry"]):
        return ""
    doms = [c[6:] for c in mix.columns if c.startswith("final_")]
    ref = mix.set_index("entry").loc[settings.reference]
    best = max(doms, key=lambda d: ref[f"final_{d}"])
    low = mix[(mix["entry"] != settings.reference) & (mix[f"diff_{best}"] < -threshold)]
    kept = mix[(mix["entry"] != settings.reference) & (mix[f"diff_{best}"] >= -threshold)]
    if low.empty:
        return ""
    low = low.sort_values(f"diff_{best}")

    def fmt(df: pd.DataFrame) -> str:
        return ", ".join(
            f"{r['entry']} {signed(r[f'diff_{best}'], 1)} ({r[f'picks_{best}']:.2f} picks/round)"
            for _, r in df.iterrows()
        )

    return (
        f"Levelling down: on {best}, the domain {settings.reference} ends best on "
        f"({ref[f'final_{best}']:.1f} %, {ref[f'picks_{best}']:.2f} of its clients picked per "
        f"round), {len(low)} of {counted(len(mix) - 1, 'entry')} end more than {threshold:g} points lower "
        f"(mean over seeds, paired): {fmt(low)}. Within {threshold:g} points: {fmt(kept)}."
    )
