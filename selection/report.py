"""Plotly reports of fronts: ``front.html`` (one sweep) and ``compare.html`` (all methods).

Plot data is computed by :func:`front_plot_data` / :func:`compare_plot_data` (DataFrames tests
can compare) and drawn by :func:`render_front_html` / :func:`render_compare_html`. The HTML is
self-contained: plotly.js is embedded (``include_plotlyjs=True``), so it opens offline.

Axes: gap (percentage points, lower is fairer) horizontally, U(S) (accuracy %) vertically; one
colour per method; hovering a point shows its parameter, objectives, per-domain utilities and
the selected client ids.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from selection.solvers.base import point_rows

__all__ = [
    "front_plot_data",
    "compare_plot_data",
    "render_front_html",
    "render_compare_html",
    "PLOT_COLUMNS",
]

PLOT_COLUMNS = ("method", "param", "utility", "gap", "worst", "selected", "hover")
AXIS_LABELS = {
    "utility": "U(S) (accuracy %, higher is better)",
    "gap": "gap(S) = max_d U_d − min_d U_d (percentage points, lower is fairer)",
    "worst": "worst(S) = min_d U_d (accuracy %, higher is better)",
    "mean_minus_worst": "mean_d U_d − min_d U_d (percentage points, lower is better)",
    "var_d": "Var_d U_d(S) (%², lower is better)",
    "sum_B": "Σ B (nats)",
    "sum_Fz": "Σ F_z (Fisher z-scores)",
    "sum_cos": "Σ cos_g",
}
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")


def _hover(row: pd.Series, dcols: list[str], extra: list[str]) -> str:
    e = html.escape
    head = f"<b>{e(str(row['method']))}</b> {e(str(row['param']))}".rstrip()
    lines = [
        head,
        f"U = {row['utility']:.3f} %, gap = {row['gap']:.3f} pp, worst = {row['worst']:.3f} %",
        ", ".join(f"{e(c)} = {row[c]:.2f}" for c in dcols),
    ]
    if extra:
        lines.append(", ".join(f"{e(c)} = {row[c]:.4g}" for c in extra))
    lines.append("selected: " + e(str(row["selected"]).replace(";", ", ")))
    return "<br>".join(lines)


def front_plot_data(front: pd.DataFrame, x: str = "gap", y: str = "utility") -> pd.DataFrame:
    """Plottable rows of a front table: feasible points only, sorted by method then ``x``.

    Args:
        front: a front table (``method, param, utility, gap, worst, selected, status``,
            ``U_<domain>`` ...).
        x, y: the objective columns on the horizontal and vertical axes.

    Returns:
        DataFrame with :data:`PLOT_COLUMNS`, the ``U_<domain>`` columns and ``x``/``y`` when
        they are other objectives; ``hover`` is the tooltip text (HTML) naming the selected ids,
        the objectives and the per-domain utilities.
    """
    for axis in (x, y):
        if axis not in front.columns:
            raise ValueError(f"front table has no column {axis!r} to plot")
    dcols = [c for c in front.columns if c.startswith("U_")]
    extra = [c for c in dict.fromkeys((x, y)) if c not in PLOT_COLUMNS]
    ok = front[point_rows(front)].copy()
    ok = ok.dropna(subset=["utility", "gap", x, y])
    ok["param"] = ok["param"].fillna("").astype(str)
    ok["hover"] = [_hover(r, dcols, extra) for _, r in ok.iterrows()]
    order = {m: i for i, m in enumerate(dict.fromkeys(ok["method"]))}
    ok = ok.assign(_m=ok["method"].map(order)).sort_values(["_m", x, y])
    return ok[[*PLOT_COLUMNS, *dcols, *extra]].reset_index(drop=True)


def compare_plot_data(fronts: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Rows of every method plus the reference front (method ``reference front``)."""
    data = front_plot_data(fronts)
    ref = reference[["utility", "gap"]].copy()
    ref["method"] = "reference front"
    ref["param"] = ""
    ref["worst"] = np.nan
    ref["selected"] = ""
    ref["hover"] = [
        f"<b>reference front</b><br>U = {u:.3f} %, gap = {g:.3f} pp"
        for u, g in zip(ref["utility"], ref["gap"], strict=True)
    ]
    ref = ref.sort_values("gap")
    return pd.concat([ref, data], ignore_index=True)[list(data.columns)]


def _figure(data: pd.DataFrame, title: str, x: str = "gap", y: str = "utility"):
    import plotly.graph_objects as go

    fig = go.Figure()
    methods = list(dict.fromkeys(data["method"]))
    for i, m in enumerate(methods):
        part = data[data["method"] == m]
        is_ref = m == "reference front"
        fig.add_trace(
            go.Scatter(
                x=part[x],
                y=part[y],
                mode="lines" if is_ref else "markers",
                name=m,
                text=part["hover"],
                hovertemplate="%{text}<extra></extra>",
                line={"color": "#888888", "dash": "dot", "shape": "hv"} if is_ref else None,
                marker=None
                if is_ref
                else {
                    "color": _PALETTE[i % len(_PALETTE)],
                    "size": max(6, 16 - 2 * i),
                    "opacity": 0.85,
                    "line": {"width": 1, "color": "white"},
                },
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title=AXIS_LABELS.get(x, x),
        yaxis_title=AXIS_LABELS.get(y, y),
        template="plotly_white",
        legend_title="method",
        height=620,
    )
    return fig


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>"
    )


def render_front_html(
    front: pd.DataFrame, title: str = "fedsel front", x: str = "gap", y: str = "utility"
) -> str:
    """Self-contained HTML page plotting a front table (one colour per method), ``y`` vs ``x``."""
    data = front_plot_data(front, x, y)
    fig = _figure(data, title, x, y)
    n_bad = int((~point_rows(front)).sum())
    note = f"<p>{len(data)} feasible points" + (f", {n_bad} infeasible/failed" if n_bad else "")
    note += " (not plotted).</p>" if n_bad else ".</p>"
    return _page(title, note + fig.to_html(full_html=False, include_plotlyjs=True))


def render_compare_html(
    table: pd.DataFrame,
    fronts: pd.DataFrame,
    reference: pd.DataFrame,
    title: str = "fedsel compare",
) -> str:
    """Self-contained HTML page: every method's front overlaid and the indicator table."""
    data = compare_plot_data(fronts, reference)
    fig = _figure(data, title)
    fmt = {"hv_ratio": "{:.4f}".format, "igd": "{:.4f}".format, "seconds": "{:.3f}".format}
    tbl = table.to_html(index=False, formatters=fmt, escape=True)
    return _page(title, tbl + fig.to_html(full_html=False, include_plotlyjs=True))
