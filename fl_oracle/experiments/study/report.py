"""The study's tables and its one self-contained HTML report.

:func:`finish_study` assembles ``history.csv`` from the run files, computes the metrics and
paired statistics (:mod:`.stats`), the exact predicted fronts of the reference run at
several rounds, the surrogate error, a plain-language verdict, and writes them with
``report.html`` (plotly, inlined once: the page works offline).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from fl_oracle.experiments.study.cost import (
    compute_figure,
    cost_table,
    goal_lines,
    matched_cost,
)
from fl_oracle.experiments.study.runs import (
    StudySettings,
    is_baseline,
    load_history,
    missing_runs,
    reference_stats,
)
from fl_oracle.experiments.study.stats import (
    METRICS,
    dominance,
    paired_differences,
    run_metrics,
    summary_table,
    surrogate_error,
)
from selection.atomic import write_table_atomic, write_text_atomic
from selection.html_page import page
from selection.selectors import Spec

__all__ = [
    "StudyResult",
    "family",
    "finish_study",
    "fronts_over_rounds",
    "training_mix",
    "levelling_down",
    "PLANES",
    "verdict",
    "verdict_summary",
    "verdict_table",
]


# the study page's own rules, after the shared ones of selection.html_page
_CSS = (
    "table{font-size:13px;margin:.5em 0}td,th{padding:3px 7px;text-align:left}"
    "td.n{text-align:right}"
    ".verdict{background:#f7f9fc;border-left:4px solid #1f77b4;padding:.5em 1em;overflow-x:auto}"
    ".takeaway{font-size:1.1em}.note{font-size:14px}"
    "pre{background:#f6f6f6;padding:.6em;font-size:12px;white-space:pre-wrap;"
    "overflow-wrap:anywhere}"
)


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


def family(spec: Spec) -> str:
    """The formulation an entry belongs to: ``eps:5@stale`` -> ``eps@stale``; a baseline rule
    and ``all``: the entry itself (canonical)."""
    if spec.is_rule:
        return spec.canonical
    return spec.name + ("@" + "+".join(spec.modifiers) if spec.modifiers else "")


def _param(spec: Spec) -> str:
    name, arg = spec.name, spec.arg
    sym = {"eps": "ε", "maxmin": "δ", "eps-rel": "α", "weighted": "w", "fisher-fair": "δ"}.get(
        name, name
    )
    return f"{sym}={arg}" if arg else name


def fronts_over_rounds(settings: StudySettings, stats: pd.DataFrame | None) -> pd.DataFrame:
    """Exact predicted fronts (max U, max worst) and (max U, min gap) of the reference run."""
    from selection.problem import SelectionProblem
    from selection.solvers.exhaustive import exact_front

    if stats is None:
        return pd.DataFrame()
    frames = []
    k = min(settings.k, int(stats.groupby("round").size().min()))
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
            f"{r['entry']} {r[f'diff_{best}']:+.1f} ({r[f'picks_{best}']:.2f} picks/round)"
            for _, r in df.iterrows()
        )

    return (
        f"Levelling down: on {best}, the domain {settings.reference} ends best on "
        f"({ref[f'final_{best}']:.1f} %, {ref[f'picks_{best}']:.2f} of its clients picked per "
        f"round), {len(low)} of {len(mix) - 1} entries end more than {threshold:g} points lower "
        f"(mean over seeds, paired): {fmt(low)}. Within {threshold:g} points: {fmt(kept)}."
    )


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
        f"With {n} seeds the smallest two-sided Wilcoxon p is {p_min:.4f}, so Holm's correction "
        f"over {m} entries (first threshold 0.05/{m} = {0.05 / m:.4f}) cannot reject at 5 %: "
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
        f"Paired over {settings.seeds} seeds x {settings.rounds} rounds, K={settings.k}: every "
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
                f"{r.entry}{'*' if r.p_holm < 0.05 else ''} {r.diff:+.2f} "
                f"[{r.ci_lo:+.2f}, {r.ci_hi:+.2f}]"
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
        fam = f"{n_base} baselines × 2 metrics"
        if beats_all:
            fw = [e for e in beats_all if bool(dom[dom["entry"] == e]["beats_fw"].all())]
            lines.append(
                f"On {what}: formulations whose paired intervals exclude zero against every "
                f"baseline ({n_base}) on both: {', '.join(beats_all)}. "
                + (
                    f"Of these, the family-wise test (Wilcoxon, Holm over the {fam}) also rejects "
                    f"every comparison for: {', '.join(fw)} — these beat every baseline."
                    if fw
                    else f"The family-wise test (Wilcoxon, Holm over the {fam}) rejects every "
                    "comparison for none of them: no entry is claimed to beat every baseline."
                )
            )
        else:
            best = dom.groupby("entry")["beats"].sum().sort_values(ascending=False).head(3)
            lines.append(
                f"On {what}: no formulation beats every baseline on both with intervals "
                "excluding zero; the closest: "
                + ", ".join(f"{e} ({int(n)}/{n_base} baselines)" for e, n in best.items())
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
    zero; how many of those also by the family-wise test)."""
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
            row[col] = f"{r['diff']:+.2f} [{r['ci_lo']:+.2f}, {r['ci_hi']:+.2f}]{mark}"
        for plane, label in (("final", "beats (final)"), ("auc", "beats (run)")):
            dom = doms.get(plane, pd.DataFrame())
            mine = dom[dom["entry"] == entry] if not dom.empty else dom
            if mine.empty:
                row[label] = ""
                continue
            n, b, fw = mine["baseline"].nunique(), int(mine["beats"].sum()), 0
            if "beats_fw" in mine:
                fw = int(mine["beats_fw"].sum())
            row[label] = f"{b}/{n} ({fw} family-wise)"
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
    return (
        f"{head} Highest final worst-domain accuracy: {best['entry']} "
        f"({best['diff']:+.1f} points over {settings.reference}, 95 % interval "
        f"[{best['ci_lo']:+.1f}, {best['ci_hi']:+.1f}])."
    )


def _markdown_table(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(df.columns))) + "|"
    body = ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def finish_study(settings: StudySettings, out: str | Path) -> StudyResult:
    """Assemble and write every table and ``report.html`` from the run files in ``out``."""
    out = Path(out)
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
    baselines = [e for e in order if is_baseline(settings.spec(e))]
    candidates = [e for e in order if not settings.spec(e).is_rule]
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
    costs = cost_table(history, metrics, settings.reference)
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
    write_text_atomic(render_html(res), out / "report.html")
    return res


# ---------------------------------------------------------------- report
_PALETTE = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
]  # fmt: skip


def _colors(settings: StudySettings) -> dict[str, str]:
    """One colour per formulation family (baselines each their own), distinct for up to 34
    families: the first ten as before, then plotly's Dark24."""
    from plotly.colors import qualitative

    palette = [*_PALETTE, *(c for c in qualitative.Dark24 if c.lower() not in _PALETTE)]
    fams = list(dict.fromkeys(family(settings.spec(e)) for e in settings.selectors))
    return {f: palette[i % len(palette)] for i, f in enumerate(fams)}


def _mean_ci(x: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of its t-based 95 % interval over seeds."""
    from scipy import stats as sps

    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float(x.mean()), 0.0
    return float(x.mean()), float(sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))


# The plane's fixed geometry (pixels), so labels can be placed without overlaps.
_PLANE_W, _PLANE_H = 1150, 700
_PLANE_M = {"l": 70, "r": 210, "t": 20, "b": 60}


def _place_labels(
    points: list[tuple[float, float, str, str]],
    xr: tuple[float, float],
    yr: tuple[float, float],
    obstacles: list[tuple[float, float, float, float]] = (),
) -> list[dict]:
    """:func:`selection.labels.place_labels` on the plane figure's plotting area."""
    from selection.labels import place_labels

    pw = _PLANE_W - _PLANE_M["l"] - _PLANE_M["r"]
    ph = _PLANE_H - _PLANE_M["t"] - _PLANE_M["b"]
    return place_labels(points, xr, yr, pw, ph, obstacles)


# markers per parameter within a formulation's family (its colour): told apart without labels
_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon",
            "hexagon", "star", "cross", "x"]  # fmt: skip


def _plane_figure(res: StudyResult, zoom: bool = False) -> dict:
    """Realized (final average, final worst) plane: seeds faint, means with 95 % intervals,
    each formulation's swept points joined in parameter order and labelled by parameter
    (annotations placed so that no two labels overlap). ``zoom``: the axes fitted to the
    leading half of the entries (mean final worst at least the median), every mean inside
    labelled."""
    colors = _colors(res.settings)
    traces = []
    m = res.metrics
    fam_of = {e: family(res.settings.spec(e)) for e in res.settings.selectors}
    labelled: list[tuple[float, float, str, str]] = []
    means: list[tuple[float, float, float, float, str, str]] = []  # x, y, hx, hy, label, color
    xs_all, ys_all = list(m["final_avg"]), list(m["final_worst"])
    for fam in dict.fromkeys(fam_of.values()):
        entries = [e for e in res.settings.selectors if fam_of[e] == fam]
        xs, ys, ex, ey, labels = [], [], [], [], []
        for e in entries:
            g = m[m["entry"] == e]
            if g.empty:
                continue
            traces.append(
                {
                    "type": "scatter", "mode": "markers", "x": g["final_avg"].tolist(),
                    "y": g["final_worst"].tolist(), "legendgroup": fam, "showlegend": False,
                    "marker": {"color": colors[fam], "size": 5, "opacity": 0.25},
                    "hovertext": [f"{e}, seed {s}" for s in g["seed"]], "hoverinfo": "text",
                }
            )  # fmt: skip
            mx, hx = _mean_ci(g["final_avg"])
            my, hy = _mean_ci(g["final_worst"])
            xs.append(mx), ys.append(my), ex.append(hx), ey.append(hy)
            labels.append(_param(res.settings.spec(e)) if len(entries) > 1 else e)
        if not xs:
            continue
        if len(xs) > 1:  # a lone entry is named by the legend and on hover
            labelled += [(x, y, t, colors[fam]) for x, y, t in zip(xs, ys, labels, strict=True)]
        means += [(x, y, a, b, t, colors[fam]) for x, y, a, b, t in zip(xs, ys, ex, ey, labels, strict=True)]  # fmt: skip
        traces.append(
            {
                "type": "scatter", "mode": "lines+markers" if len(xs) > 1 else "markers",
                "x": xs, "y": ys, "name": fam, "legendgroup": fam, "text": labels,
                "hovertemplate": "%{text}<br>avg %{x:.2f} %, worst %{y:.2f} %<extra></extra>",
                "error_x": {"type": "data", "array": ex, "thickness": 1, "width": 0},
                "error_y": {"type": "data", "array": ey, "thickness": 1, "width": 0},
                "marker": {"color": colors[fam], "size": 9,
                           "symbol": [_SYMBOLS[i % len(_SYMBOLS)] for i in range(len(xs))]
                           if len(xs) > 1 else "diamond"},
                "line": {"color": colors[fam], "width": 1.5},
            }
        )  # fmt: skip
    pad = lambda v: (min(v) - 0.04 * (max(v) - min(v) or 1), max(v) + 0.04 * (max(v) - min(v) or 1))  # noqa: E731
    xr, yr = pad(xs_all), pad(ys_all)
    if zoom and means:
        cut = float(np.median([q[1] for q in means]))
        top = [q for q in means if q[1] >= cut]
        xr = pad([q[0] - q[2] for q in top] + [q[0] + q[2] for q in top])
        yr = pad([q[1] - q[3] for q in top] + [q[1] + q[3] for q in top])
        labelled = [
            (q[0], q[1], q[4], q[5])
            for q in means
            if xr[0] <= q[0] <= xr[1] and yr[0] <= q[1] <= yr[1]
        ]
    layout = {
        "xaxis": {"title": {"text": "final average test accuracy over domains (%)"}, "range": list(xr)},
        "yaxis": {"title": {"text": "final worst-domain test accuracy (%)"}, "range": list(yr)},
        "width": _PLANE_W, "height": _PLANE_H, "margin": dict(_PLANE_M),
        "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1},
        "annotations": _place_labels(labelled, xr, yr, [
            b for q in means
            for b in ((q[0] - q[2], q[1], q[0] + q[2], q[1]), (q[0], q[1] - q[3], q[0], q[1] + q[3]))
        ]),
    }  # fmt: skip
    return {"data": traces, "layout": layout}


def _forest_figure(res: StudyResult, metric: str) -> dict:
    sub = res.paired[res.paired["metric"] == metric]
    sub = sub.iloc[::-1]
    colors = ["#2ca02c" if b else ("#d62728" if w else "#7f7f7f")
              for b, w in zip(sub["better"], sub["worse"], strict=True)]  # fmt: skip
    trace = {
        "type": "scatter", "mode": "markers", "x": sub["diff"].tolist(), "y": sub["entry"].tolist(),
        "marker": {"color": colors, "size": 8},
        "error_x": {"type": "data", "symmetric": False,
                    "array": (sub["ci_hi"] - sub["diff"]).tolist(),
                    "arrayminus": (sub["diff"] - sub["ci_lo"]).tolist()},
        "hovertext": [f"{r.entry}: {r.diff:+.2f} [{r.ci_lo:+.2f}, {r.ci_hi:+.2f}], p_holm={r.p_holm:.3g}"
                      for r in sub.itertuples()], "hoverinfo": "text",
    }  # fmt: skip
    layout = {
        "xaxis": {"title": {"text": f"{METRICS[metric][0]}: entry − {res.settings.reference}"},
                  "zeroline": True, "zerolinewidth": 2},
        "yaxis": {"automargin": True}, "height": 140 + 24 * max(len(sub), 1),
        "margin": {"t": 10}, "showlegend": False,
    }  # fmt: skip
    return {"data": [trace], "layout": layout}


def _curves_figure(res: StudyResult, column: str, title: str) -> dict:
    colors = _colors(res.settings)
    shown = {res.settings.reference, "stratified", "eps-rel:0.5", "maxmin:2", "eps:5", "all"}
    traces = []
    for e in res.settings.selectors:
        g = res.history[res.history["entry"] == e]
        if g.empty:
            continue
        by = g.groupby("round")[column]
        mean, sd, n = by.mean(), by.std(ddof=1).fillna(0.0), by.size()
        half = 1.96 * sd / np.sqrt(n.clip(lower=1))
        r = (mean.index + 1).tolist()
        c = colors[family(res.settings.spec(e))]
        vis = True if e in shown else "legendonly"
        traces.append(
            {"type": "scatter", "x": r + r[::-1],
             "y": (mean + half).tolist() + (mean - half).tolist()[::-1],
             "fill": "toself", "fillcolor": c, "opacity": 0.15, "line": {"width": 0},
             "legendgroup": e, "showlegend": False, "hoverinfo": "skip", "visible": vis}
        )  # fmt: skip
        traces.append(
            {"type": "scatter", "mode": "lines", "x": r, "y": mean.tolist(), "name": e,
             "legendgroup": e, "line": {"color": c, "width": 1.5}, "visible": vis}
        )  # fmt: skip
    layout = {"xaxis": {"title": {"text": "committed rounds"}}, "yaxis": {"title": {"text": title}},
              "height": 460, "margin": {"t": 10}}  # fmt: skip
    return {"data": traces, "layout": layout}


def _fronts_figure(res: StudyResult) -> dict:
    f = res.fronts
    traces = []
    if f.empty:
        return {"data": [], "layout": {}}
    sub = f[f["plane"] == "utility,worst"]
    rounds = sorted(sub["round"].unique())
    for i, r in enumerate(rounds):
        g = sub[sub["round"] == r].sort_values("utility")
        shade = int(40 + 180 * i / max(len(rounds) - 1, 1))
        traces.append(
            {"type": "scatter", "mode": "lines+markers", "x": g["utility"].tolist(),
             "y": g["worst"].tolist(), "name": f"round {r}",
             "line": {"color": f"rgb({255 - shade},{80},{shade})", "shape": "hv"},
             "hovertext": g["selected"].tolist()}
        )  # fmt: skip
    layout = {"xaxis": {"title": {"text": "predicted U(S) (%)"}},
              "yaxis": {"title": {"text": "predicted worst(S) (%)"}}, "height": 460, "margin": {"t": 10}}  # fmt: skip
    return {"data": traces, "layout": layout}


def _beats_table(res: StudyResult) -> pd.DataFrame:
    cols = {}
    for name, dom in (("final", res.dominance), ("over rounds", res.dominance_auc)):
        if dom.empty:
            continue
        n = dom["baseline"].nunique()
        cols[f"beats ({name})"] = (
            dom.groupby("entry", sort=False)["beats"]
            .sum()
            .astype(int)
            .map(lambda b, n=n: f"{b}/{n}")
        )
    if not cols:
        return pd.DataFrame({"entry": []})
    return pd.DataFrame(cols).rename_axis("entry").reset_index()


def _table(df: pd.DataFrame, digits: int = 2) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, (float, np.floating)):
                txt = f"{v:.{digits}f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2g}"
                cells.append(f"<td class='n'>{txt}</td>")
            else:
                cells.append(f"<td>{html.escape(str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cost_section(res: StudyResult) -> str:
    if res.cost.empty:
        return ""
    return f"""<h2>8. What the information costs a deployment</h2>
<p class="note">Client compute per round (sample-gradient evaluations of local training plus
probe samples) and bytes per round (model-sized messages up and down plus the statistics), as a
deployment pays them, relative to {html.escape(res.settings.reference)} (FedAvg's sampling: it
reads nothing); compute and bytes until the worst domain first reaches
{res.settings.target_worst:g} % (runs that never do are charged one round more). Entries whose
information model is <code>fresh</code> are the oracle's upper bound: every client trains every
round.</p>{_table(res.cost)}
<p class="note">Worst-domain accuracy against cumulative client compute (mean over seeds).</p>
<div id="compute"></div>"""


def render_html(res: StudyResult) -> str:
    """The report page (plotly.js inlined once)."""
    from plotly.offline import get_plotlyjs

    figs = {
        "plane": _plane_figure(res),
        "plane_zoom": _plane_figure(res, zoom=True),
        "forest_worst": _forest_figure(res, "final_worst"),
        "forest_avg": _forest_figure(res, "final_avg"),
        "curve_worst": _curves_figure(res, "acc_worst", "worst-domain test accuracy (%)"),
        "curve_avg": _curves_figure(res, "acc_avg", "average test accuracy (%)"),
        "fronts": _fronts_figure(res),
    }
    if not res.cost.empty:
        colors = {
            e: _colors(res.settings)[family(res.settings.spec(e))] for e in res.settings.selectors
        }
        figs["compute"] = compute_figure(res.history, res.settings.selectors, colors)
    s = res.settings
    summary = res.summary[
        ["entry", "n_seeds", "final_avg_mean", "final_worst_mean", "final_gap_mean",
         "auc_worst_mean", "rounds_to_target_mean", "reached_target"]
    ]  # fmt: skip
    paired = res.paired[res.paired["metric"].isin(["final_worst", "final_avg"])][
        ["entry", "metric", "mean", "diff", "ci_lo", "ci_hi", "p", "p_holm", "better", "worse"]
    ]
    divs = "".join(
        f"<script>Plotly.newPlot('{k}', {json.dumps(v['data'])}, {json.dumps(v['layout'])},"
        " {responsive: true, displaylogo: false});</script>"
        for k, v in figs.items()
    )
    head, *rest = res.verdict or [""]
    verdict_html = f"<p class='takeaway'>{html.escape(head)}</p>"
    if not res.verdict_table.empty:
        verdict_html += (
            f"<p class='note'>Difference to {html.escape(s.reference)} on the same seed, "
            "bootstrap 95 % interval; * the Holm-corrected Wilcoxon test agrees; beats: "
            "baselines beaten on both metrics of the plane (final round; means over the run), "
            "and how many of those the family-wise test confirms.</p>" + _table(res.verdict_table)
        )
    verdict_html += (
        "<details><summary>The verdict in words</summary>"
        + "".join(f"<p>{html.escape(line)}</p>" for line in rest)
        + "</details>"
    )
    body = f"""<h1>fedsel study: {len(s.selectors)} selectors × {s.seeds} seeds × {s.rounds} rounds, K={s.k}</h1>
<div class="verdict"><h2>Verdict</h2>{verdict_html}</div>
<h2>1. Realized (average, worst-domain) plane</h2>
<p class="note">Faint dots: one seed each. Large markers: mean over seeds with 95 % t-intervals;
a formulation's swept points are joined in parameter order and labelled by their parameter
(ε, δ: percentage points; α: position in the round's gap range; w: (w_U, w_R)). Diamonds:
baselines.</p><div id="plane"></div>
<p class="note">The same plane fitted to the leading half of the entries (mean final worst-domain
accuracy at or above the median), every mean inside it labelled.</p><div id="plane_zoom"></div>
<h2>2. Paired differences against {html.escape(s.reference)}</h2>
<p class="note">Mean over seeds of (entry − {html.escape(s.reference)}) on the same seed, bootstrap
BCa 95 % interval. Green: interval above zero; red: below.</p>
<h3>final worst-domain accuracy</h3><div id="forest_worst"></div>
<h3>final average accuracy</h3><div id="forest_avg"></div>
{_table(paired, 3)}
<h3>Formulations against every baseline</h3>
<p class="note">Baselines beaten on both metrics of a plane, each paired interval above zero:
(final average, final worst) and (mean average, mean worst over rounds).</p>
{_table(_beats_table(res))}
<h2>3. Curves over rounds (mean, 95 % band over seeds)</h2>
<p class="note">Click legend entries to show the other selectors.</p>
<div id="curve_worst"></div><div id="curve_avg"></div>
<h2>4. The exact predicted front over rounds</h2>
<p class="note">Exact (max U, max worst) front of the linear model on the reference run's
statistics (seed {s.first_seed}) at rounds {", ".join(map(str, s.fronts_at))}: how the trade-off the
formulations solve moves as training goes on.</p><div id="fronts"></div>
<h2>5. Predicted vs realized (the surrogate's error)</h2>
<p class="note">Predicted worst(S) and gap(S) from the round's statistics vs the worst-domain
test accuracy and gap of the committed model, over all rounds and seeds (bias = predicted −
realized).</p>{_table(res.surrogate)}
<h2>6. What each selector trains on, and where each domain ends</h2>
<p class="note">picks: clients of the domain selected per round (mean over rounds and seeds);
final: final test accuracy on the domain (mean over seeds); diff: paired difference to
{html.escape(s.reference)} on the same seed. Read with section 1: a gain on the worst domain
bought by a loss on the best one shows here.</p>{_table(res.mix)}
<h2>7. Summary per selector (means over seeds)</h2>
<p class="note">rounds_to_target: rounds until the worst domain reaches {s.target_worst:g} %
(runs that never do count as {s.rounds + 1}).</p>{_table(summary)}
{_cost_section(res)}
<h2>9. Settings</h2><pre>{html.escape(s.to_toml())}</pre>
{divs}"""
    return page(
        "fedsel study", body, css=_CSS, head=f"<script>{get_plotlyjs()}</script>", heading=""
    )
