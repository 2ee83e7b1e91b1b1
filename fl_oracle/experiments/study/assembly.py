"""The study's tables, assembled from its run files, and the files written from them.

:func:`finish_study` reads every finished run (:mod:`.runs`), computes the metrics and paired
statistics (:mod:`.stats`, :mod:`.cost`), the exact predicted fronts of the reference run at
several rounds, the surrogate error and the training mix, words the verdict (:mod:`.verdict`)
and writes the tables, ``verdict.md`` and ``report.html`` (:mod:`.page`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fl_oracle.experiments.study.cost import cost_table, goal_lines, matched_cost
from fl_oracle.experiments.study.page import render_html
from fl_oracle.experiments.study.runs import (
    RACE_LOG,
    load_history,
    missing_runs,
    reference_stats,
    restore_runs,
    write_packed_history,
)
from fl_oracle.experiments.study.settings import StudySettings, is_baseline
from fl_oracle.experiments.study.stats import (
    dominance,
    paired_differences,
    run_metrics,
    summary_table,
    surrogate_error,
)
from fl_oracle.experiments.study.verdict import (
    PLANES,
    levelling_down,
    verdict,
    verdict_summary,
    verdict_table,
)
from selection.atomic import write_table_atomic, write_text_atomic
from selection.plotly_js import write_report
from selection.words import counted

__all__ = ["StudyResult", "finish_study", "fronts_over_rounds", "training_mix"]


@dataclass(frozen=True)
class StudyResult:
    """The assembled study (every table the report is drawn from)."""

    settings: StudySettings
    history: pd.DataFrame
    metrics: pd.DataFrame
    summary: pd.DataFrame
    paired: pd.DataFrame
    dominance: pd.DataFrame
    fronts: pd.DataFrame
    surrogate: pd.DataFrame
    verdict: list[str]
    missing: list[tuple[str, int]]
    mix: pd.DataFrame
    dominance_auc: pd.DataFrame
    verdict_table: pd.DataFrame = field(default_factory=pd.DataFrame)
    cost: pd.DataFrame = field(default_factory=pd.DataFrame)
    race: list[str] = field(default_factory=list)  # the race's lines (within ``verdict``)

    def terminal(self, verdict_md: str) -> list[str]:
        """What ``fedsel study`` prints: the headline, the compact table (each entry minus
        the reference, final worst and average accuracy and the baselines beaten), the race's
        lines, and where every claim stands in words (``verdict_md``)."""
        lines = [self.verdict[0]] if self.verdict else []
        t = self.verdict_table
        if not t.empty:
            keep = [c for c in ("entry", "final worst", "final avg", "beats (final)") if c in t]
            lines += ["", t[keep].to_string(index=False), ""]
        lines += self.race
        lines.append(f"every claim in words, with its test: {verdict_md}")
        return lines


def fronts_over_rounds(settings: StudySettings, stats: pd.DataFrame | None) -> pd.DataFrame:
    """Exact predicted fronts (max U, max worst) and (max U, min gap) of the reference run,
    by enumeration; none where C(N, K) is beyond it (a cross-device study's N = 200, K = 20:
    the report then has no front figure rather than no report)."""
    from selection.problem import SelectionProblem
    from selection.solvers.exhaustive import DEFAULT_MAX_COUNT, exact_front

    if stats is None:
        return pd.DataFrame()
    frames = []
    sizes = stats.groupby("round").size()
    k = min(settings.k, int(sizes.min()))
    if math.comb(int(sizes.max()), k) > DEFAULT_MAX_COUNT:
        return pd.DataFrame()
    for r in settings.fronts_at:
        if r not in set(stats["round"]):
            continue
        problem = SelectionProblem.from_stats(stats, k, round=r)
        for plane in (("utility", "worst"), ("utility", "gap")):
            f = exact_front(problem, plane).assign(round=r, plane=",".join(plane))
            frames.append(f[["round", "plane", "utility", "worst", "gap", "selected"]])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _domains(history: pd.DataFrame) -> list[str]:
    return [c[4:] for c in history.columns if c.startswith("acc_") and c[4:] not in _NOT_DOMAINS]


_NOT_DOMAINS = {"avg", "worst", "gap", "std", "pooled"}


def training_mix(settings: StudySettings, history: pd.DataFrame) -> pd.DataFrame:
    """What each entry trains on and where it ends, per domain.

    One row per entry: ``picks_<d>`` (mean clients of domain d selected per round; a client's
    domain is the part of its id before the last ``-``), ``final_<d>`` (mean final test
    accuracy on d over seeds) and ``diff_<d>`` (mean over seeds of that accuracy minus the
    reference's on the same seed).
    """
    doms = _domains(history)
    last = history[history["round"] == history["round"].max()]
    ref = last[last["entry"] == settings.reference].set_index("seed")
    rows = []
    for e in settings.selectors:
        g = history[history["entry"] == e]
        if g.empty:
            continue
        ids = g["selected"].astype(str).str.split(";").explode()
        per = ids.str.rsplit("-", n=1).str[0].value_counts() / len(g)
        row: dict = {"entry": e}
        for d in doms:
            row[f"picks_{d}"] = float(per.get(d, 0.0))
        f = last[last["entry"] == e].set_index("seed")
        for d in doms:
            row[f"final_{d}"] = float(f[f"acc_{d}"].mean())
        for d in doms:
            both = f.index.intersection(ref.index)
            row[f"diff_{d}"] = float((f.loc[both, f"acc_{d}"] - ref.loc[both, f"acc_{d}"]).mean())
        rows.append(row)
    return pd.DataFrame(rows)


def _markdown_table(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(df.columns))) + "|"
    body = ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def read_race_log(settings: StudySettings, out: Path) -> pd.DataFrame | None:
    """The race's log (``race.csv``) of a racing study, None for a study that does not race."""
    if settings.racing is None or not (out / RACE_LOG).is_file():
        return None
    return pd.read_csv(out / RACE_LOG)


def raced_missing(
    settings: StudySettings, log: pd.DataFrame | None, missing: list[tuple[str, int]]
) -> list[tuple[str, int]]:
    """The runs missing from what the study set out to run: for a race, only the seeds of
    the looks each entry ran (an entry dropped by the race never runs the later seeds)."""
    if log is None:
        return missing
    seeds = list(settings.seed_list)
    reached = log.groupby("entry")["n"].max()
    return [(e, s) for e, s in missing if s in seeds[: int(reached.get(e, 0))]]


def race_lines(
    settings: StudySettings, log: pd.DataFrame, metrics: pd.DataFrame
) -> tuple[pd.DataFrame, list[str]]:
    """The race's verdict per raced metric: its table and its lines (the leader, the
    tied-best set and its cheapest member by client compute per round, the entries shown worse,
    the unresolved ones with their half-widths)."""
    from fl_oracle.experiments.study.racing import race_verdict

    race = settings.racing
    v = race_verdict(log, race)
    compute = (
        metrics.groupby("entry")["compute_per_round"].mean()
        if "compute_per_round" in metrics.columns
        else pd.Series(dtype=float)
    )
    v["compute_per_round"] = v["entry"].map(compute)
    words = {"final_worst": "final worst-domain accuracy", "final_avg": "final average accuracy"}
    looks = race.looks()
    runs = int(metrics.groupby("entry")["seed"].nunique().sum())
    lines = [
        f"The race: seeds added in looks at {', '.join(map(str, looks))} seeds; "
        f"every claim below holds together with probability ≥ {1 - race.alpha:.2f} "
        f"(comparisons with the best, Bonferroni over {len(looks)} looks, "
        f"{len(race.metrics)} metrics and {len(settings.selectors) - 1} comparisons); "
        f"{counted(runs, 'run')} spent of the {len(settings.selectors) * settings.seeds} a full design "
        f"of {counted(settings.seeds, 'seed')} would run."
    ]
    for metric, g in v.groupby("metric", sort=False):
        best = g[g["status"].isin(["best", "tied"])]
        cheap = best.loc[best["compute_per_round"].idxmin(), "entry"] if (
            len(best) and best["compute_per_round"].notna().any()) else ""  # fmt: skip
        unres = g[g["status"] == "unresolved"]
        lines.append(
            f"Race on {words.get(metric, metric)} (δ = {race.delta:g} point): "
            + f"{g['leader'].iloc[0]} leads; "
            + (f"tied-best at δ: {', '.join(best['entry'])}" if len(best) else "no tied-best set")
            + (f" (cheapest by client compute per round: {cheap})" if cheap else "")
            + f"; shown worse: {int((g['status'] == 'worse').sum())}"
            + (
                "; unresolved: "
                + ", ".join(
                    f"{e} (±{h:.2f} at {counted(n, 'seed')})"
                    for e, h, n in zip(unres["entry"], unres["half_width"], unres["n"], strict=True)
                )  # fmt: skip
                if len(unres)
                else ""
            )
            + "."
        )
    return v, lines


def finish_study(settings: StudySettings, out: str | Path) -> StudyResult:
    """Assemble and write every table and ``report.html`` from the run files in ``out``."""
    out = Path(out)
    restore_runs(settings, out)
    history = load_history(settings, out)
    race_log = read_race_log(settings, out)
    missing = raced_missing(settings, race_log, missing_runs(settings, out))
    if history.empty:
        raise ValueError(f"{out} holds no finished run yet")
    metrics = run_metrics(history, target_worst=settings.target_worst, rounds=settings.rounds)
    metrics = matched_cost(history, metrics, settings.reference)
    order = list(settings.selectors)
    summary = summary_table(metrics, order)
    paired = paired_differences(
        metrics, settings.reference, entries=order, resamples=settings.bootstrap, seed=0
    )
    baselines = [e.text for e in settings.entries if is_baseline(e.spec)]
    candidates = [e.text for e in settings.entries if not e.spec.is_rule]
    doms = {
        plane: (
            dominance(metrics, candidates, baselines, resamples=settings.bootstrap, seed=0, on=on)
            if candidates and baselines
            else pd.DataFrame()
        )
        for plane, on in PLANES.items()
    }
    dom = doms["final"]
    fronts = fronts_over_rounds(settings, reference_stats(settings, out))
    surrogate = surrogate_error(history)
    mix = training_mix(settings, history)
    table = verdict_table(settings, paired, doms)
    lines = [verdict_summary(settings, paired, doms), *verdict(settings, paired, doms)]
    why = levelling_down(settings, mix)
    if why:
        lines.append(why)
    models = {e.text: e.spec.information for e in settings.entries}
    costs = cost_table(history, metrics, settings.reference, models)
    lines += goal_lines(
        costs, metrics, dom, baselines, reference=settings.reference,
        resamples=settings.bootstrap,
    )  # fmt: skip
    race = race_lines(settings, race_log, metrics) if race_log is not None else None
    if race is not None:
        lines += race[1]
        write_table_atomic(race[0], out / "race_verdict.csv")
    if missing:
        lines.insert(
            0, f"PARTIAL: {len(missing)} of {counted(settings.seeds * len(order), 'run')} missing."
        )
    res = StudyResult(
        settings, history, metrics, summary, paired, dom, fronts, surrogate, lines, missing, mix,
        doms["auc"], table, costs, race[1] if race is not None else [],
    )  # fmt: skip
    write_table_atomic(history, out / "history.csv")
    write_packed_history(settings, history, out)
    write_table_atomic(metrics, out / "metrics.csv")
    write_table_atomic(summary, out / "summary.csv")
    write_table_atomic(paired, out / "paired.csv")
    if not dom.empty:
        write_table_atomic(dom, out / "dominance.csv")
    if not doms["auc"].empty:
        write_table_atomic(doms["auc"], out / "dominance_auc.csv")
    if not fronts.empty:
        write_table_atomic(fronts, out / "fronts.csv")
    write_table_atomic(surrogate, out / "surrogate.csv")
    write_table_atomic(mix, out / "mix.csv")
    if not costs.empty:
        write_table_atomic(costs, out / "cost.csv")
    md = [
        lines[0],
        "Difference to "
        f"{settings.reference} on the same seed, bootstrap 95 % interval; * the Holm-corrected "
        "Wilcoxon test agrees; beats: baselines beaten on both metrics of the plane.",
        _markdown_table(table) if not table.empty else "",
        *lines[1:],
    ]
    write_text_atomic("\n\n".join(x for x in md if x) + "\n", out / "verdict.md")
    write_report(render_html(res), out / "report.html")
    return res
