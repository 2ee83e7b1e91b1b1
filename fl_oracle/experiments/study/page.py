"""The study's one self-contained HTML page: its sections, in order, and the figures they embed.

Each section is a function of the assembled :class:`~.assembly.StudyResult` returning its HTML
and the figures it places (:data:`SECTIONS`); :func:`render_html` writes them in that order on
:func:`selection.html_page.page`, plotly.js inlined once (the page works offline).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from fl_oracle.experiments.study.cost import compute_figure
from fl_oracle.experiments.study.figures import (
    curves_figure,
    family,
    family_colors,
    forest_figure,
    fronts_figure,
    plane_figure,
)
from selection.html_page import html_table, page
from selection.plotly_js import plotly_head
from selection.words import counted

if TYPE_CHECKING:
    from fl_oracle.experiments.study.assembly import StudyResult

__all__ = ["Section", "SECTIONS", "render_html"]

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
class Section:
    """One part of the page: its HTML and the figures it places (``<div id=...>`` -> plotly
    figure dict), drawn in the page's order."""

    html: str
    figures: dict[str, dict] = field(default_factory=dict)


#: columns whose tiny values are shown in 2 significant digits (p-values), not as 0
_P_COLUMNS = frozenset({"p", "p_holm"})


def _table(df: pd.DataFrame, digits: int = 2) -> str:
    """A study table: numbers right-aligned (``digits`` decimals, a value that rounds to zero
    as 0, never -0.00 or float noise such as -1.4e-14; tiny p-values in 2 significant digits),
    text escaped."""

    def cell(column: str, v, record: dict) -> tuple[str, str]:
        if isinstance(v, (float, np.floating)):
            if column in _P_COLUMNS and 0 < abs(v) < 1e-3:
                return " class='n'", f"{v:.2g}"
            text = f"{v:.{digits}f}"
            return " class='n'", text.lstrip("-") if float(text) == 0 else text
        return "", html.escape(str(v))

    return html_table(df, cell, sections=True)


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


def _title(res: StudyResult) -> Section:
    s = res.settings
    return Section(
        f"<h1>fedsel study: {counted(len(s.selectors), 'selector')} × "
        f"{counted(s.seeds, 'seed')} × {counted(s.rounds, 'round')}, K={s.k}</h1>"
    )


def _verdict(res: StudyResult) -> Section:
    head, *rest = res.verdict or [""]
    verdict_html = f"<p class='takeaway'>{html.escape(head)}</p>"
    if not res.verdict_table.empty:
        verdict_html += (
            f"<p class='note'>Difference to {html.escape(res.settings.reference)} on the same "
            "seed, bootstrap 95 % interval; * the Holm-corrected Wilcoxon test agrees; beats: "
            "baselines beaten on both metrics of the plane (final round; means over the run), "
            "and how many of those the family-wise test confirms.</p>" + _table(res.verdict_table)
        )
    verdict_html += (
        "<details><summary>The verdict in words</summary>"
        + "".join(f"<p>{html.escape(line)}</p>" for line in rest)
        + "</details>"
    )
    return Section(f'<div class="verdict"><h2>Verdict</h2>{verdict_html}</div>')


def _plane(res: StudyResult) -> Section:
    return Section(
        """<h2>1. Realized (average, worst-domain) plane</h2>
<p class="note">Faint dots: one seed each. Large markers: mean over seeds with 95 % t-intervals;
a formulation's swept points are joined in parameter order and labelled by their parameter
(ε, δ: percentage points; α: position in the round's gap range; w: (w_U, w_R)). Diamonds:
baselines. The axes stay within 0–100 %: an interval reaching past an axis (few seeds give wide
ones) is cut there, and given in full on hover.</p><div id="plane"></div>
<p class="note">The same plane fitted to the leading half of the entries (mean final worst-domain
accuracy at or above the median), every mean inside it labelled; intervals reaching past its
axes are cut there (in full on hover).</p><div id="plane_zoom"></div>""",
        {"plane": plane_figure(res), "plane_zoom": plane_figure(res, zoom=True)},
    )


def _paired(res: StudyResult) -> Section:
    ref = html.escape(res.settings.reference)
    paired = res.paired[res.paired["metric"].isin(["final_worst", "final_avg"])][
        ["entry", "metric", "mean", "diff", "ci_lo", "ci_hi", "p", "p_holm", "better", "worse"]
    ]
    return Section(
        f"""<h2>2. Paired differences against {ref}</h2>
<p class="note">Mean over seeds of (entry − {ref}) on the same seed, bootstrap
BCa 95 % interval. Green: interval above zero; red: below.</p>
<h3>final worst-domain accuracy</h3><div id="forest_worst"></div>
<h3>final average accuracy</h3><div id="forest_avg"></div>
{_table(paired, 3)}
<h3>Formulations against every baseline</h3>
<p class="note">Baselines beaten on both metrics of a plane, each paired interval above zero:
(final average, final worst) and (mean average, mean worst over rounds).</p>
{_table(_beats_table(res))}""",
        {
            "forest_worst": forest_figure(res, "final_worst"),
            "forest_avg": forest_figure(res, "final_avg"),
        },
    )


def _curves(res: StudyResult) -> Section:
    return Section(
        """<h2>3. Curves over rounds (mean, 95 % band over seeds)</h2>
<p class="note">Click legend entries to show the other selectors. Bands stay within
0–100 %.</p>
<div id="curve_worst"></div><div id="curve_avg"></div>""",
        {
            "curve_worst": curves_figure(res, "acc_worst", "worst-domain test accuracy (%)"),
            "curve_avg": curves_figure(res, "acc_avg", "average test accuracy (%)"),
        },
    )


def _fronts(res: StudyResult) -> Section:
    s = res.settings
    return Section(
        f"""<h2>4. The exact predicted front over rounds</h2>
<p class="note">Exact (max U, max worst) front of the linear model on the reference run's
statistics (seed {s.first_seed}) at rounds {", ".join(map(str, s.fronts_at))}: how the trade-off the
formulations solve moves as training goes on.</p><div id="fronts"></div>""",
        {"fronts": fronts_figure(res)},
    )


def _surrogate(res: StudyResult) -> Section:
    return Section(
        f"""<h2>5. Predicted vs realized (the surrogate's error)</h2>
<p class="note">Predicted worst(S) and gap(S) from the round's statistics vs the worst-domain
test accuracy and gap of the committed model, over all rounds and seeds (bias = predicted −
realized).</p>{_table(res.surrogate)}"""
    )


def _mix(res: StudyResult) -> Section:
    return Section(
        f"""<h2>6. What each selector trains on, and where each domain ends</h2>
<p class="note">picks: clients of the domain selected per round (mean over rounds and seeds);
final: final test accuracy on the domain (mean over seeds); diff: paired difference to
{html.escape(res.settings.reference)} on the same seed. Read with section 1: a gain on the worst domain
bought by a loss on the best one shows here.</p>{_table(res.mix)}"""
    )


def _summary(res: StudyResult) -> Section:
    s = res.settings
    summary = res.summary[
        ["entry", "n_seeds", "final_avg_mean", "final_worst_mean", "final_gap_mean",
         "auc_worst_mean", "rounds_to_target_mean", "reached_target"]
    ]  # fmt: skip
    return Section(
        f"""<h2>7. Summary per selector (means over seeds)</h2>
<p class="note">rounds_to_target: rounds until the worst domain reaches {s.target_worst:g} %
(runs that never do count as {s.rounds + 1}).</p>{_table(summary)}"""
    )


def _cost(res: StudyResult) -> Section:
    """Section 8, where the runs carry deployment costs (empty otherwise: the numbering
    stays)."""
    if res.cost.empty:
        return Section("")
    s = res.settings
    colors = family_colors(s)
    by_entry = {e.text: colors[family(e.spec)] for e in s.entries}
    return Section(
        f"""<h2>8. What the information costs a deployment</h2>
<p class="note">Client compute per round (sample-gradient evaluations of local training plus
probe samples) and bytes per round (model-sized messages up and down plus the statistics), as a
deployment pays them, relative to {html.escape(s.reference)}, the study's reference; compute and bytes until the worst domain first reaches
{s.target_worst:g} % (runs that never do are charged one round more). Entries whose
information model is <code>fresh</code> are the oracle's upper bound: every client trains every
round.</p>{_table(res.cost)}
<p class="note">Worst-domain accuracy against cumulative client compute (mean over seeds).</p>
<div id="compute"></div>""",
        {"compute": compute_figure(res.history, s.selectors, by_entry)},
    )


def _settings(res: StudyResult) -> Section:
    return Section(f"<h2>9. Settings</h2><pre>{html.escape(res.settings.to_toml())}</pre>")


#: the page's sections, in order (each numbered in its own heading)
SECTIONS: list[Callable[[StudyResult], Section]] = [
    _title, _verdict, _plane, _paired, _curves, _fronts, _surrogate, _mix, _summary, _cost,
    _settings,
]  # fmt: skip


def render_html(res: StudyResult) -> str:
    """The report page: :data:`SECTIONS` in order, then their figures (plotly.js inlined
    once)."""
    sections = [make(res) for make in SECTIONS]
    figs = {k: v for s in sections for k, v in s.figures.items()}
    divs = "".join(
        f"<script>Plotly.newPlot('{k}', {json.dumps(v['data'])}, {json.dumps(v['layout'])},"
        " {responsive: true, displaylogo: false});</script>"
        for k, v in figs.items()
    )
    body = "\n".join([*(s.html for s in sections), divs])
    return page("fedsel study", body, css=_CSS, head=plotly_head(), heading="")
