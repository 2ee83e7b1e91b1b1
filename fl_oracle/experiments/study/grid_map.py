"""The map of a grid study: who leads each cell at matched cost, by how much, and whether
held-out seeds confirm it; ``grid.csv``, ``grid.md`` and ``map.html``.

For each cell and each panel (final worst-domain, final average accuracy):

* the **best baseline**: the counted baseline (:func:`~.settings.is_baseline`) with the highest
  mean over the screen's seeds;
* the **leader**: the formulation entry within :data:`~.cost.BUDGET`× the reference's client
  compute per round, not the oracle's upper bound (matched cost), with the highest mean;
* ``diff`` and its interval: the paired mean difference leader − best baseline over the
  screen's seeds with the study's bootstrap 95 % interval (the same numbers the cell's own
  ``dominance.csv`` holds for that pair); ``beats``: counted baselines whose paired interval
  against the leader lies below zero; ``beats_sw``: baselines the leader beats on both final
  metrics under the cell's study-wide Holm family (``dominance.csv``'s ``beats_sw``);
  ``compute_ratio`` and ``baseline_compute_ratio``: the leader's and the best baseline's client
  compute per round over the reference's (the cell's ``cost.csv``);
* ``status``: ``confirmed`` — on the held-out seeds the leader's paired interval lies above
  zero against every counted baseline; ``not confirmed`` — held-out seeds ran, it did not;
  ``baselines lead`` — the leader was not ahead of the best baseline on the screen (not sent to
  held-out seeds for this panel; where it ran there for the other panel, its held-out numbers
  are shown all the same); ``unconfirmed`` — ahead on the screen, held-out seeds not run (yet).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from fl_oracle.experiments.study.cost import BUDGET
from fl_oracle.experiments.study.settings import is_baseline
from selection.words import counted, signed

if TYPE_CHECKING:
    from fl_oracle.experiments.study.assembly import StudyResult
    from fl_oracle.experiments.study.grid import GridSettings

__all__ = ["PANELS", "Lead", "grid_table", "grid_verdict", "leads", "map_html"]

#: panel -> (metric, words)
PANELS: dict[str, tuple[str, str]] = {
    "worst": ("final_worst", "final worst-domain accuracy"),
    "avg": ("final_avg", "final average accuracy"),
}


@dataclass(frozen=True)
class Lead:
    """One panel of one cell: the leader against the best baseline (module docstring)."""

    metric: str
    leader: str
    baseline: str
    leader_mean: float
    baseline_mean: float
    diff: float
    ci_lo: float
    ci_hi: float
    beats: int
    baselines: int
    beats_sw: int
    compute_ratio: float
    baseline_compute_ratio: float = float("nan")

    @property
    def ahead(self) -> bool:
        return bool(self.diff > 0)


def _affordable(res: StudyResult) -> list[str]:
    s = res.settings
    forms = [e.text for e in s.entries if not e.spec.is_rule]
    if res.cost.empty:
        return forms
    c = res.cost.set_index("entry")
    return [
        e
        for e in forms
        if e in c.index and not bool(c.at[e, "upper_bound"]) and c.at[e, "compute_ratio"] <= BUDGET
    ]


def _against(res: StudyResult, entry: str, baselines: list[str], metric: str) -> pd.DataFrame:
    """The paired rows entry − baseline on ``metric`` (``diff``, ``ci_lo``, ``ci_hi``), one per
    baseline: read from the study's own ``dominance`` table, which pairs every formulation with
    every counted baseline (same bootstrap), not computed again."""
    d = res.dominance
    if d.empty:
        return pd.DataFrame(columns=["baseline", "diff", "ci_lo", "ci_hi"])
    rows = d[(d["entry"] == entry) & d["baseline"].isin(baselines)]
    cols = {f"{metric}_diff": "diff", f"{metric}_ci_lo": "ci_lo", f"{metric}_ci_hi": "ci_hi"}
    return rows[["baseline", *cols]].rename(columns=cols).reset_index(drop=True)


def leads(res: StudyResult) -> dict[str, Lead]:
    """Each panel's :class:`Lead` of a screened cell (none without an affordable formulation
    or a counted baseline)."""
    s = res.settings
    base = [e.text for e in s.entries if is_baseline(e.spec)]
    cands = _affordable(res)
    if not base or not cands or res.metrics.empty:
        return {}
    means = res.metrics.groupby("entry")[[m for m, _ in PANELS.values()]].mean()
    ratio = res.cost.set_index("entry")["compute_ratio"] if not res.cost.empty else None
    out = {}
    for panel, (metric, _) in PANELS.items():
        best = max((b for b in base if b in means.index), key=lambda b: means.at[b, metric])
        lead = max((e for e in cands if e in means.index), key=lambda e: means.at[e, metric])
        rows = _against(res, lead, base, metric)
        top = rows[rows["baseline"] == best].iloc[0]
        sw = 0
        if not res.dominance.empty and "beats_sw" in res.dominance.columns:
            d = res.dominance[res.dominance["entry"] == lead]
            sw = int(d["beats_sw"].astype(bool).sum())
        out[panel] = Lead(
            metric=metric,
            leader=lead,
            baseline=best,
            leader_mean=float(means.at[lead, metric]),
            baseline_mean=float(means.at[best, metric]),
            diff=float(top["diff"]),
            ci_lo=float(top["ci_lo"]),
            ci_hi=float(top["ci_hi"]),
            beats=int((rows["ci_lo"] > 0).sum()),
            baselines=len(base),
            beats_sw=sw,
            compute_ratio=float(ratio[lead]) if ratio is not None else float("nan"),
            baseline_compute_ratio=float(ratio[best]) if ratio is not None else float("nan"),
        )
    return out


def _confirmation(confirm: StudyResult | None, lead: Lead) -> dict:
    """The held-out verdict of a lead (module docstring)."""
    if confirm is None:
        return {"status": "unconfirmed" if lead.ahead else "baselines lead"}
    s = confirm.settings
    if lead.leader not in s.selectors:
        return {"status": "unconfirmed" if lead.ahead else "baselines lead"}
    base = [e.text for e in s.entries if is_baseline(e.spec)]
    rows = _against(confirm, lead.leader, base, lead.metric)
    if confirm.missing or len(rows) < len(base):  # held-out runs still missing
        return {"status": "unconfirmed" if lead.ahead else "baselines lead"}
    means = confirm.metrics.groupby("entry")[lead.metric].mean()
    best = max(base, key=lambda b: means[b])
    top = rows[rows["baseline"] == best].iloc[0]
    ok = bool((rows["ci_lo"] > 0).all())
    # a leader behind the best baseline on the screen was not sent to the held-out seeds for
    # this panel (it ran there for the other one): its held-out numbers are shown, decide nothing
    status = ("confirmed" if ok else "not confirmed") if lead.ahead else "baselines lead"
    return {
        "status": status,
        "confirm_seeds": f"{s.first_seed}-{s.first_seed + s.seeds - 1}",
        "confirm_baseline": best,
        "confirm_diff": float(top["diff"]),
        "confirm_ci_lo": float(top["ci_lo"]),
        "confirm_ci_hi": float(top["ci_hi"]),
        "confirm_beats": int((rows["ci_lo"] > 0).sum()),
    }


def grid_table(
    grid: GridSettings,
    screens: Mapping[str, StudyResult],
    confirms: Mapping[str, StudyResult],
) -> pd.DataFrame:
    """One row per cell (``grid.csv``): the axes, then each panel's lead and confirmation."""
    rows = []
    for cell in grid.cells:
        res = screens.get(cell.slug)
        row: dict = {"cell": cell.slug, **{a: v for a, v in cell.values}}
        row = {k: ("none" if v is None else v) for k, v in row.items()}
        if res is None:
            rows.append(row)
            continue
        from fl_oracle.sim.config import OracleConfig

        row["n_clients"] = OracleConfig(seed=0, k=cell.settings.k, **cell.settings.oracle).n_clients
        row["screen_seeds"] = f"{res.settings.first_seed}-{res.settings.seed_list[-1]}"
        row["missing_runs"] = len(res.missing)
        for panel, lead in leads(res).items():
            row |= {
                f"{panel}_leader": lead.leader,
                f"{panel}_best_baseline": lead.baseline,
                f"{panel}_leader_mean": lead.leader_mean,
                f"{panel}_baseline_mean": lead.baseline_mean,
                f"{panel}_diff": lead.diff,
                f"{panel}_ci_lo": lead.ci_lo,
                f"{panel}_ci_hi": lead.ci_hi,
                f"{panel}_beats": f"{lead.beats}/{lead.baselines}",
                f"{panel}_beats_sw": lead.beats_sw,
                f"{panel}_compute_ratio": lead.compute_ratio,
                f"{panel}_baseline_compute_ratio": lead.baseline_compute_ratio,
            }
            conf = _confirmation(confirms.get(cell.slug), lead)
            row |= {f"{panel}_{k}": v for k, v in conf.items()}
        rows.append(row)
    return pd.DataFrame(rows)


def grid_verdict(grid: GridSettings, table: pd.DataFrame) -> list[str]:
    """The map in sentences: per panel, where a formulation leads, where it is confirmed."""
    s = grid.base
    lines = [
        f"{counted(len(table), 'cell')} x {counted(len(s.selectors), 'entry')}, screened on seeds "
        f"{s.first_seed}-{s.first_seed + s.seeds - 1} ({counted(s.rounds, 'round')}); a cell whose leading "
        f"formulation (within {BUDGET:g}x {s.reference}'s compute per round) is ahead of the best "
        f"baseline on the screen is confirmed on held-out seeds {grid.confirm_first_seed}-"
        f"{grid.confirm_first_seed + grid.confirm_seeds - 1} against every counted baseline."
    ]
    for panel, (_, words) in PANELS.items():
        col = f"{panel}_status"
        if col not in table.columns:
            continue
        ahead = table[table[f"{panel}_diff"] > 0]
        conf = table[table[col] == "confirmed"]
        lines.append(
            f"{words.capitalize()}: a formulation leads the best baseline on the screen in "
            f"{len(ahead)} of {counted(len(table), 'cell')}"
            + (f" ({', '.join(ahead['cell'])})" if len(ahead) else "")
            + "; confirmed on held-out seeds against every baseline in "
            + (
                ", ".join(f"{r.cell} ({getattr(r, f'{panel}_leader')})" for r in conf.itertuples())
                if len(conf)
                else "none"
            )
            + "."
        )
    return lines


def _x_label(grid: GridSettings, values: dict, y_axis: str) -> str:
    differ = [
        f"{a}={'none' if v is None else v}"
        for a, v in values.items()
        if a != y_axis and str(v) != str(grid.base_value(a))
    ]
    return ", ".join(differ) or "study's own"


def _heatmap(grid: GridSettings, table: pd.DataFrame, panel: str) -> dict:
    y_axis = grid.axes[0]
    ys = list(dict.fromkeys(str(c.value(y_axis)) for c in grid.cells))
    xs = list(dict.fromkeys(_x_label(grid, dict(c.values), y_axis) for c in grid.cells))
    z = [[None] * len(xs) for _ in ys]
    text = [[""] * len(xs) for _ in ys]
    link = [[""] * len(xs) for _ in ys]
    rows = table.set_index("cell")
    mark = {"confirmed": "✓ held-out", "not confirmed": "✗ held-out", "unconfirmed": "?"}
    for c in grid.cells:
        i = ys.index(str(c.value(y_axis)))
        j = xs.index(_x_label(grid, dict(c.values), y_axis))
        link[i][j] = f"cells/{c.slug}/report.html"
        if c.slug not in rows.index or f"{panel}_diff" not in rows.columns:
            continue
        r = rows.loc[c.slug]
        if pd.isna(r[f"{panel}_diff"]):
            continue
        z[i][j] = round(float(r[f"{panel}_diff"]), 2)
        status = r[f"{panel}_status"]
        held = mark.get(status, "")
        if status in ("confirmed", "not confirmed"):  # how many baselines the held-out seeds beat
            n = str(r[f"{panel}_beats"]).split("/")[-1]
            held += f": {int(r[f'{panel}_confirm_beats'])}/{n} beaten"
        text[i][j] = (
            f"{r[f'{panel}_leader']}<br>{signed(r[f'{panel}_diff'], 1)} "
            f"[{signed(r[f'{panel}_ci_lo'], 1)}, {signed(r[f'{panel}_ci_hi'], 1)}]<br>{held}"
        )
    vals = [abs(v) for row in z for v in row if v is not None]
    bound = max(vals) if vals else 1.0
    trace = {
        "type": "heatmap", "x": xs, "y": ys, "z": z, "text": text, "customdata": link,
        "texttemplate": "%{text}", "textfont": {"size": 11},
        "colorscale": "RdBu", "reversescale": True, "zmin": -bound, "zmax": bound, "zmid": 0,
        "colorbar": {"title": {"text": "pp"}},
        "hovertemplate": "%{y} / %{x}<br>%{text}<br>click: the cell's report<extra></extra>",
    }  # fmt: skip
    layout = {
        "xaxis": {"title": {"text": "federation (what differs from the study's own)"},
                  "type": "category"},
        "yaxis": {"title": {"text": y_axis}, "type": "category"},
        "height": 170 + 110 * len(ys), "margin": {"t": 10},
    }  # fmt: skip
    return {"data": [trace], "layout": layout}


def map_html(grid: GridSettings, table: pd.DataFrame, verdict: list[str]) -> str:
    """The map page: both panels (click a cell: its study report), the verdict, the table."""
    from selection.html_page import html_table, page
    from selection.plotly_js import plotly_head

    figs = {f"map_{p}": _heatmap(grid, table, p) for p in PANELS}
    scripts = "".join(
        f"<script>Plotly.newPlot('{k}', {json.dumps(v['data'])}, {json.dumps(v['layout'])},"
        " {responsive: true, displaylogo: false}).then(function(g){g.on('plotly_click',"
        " function(e){var u=e.points[0].customdata; if(u){window.location.href=u;}});});"
        "</script>"
        for k, v in figs.items()
    )
    s = grid.base
    panels = "".join(
        f"<h2>{i}. Leader − best baseline: {html.escape(words)} (pp)</h2><div id='map_{p}'></div>"
        for i, (p, (_, words)) in enumerate(PANELS.items(), start=1)
    )

    def cell(column, v, record):
        if isinstance(v, (float, np.floating)):
            return " class='n'", "" if pd.isna(v) else f"{v:.2f}"
        return "", html.escape(str(v))

    body = (
        f"<h1>fedsel map: {counted(len(grid.cells), 'federation')} × {counted(len(s.selectors), 'entry')}</h1>"
        f"<p class='takeaway'>{html.escape(verdict[0])}</p>"
        + "".join(f"<p>{html.escape(v)}</p>" for v in verdict[1:])
        + "<p class='note'>Each cell: the leading formulation within "
        f"{BUDGET:g}× {html.escape(s.reference)}'s client compute per round, its paired "
        "difference to the cell's best baseline over the screen's seeds with the bootstrap 95 % "
        "interval, and whether held-out seeds confirm that it beats every counted baseline "
        "(✓ confirmed, ✗ not confirmed on held-out seeds, with the baselines beaten there; ? not "
        "run yet; no mark: a baseline leads on the screen). Blue: the formulation ahead; red: a baseline ahead. Click a cell for its "
        "study report.</p>"
        + panels
        # every column of grid.csv: wide by design, it scrolls in its box (data-wide)
        + "<h2>3. The table (grid.csv)</h2><div class='scroll' data-wide>"
        + html_table(table, cell)
        + f"</div><h2>4. Settings</h2><pre>{html.escape(grid.to_toml())}</pre>"
        + scripts
    )
    return page("fedsel map", body, head=plotly_head(), heading="")
