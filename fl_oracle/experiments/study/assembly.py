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


def finish_study(settings: StudySettings, out: str | Path) -> StudyResult:
    """Assemble and write every table and ``report.html`` from the run files in ``out``."""
    out = Path(out)
    restore_runs(settings, out)
    history = load_history(settings, out)
    missing = missing_runs(settings, out)
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
    if missing:
        lines.insert(0, f"PARTIAL: {len(missing)} of {settings.seeds * len(order)} runs missing.")
    res = StudyResult(
        settings, history, metrics, summary, paired, dom, fronts, surrogate, lines, missing, mix,
        doms["auc"], table, costs,
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
