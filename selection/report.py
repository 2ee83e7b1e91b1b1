"""Plotly reports of fronts: ``front.html`` (one sweep) and ``compare.html`` (all methods).

Plot data is computed by :func:`front_plot_data` / :func:`compare_plot_data` (DataFrames tests
can compare) and drawn (:mod:`selection.front_plot`, re-exported here) on the pages
:func:`render_front_html` / :func:`render_compare_html` / :func:`render_rounds_html` (one front
per round, overlaid) with their takeaways and point tables. The HTML is self-contained:
plotly.js is inlined, or shared in a results tree (:mod:`selection.plotly_js`): it opens offline.

Axes: by default gap (percentage points, lower is fairer) horizontally, U(S) (accuracy %)
vertically — max-min sweeps are drawn in (worst, U), the plane they optimize; one colour and
one open marker symbol per method, so points of several methods that coincide stay visible
as nested rings; hovering a point shows its parameter, objectives, per-domain utilities and
the selected client ids, and a table under the plot lists every point with its parameter.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from selection.front_plot import (
    AXIS_LABELS,
    PLOT_COLUMNS,
    axis_title,
    compare_plot_data,
    front_figure,
    front_plot_data,
    label_points,
    param_label,
    realized_axis,
)
from selection.html_page import html_table, page
from selection.plotly_js import plotly_head
from selection.solvers.result import Status, point_rows
from selection.words import counted

__all__ = [
    # the plot data (:mod:`selection.front_plot`), re-exported
    "front_plot_data",
    "compare_plot_data",
    "param_label",
    "PLOT_COLUMNS",
    "render_front_html",
    "render_compare_html",
    "render_rounds_html",
    "COMPARE_TERMS",
]


#: What the columns of the compare table mean (shown on the page under the table).
COMPARE_TERMS = {
    "points": "distinct feasible points the method found",
    "front_points": "how many of them no other point of the same method dominates",
    "on_front": "how many of them lie on the reference front",
    "hv_ratio": "hypervolume of the method's points divided by the reference front's "
    "(objectives normalized by the reference front's extremes; 1 = the whole front)",
    "igd": "inverted generational distance: mean distance from each reference point to the "
    "method's nearest point, in the same normalized units (0 = the whole front)",
    "seconds": "wall time of the method's whole sweep",
    "reference": "exact (enumeration ran) or union (the non-dominated union of all methods)",
}


_CSS = (
    "dt{font-weight:bold;display:inline}dd{display:inline;margin:0 0 0 .4em}dl div{margin:.2em 0}"
)


def _page(title: str, body: str) -> str:
    return page(title, body, css=_CSS, head=plotly_head())


def _points_table(data: pd.DataFrame, columns: list[str]) -> str:
    """The plotted points as an HTML table: method, parameter, objectives, selected ids."""
    data = data[data["method"] != "reference front"]
    shown = pd.DataFrame(
        {
            "method": data["method"].astype(str),
            "parameter": [param_label(v) for v in data["param"]],
            **{c: data[c] for c in columns},
            "selected": data["selected"].astype(str).str.replace(";", ", "),
        }
    )

    def cell(column: str, value, record: dict) -> tuple[str, str]:
        if column in columns:
            return "", f"{float(value):.3f}"
        return (" class='ids'" if column == "selected" else ""), html.escape(value)

    return html_table(shown, cell, scroll=True)


def _plane_note(x: str, y: str) -> str:
    return (
        f"<p class='note'>Plane: {html.escape(AXIS_LABELS.get(y, y))} against "
        f"{html.escape(AXIS_LABELS.get(x, x))}. Hover a point for its per-domain utilities.</p>"
    )


def front_takeaway(data: pd.DataFrame, x: str, y: str) -> str:
    """Two computed sentences: the span of the front and what moving along it costs.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.compare import run_method
        >>> from selection.report import front_plot_data, front_takeaway
        >>> problem = small_problem()
        >>> data = front_plot_data(run_method(problem, "eps"), "gap", "utility")
        >>> print(front_takeaway(data, "gap", "utility"))
        2 distinct points. Best U: 85.00 % (gap 25.00 pp, ε=inf); best gap: 0.00 pp
        (U 75.00 %, ε=22.5). The best-gap point costs 10.00 points of U.
    """
    from selection.objectives import OBJECTIVES

    if data.empty:
        return "No feasible point: nothing to plot."
    unit = {n: (OBJECTIVES[n].unit if n in OBJECTIVES else "") for n in (x, y)}
    up = {n: (OBJECTIVES[n].sense == "max") if n in OBJECTIVES else True for n in (x, y)}
    best_y = data.loc[data[y].idxmax() if up[y] else data[y].idxmin()]
    best_x = data.loc[data[x].idxmax() if up[x] else data[x].idxmin()]
    n = len(data.drop_duplicates(subset=[x, y]))

    short = {"utility": "U"}

    def name(n: str) -> str:
        return short.get(n, n)

    def val(r, n: str) -> str:
        return f"{r[n]:.2f}{(' ' + unit[n]) if unit[n] else ''}"

    def tag(r) -> str:
        label = param_label(r["param"])
        return f", {label}" if label else ""

    if best_y.name == best_x.name or (best_y[x] == best_x[x] and best_y[y] == best_x[y]):
        return (
            f"{n} distinct point(s); one is best on both axes: {name(y)} {val(best_y, y)}, "
            f"{name(x)} {val(best_y, x)}{tag(best_y)}."
        )
    dy = abs(best_y[y] - best_x[y])
    return (
        f"{n} distinct points. Best {name(y)}: {val(best_y, y)} ({name(x)} {val(best_y, x)}"
        f"{tag(best_y)}); best {name(x)}: {val(best_x, x)} ({name(y)} {val(best_x, y)}"
        f"{tag(best_x)}). The best-{name(x)} point costs {dy:.2f} "
        f"{'points' if unit[y] in ('%', 'pp') else unit[y] or 'units'} of {name(y)}."
    )


def certified_note(front: pd.DataFrame, y: str) -> str:
    """What the ``bound`` column of a front with stopped points still guarantees, in words.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.compare import run_method
        >>> from selection.report import certified_note
        >>> problem = small_problem()
        >>> print(certified_note(run_method(problem, "eps"), "utility"))  # every point proven
        Certified: the exact front's utility is at most 0 pp above these points (the bars),
        from each point's proven bound (front.csv: bound).
        >>> certified_note(run_method(problem, "weighted"), "utility")
        'This method proves no bound.'
    """
    from selection.solvers.registry import solvers
    from selection.solvers.sweeps import max_off

    if "bound" not in front or not len(front):
        return ""
    cls = solvers().get(str(front["method"].iloc[0]))
    if cls is None or not cls.bound_objective:
        return "This method proves no bound."
    off = max_off(front, cls.bound_objective)
    if off != off:
        return "A point has no proven bound: the front is not certified."
    bars = " (the bars)" if cls.bound_objective == y else ""
    unit = "" if cls.bound_objective == "sum_Fz" else " pp"
    return (
        f"Certified: the exact front's {cls.bound_objective} is at most {off:.3g}{unit} above "
        f"these points{bars}, from each point's proven bound (front.csv: bound)."
    )


def render_front_html(
    front: pd.DataFrame, title: str = "fedsel front", x: str = "gap", y: str = "utility"
) -> str:
    """Self-contained HTML page plotting a front table (one colour per method), ``y`` vs ``x``,
    every point named by its parameter, with a computed takeaway and a table of its points
    (parameter, objectives, selected ids).

    Examples:
        >>> import re
        >>> from selection.example import small_problem
        >>> from selection.compare import run_method
        >>> from selection.report import render_front_html
        >>> problem = small_problem()
        >>> page = render_front_html(run_method(problem, "eps"), title="round 0")
        >>> page.startswith("<!DOCTYPE html>"), "<title>round 0</title>" in page
        (True, True)
        >>> re.search(r"<p>([0-9]+ feasible points)", page).group(1)
        '2 feasible points'
        >>> page.count("<td class='ids'>")  # the table of points: one row each
        2
    """
    data = front_plot_data(front, x, y)
    fig = front_figure(data, title, x, y)
    labelled = label_points(fig, data, x, y)
    n_bad = int((~point_rows(front)).sum())
    note = f"<p class='takeaway'><b>{html.escape(front_takeaway(data, x, y))}</b></p>"
    note += f"<p>{len(data)} feasible points" + (f", {n_bad} infeasible/failed" if n_bad else "")
    note += " (not plotted)." if n_bad else "."
    note += (
        " Each point is labelled by its parameter (ε: bound on the gap; δ: slack below the best)."
        if labelled
        else (" Hover a point for its parameter." if len(data) else "")
    ) + "</p>"
    status = front["status"].astype(str) if "status" in front else None
    n_tl = 0 if status is None else int((status == str(Status.TIME_LIMIT)).sum())
    if n_tl:
        note += (
            f"<p class='note'>{n_tl} point(s) stopped by the time limit: the best selection "
            "found, not a proven optimum (a complete sweep may miss front points near them)."
            f" {certified_note(front, y)}</p>"
        )
    elif status is not None and (status == str(Status.FEASIBLE)).any():
        # points solved within a tolerance (--tolerance): proven near-optima, with bounds
        note += (
            "<p class='note'>Points solved within a tolerance (status feasible), not to proven "
            f"optimality. {certified_note(front, y)}</p>"
        )
    cols = list(dict.fromkeys(["utility", "gap", "worst", x, y]))
    rx, ry = realized_axis(data, x), realized_axis(data, y)
    if rx is not None and ry is not None:
        cols += [c for c in dict.fromkeys([ry, rx, "realized_worst"]) if c not in cols]
        n_real = int(data[[rx, ry]].notna().all(axis=1).sum())
        gap_y = (data[ry] - data[y]).abs().mean()
        note += (
            f"<p class='note'>Open markers: values predicted by the surrogate. Filled markers "
            f"joined by a dotted line: the same {n_real} selections realized — validation "
            "accuracy of the sample-weighted aggregate w_t + Σ p_i Δ_i, measured by replaying "
            f"the round (--realize). Mean |realized − predicted| on the vertical axis: "
            f"{gap_y:.2f}.</p>"
        )
    return _page(
        title,
        note
        + _plane_note(x, y)
        + fig.to_html(full_html=False, include_plotlyjs=False)
        + "<h2>Points</h2>"
        + _points_table(data, cols),
    )


def render_rounds_html(
    front: pd.DataFrame, title: str = "fedsel sweep over rounds", x: str = "gap", y: str = "utility"
) -> str:
    """One front per round (a ``round`` column) overlaid, coloured from early to late rounds.

    Examples:
        >>> import re
        >>> import pandas as pd
        >>> from selection.compare import run_method
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> from selection.report import render_rounds_html
        >>> stats = example_stats()  # rounds 0, 1, 2
        >>> front = pd.concat(
        ...     run_method(SelectionProblem.from_stats(stats, k=5, round=r), "eps").assign(round=r)
        ...     for r in range(3)
        ... )
        >>> page = render_rounds_html(front)
        >>> re.search(r"<p>([0-9]+ rounds[^)]*[)])", page).group(1)
        '3 rounds, one front each (45 feasible points, 3 infeasible/failed, not plotted)'
    """
    import plotly.graph_objects as go
    from plotly.colors import sample_colorscale

    rounds = sorted(int(r) for r in front["round"].unique())
    fig = go.Figure()
    summary = []
    for j, r in enumerate(rounds):
        part = front_plot_data(front[front["round"] == r], x, y).sort_values(x)
        color = sample_colorscale("Viridis", [j / max(1, len(rounds) - 1) * 0.9])[0]
        fig.add_trace(
            go.Scatter(
                x=part[x],
                y=part[y],
                mode="lines+markers",
                name=f"round {r}",
                text=part["hover"],
                hovertemplate="%{text}<extra></extra>",
                line={"color": color, "shape": "hv", "width": 1.5},
                marker={"color": color, "size": 7},
            )
        )
        summary.append(
            {
                "round": r,
                "points": len(part),
                f"best {y}": part[y].max() if len(part) else np.nan,
                f"{x} range": f"{part[x].min():.3f} .. {part[x].max():.3f}" if len(part) else "",
            }
        )
    fig.update_layout(
        xaxis={"title": axis_title(x)},
        yaxis={"title": axis_title(y)},
        template="plotly_white",
        legend={"title": {"text": "front of"}},
        height=560,
        margin={"t": 30},
    )
    n_bad = int((~point_rows(front)).sum())
    note = (
        f"<p>{counted(len(rounds), 'round')}, one front each ({int(point_rows(front).sum())} feasible points"
        + (f", {n_bad} infeasible/failed, not plotted" if n_bad else "")
        + "). Early rounds dark, late rounds yellow: how the trade-off moves as training goes "
        "on. front.csv holds every point with its round.</p>"
    )
    tbl = pd.DataFrame(summary).to_html(index=False, float_format=lambda v: f"{v:.3f}")
    return _page(
        title,
        note
        + _plane_note(x, y)
        + fig.to_html(full_html=False, include_plotlyjs=False)
        + "<h2>Per round</h2>"
        + tbl,
    )


def compare_takeaway(table: pd.DataFrame, plane: tuple[str, str]) -> str:
    """Computed sentences: who recovers the reference front, who falls short, and which
    formulations optimize another plane (their points lie off this one's front by design).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.compare import compare_methods
        >>> from selection.report import compare_takeaway
        >>> problem = small_problem()
        >>> c = compare_methods(problem, methods=["exhaustive", "maxmin", "fisher-fair"])
        >>> print(compare_takeaway(c.table, ("utility", "gap")))
        Recovering all of the exact front: exhaustive, maxmin; the share of its hypervolume the
        others reach: fisher-fair 0.52. fisher-fair optimizes Σ F_z (under a worst floor), not
        U: its points lie below this front by design.
    """
    from selection.solvers.registry import solvers

    if table.empty:
        return "No method ran."
    registry = solvers()
    if "hv_ratio" not in table:
        return f"{len(table)} methods compared."
    whole = table[table["hv_ratio"] >= 1 - 1e-9]["method"].tolist()
    parts = []
    exact = "reference" in table and (table["reference"] == "exact").all()
    ref = "the exact front" if exact else "the reference front"
    parts.append(f"Recovering all of {ref}: {', '.join(whole) or 'none'}")
    rest = table[table["hv_ratio"] < 1 - 1e-9].sort_values("hv_ratio", ascending=False)
    if len(rest):
        parts.append(
            "the share of its hypervolume the others reach: "
            + ", ".join(f"{r.method} {r.hv_ratio:.2f}" for r in rest.itertuples())
        )
    text = "; ".join(parts) + "."
    off = [  # formulations maximizing another objective, not merely another axis
        (m, registry[m].plane)
        for m in table["method"]
        if m in registry and not registry[m].any_objectives and registry[m].plane[0] != plane[0]
    ]
    if off:
        text += " " + " ".join(
            f"{m} optimizes {_SYMBOL.get(p[0], p[0])} (under a {_SYMBOL.get(p[1], p[1])} "
            f"floor), not {_SYMBOL.get(plane[0], plane[0])}: its points lie below this front "
            "by design."
            for m, p in off
        )
    return text


_SYMBOL = {"utility": "U", "sum_Fz": "Σ F_z", "sum_B": "Σ B", "sum_cos": "Σ cos_g"}


def render_compare_html(
    table: pd.DataFrame,
    fronts: pd.DataFrame,
    reference: pd.DataFrame,
    title: str = "fedsel compare",
    objectives: tuple[str, str] = ("utility", "gap"),
) -> str:
    """Self-contained HTML page: the indicator table with what its columns mean, and every
    method's front overlaid on the reference front in the plane of ``objectives`` (y, x).

    Examples:
        >>> import re
        >>> from selection.example import small_problem
        >>> from selection.compare import compare_methods
        >>> from selection.report import render_compare_html
        >>> problem = small_problem()
        >>> c = compare_methods(problem, methods=["exhaustive", "fisher-fair"])
        >>> page = render_compare_html(c.table, c.fronts, c.reference, title="round 0")
        >>> re.search(r"<p class='takeaway'><b>([^;]*)", page).group(1)
        'Recovering all of the exact front: exhaustive'
        >>> re.findall(r"<td>([0-9][.][0-9]{4})</td>", page)  # hv_ratio, igd of each method
        ['1.0000', '0.0000', '0.5238', '0.7071']
    """
    y, x = objectives[0], objectives[1]
    data = compare_plot_data(fronts, reference, x=x, y=y)
    fig = front_figure(data, title, x, y)
    fmt = {"hv_ratio": "{:.4f}".format, "igd": "{:.4f}".format, "seconds": "{:.3f}".format}
    tbl = table.to_html(index=False, formatters=fmt, escape=True)
    terms = "".join(
        f"<div><dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd></div>"
        for k, v in COMPARE_TERMS.items()
        if k in table.columns
    )
    legend = (
        "<p class='note'>Markers are open and the first methods drawn largest, so a point "
        "found by several methods shows as nested rings; the dotted line is the reference "
        "front.</p>"
    )
    return _page(
        title,
        f"<p class='takeaway'><b>{html.escape(compare_takeaway(table, (y, x)))}</b></p>"
        + tbl
        + f"<dl class='note'>{terms}</dl>"
        + _plane_note(x, y)
        + legend
        + fig.to_html(full_html=False, include_plotlyjs=False),
    )
