"""The data and the figure of a front page: plottable rows, then one plotly figure.

:func:`front_plot_data` / :func:`compare_plot_data` compute the rows a page plots (DataFrames
tests can compare: feasible points, the hover text naming the selection, the reference front);
:func:`front_figure` draws them, one colour and one open marker symbol per method (so points of
several methods that coincide stay visible as nested rings), a bar up to the proven bound where
a point stopped at its time limit, realized values beside predicted ones, and
:func:`label_points` names every point by its parameter without overlaps. The pages around
them: :mod:`selection.report`.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from selection.html_page import PALETTE, palette_colors
from selection.objectives import OBJECTIVES
from selection.solvers.result import Status, point_rows

__all__ = [
    "PLOT_COLUMNS",
    "AXIS_LABELS",
    "axis_title",
    "param_label",
    "front_plot_data",
    "compare_plot_data",
    "bound_gaps",
    "realized_axis",
    "front_figure",
    "label_points",
]

PLOT_COLUMNS = ("method", "param", "utility", "gap", "worst", "selected", "hover")
AXIS_LABELS = {name: o.axis or o.label for name, o in OBJECTIVES.items()}  # from the table
_PALETTE = PALETTE[:7]  # one colour per method, as many as open marker symbols
# open symbols, largest first: coinciding points of several methods show as nested rings
_SYMBOLS = ("circle-open", "square-open", "diamond-open", "triangle-up-open", "cross-thin-open",
            "x-thin-open", "star-open")  # fmt: skip


def param_label(param: str) -> str:
    """``eps=24.499999`` -> ``ε=24.5``, ``delta=2`` -> ``δ=2``; other text unchanged."""
    text = str(param)
    name, sep, value = text.partition("=")
    if not sep:
        return text
    try:
        v = float(value)
    except ValueError:
        return text
    from selection.solvers.registry import param_symbols

    return f"{param_symbols().get(name, name)}={format(v, '.5g')}"


def axis_title(name: str) -> dict:
    return {"text": AXIS_LABELS.get(name, name)}


def _hover(row: pd.Series, dcols: list[str], extra: list[str]) -> str:
    e = html.escape
    head = f"<b>{e(str(row['method']))}</b> {e(str(row['param']))}".rstrip()
    lines = [
        head,
        f"U = {row['utility']:.3f} %, gap = {row['gap']:.3f} pp, worst = {row['worst']:.3f} %",
        ", ".join(f"{e(c)} = {row[c]:.2f}" for c in dcols),
    ]
    if str(row.get("status", Status.OPTIMAL)) == Status.TIME_LIMIT:
        lines.append("<i>stopped by the time limit: best found, not proven optimal</i>")
        b = row.get("bound", float("nan"))
        if b == b:
            lines.append(f"<i>proven bound on its first objective: {float(b):.4f}</i>")
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
    real = [c for c in front.columns if c.startswith("realized_")]
    bound = ["bound"] if "bound" in ok.columns and "bound" not in PLOT_COLUMNS else []
    return ok[[*PLOT_COLUMNS, *dcols, *extra, *real, *bound]].reset_index(drop=True)


def bound_gaps(part: pd.DataFrame, y: str) -> np.ndarray | None:
    """Per point, how far above its ``y`` the exact optimum may lie (its proven ``bound``
    minus its value), where the method's bound is on ``y``; None when nothing to draw."""
    from selection.solvers.registry import solvers

    if "bound" not in part or not len(part):
        return None
    cls = solvers().get(str(part["method"].iloc[0]))
    if cls is None or cls.bound_objective != y:
        return None
    up = (part["bound"].astype(float) - part[y].astype(float)).to_numpy()
    up = np.where(np.isfinite(up) & (up > 1e-9), up, 0.0)
    return up if (up > 0).any() else None


def realized_axis(data: pd.DataFrame, axis: str) -> str | None:
    """The column holding the realized value of objective ``axis`` (the objective itself when
    it does not read U_d(S), e.g. Σ B), or None when the table has no realized values."""
    if not any(c.startswith("realized_") for c in data.columns):
        return None
    col = f"realized_{axis}"
    return col if col in data.columns else axis


def compare_plot_data(
    fronts: pd.DataFrame, reference: pd.DataFrame, x: str = "gap", y: str = "utility"
) -> pd.DataFrame:
    """Rows of every method plus the reference front (method ``reference front``), whose
    columns are the objectives ``y`` and ``x``."""
    data = front_plot_data(fronts, x, y)
    ref = reference[list(dict.fromkeys([y, x]))].copy()
    ref["method"] = "reference front"
    ref["param"] = ""
    ref["selected"] = ""
    ref["hover"] = [
        f"<b>reference front</b><br>{html.escape(y)} = {a:.3f}, {html.escape(x)} = {b:.3f}"
        for a, b in zip(ref[y], ref[x], strict=True)
    ]
    ref = ref.sort_values(x)
    return pd.concat([ref, data], ignore_index=True)[list(data.columns)]


def front_figure(data: pd.DataFrame, title: str = "", x: str = "gap", y: str = "utility"):
    """The front figure; ``title`` is not drawn (the page's heading carries it)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    methods = list(dict.fromkeys(data["method"]))
    n = len([m for m in methods if m != "reference front"])
    i = 0
    for m in methods:
        part = data[data["method"] == m]
        if m == "reference front":
            fig.add_trace(
                go.Scatter(
                    x=part[x],
                    y=part[y],
                    mode="lines",
                    name=m,
                    text=part["hover"],
                    hovertemplate="%{text}<extra></extra>",
                    line={"color": "#888888", "dash": "dot", "shape": "hv"},
                )
            )
            continue
        color = _PALETTE[i % len(_PALETTE)]
        up = bound_gaps(part, y)
        # a point stopped by its time limit: a bar up to its proven bound, within which the
        # exact optimum must lie
        bars = (
            {"type": "data", "symmetric": False, "array": up, "arrayminus": 0 * up,
             "color": color, "thickness": 1.5, "width": 6}
            if up is not None
            else None
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(
                x=part[x],
                y=part[y],
                mode="markers",
                name=m,
                text=part["hover"],
                hovertemplate="%{text}<extra></extra>",
                error_y=bars,
                marker={
                    "color": color,
                    "symbol": _SYMBOLS[i % len(_SYMBOLS)],
                    # the first methods largest: equal points of later methods sit inside
                    "size": 8 + 4 * (n - 1 - i) if n > 1 else 10,
                    "line": {"width": 2, "color": color},
                },
            )
        )
        rx, ry = realized_axis(part, x), realized_axis(part, y)
        if rx is not None and ry is not None:
            _add_realized(fig, part, x, y, rx, ry, m, color)
        i += 1
    fig.update_layout(
        xaxis={"title": axis_title(x)},
        yaxis={"title": axis_title(y)},
        template="plotly_white",
        legend={"title": {"text": "method"}},
        height=560,
        margin={"t": 30},
    )
    return fig


def _add_realized(fig, part: pd.DataFrame, x: str, y: str, rx: str, ry: str, m: str, color):
    """Filled markers at the realized values, each joined to its predicted point by a
    dotted segment (one trace of segments split by gaps, one of markers)."""
    import plotly.graph_objects as go

    part = part.dropna(subset=[rx, ry])
    if not len(part):
        return
    sx: list = []
    sy: list = []
    for a, b, c, d in zip(part[x], part[y], part[rx], part[ry], strict=True):
        sx += [a, c, None]
        sy += [b, d, None]
    fig.add_trace(
        go.Scatter(
            x=sx,
            y=sy,
            mode="lines",
            line={"color": color, "dash": "dot", "width": 1},
            hoverinfo="skip",
            showlegend=False,
            legendgroup=f"realized {m}",
        )
    )
    text = [
        f"<b>{html.escape(m)}</b> {html.escape(str(p))}, realized<br>"
        f"{html.escape(y)} = {b:.3f} (predicted {a:.3f})<br>"
        f"{html.escape(x)} = {d:.3f} (predicted {c:.3f})"
        for p, a, b, c, d in zip(part["param"], part[y], part[ry], part[x], part[rx], strict=True)
    ]
    fig.add_trace(
        go.Scatter(
            x=part[rx],
            y=part[ry],
            mode="markers",
            name=f"{m}, realized",
            legendgroup=f"realized {m}",
            text=text,
            hovertemplate="%{text}<extra></extra>",
            marker={"color": color, "symbol": "circle", "size": 7},
        )
    )


_FRONT_W, _FRONT_H = 1100, 560
_FRONT_M = {"l": 80, "r": 230, "t": 30, "b": 70, "autoexpand": False}
_MAX_LABELS = 40


def label_points(fig, data: pd.DataFrame, x: str, y: str) -> bool:
    """Name every point by its parameter (ε=…, δ=…) with labels that overlap nothing, on a
    figure of fixed size; False (no labels) for more than ``_MAX_LABELS`` points."""
    from selection.labels import place_labels

    if data.empty or len(data) > _MAX_LABELS:
        return False
    rx, ry = realized_axis(data, x), realized_axis(data, y)
    xs = [data[x]] + ([data[rx]] if rx else [])
    ys = [data[y]] + ([data[ry]] if ry else [])
    lo_x, hi_x = min(float(v.min()) for v in xs), max(float(v.max()) for v in xs)
    lo_y, hi_y = min(float(v.min()) for v in ys), max(float(v.max()) for v in ys)
    pad_x = 0.08 * (hi_x - lo_x) or 1.0
    pad_y = 0.08 * (hi_y - lo_y) or 1.0
    xr, yr = (lo_x - pad_x, hi_x + pad_x), (lo_y - pad_y, hi_y + pad_y)
    methods = list(dict.fromkeys(data["method"]))
    colors = palette_colors(methods, _PALETTE)
    seen: set[tuple[float, float]] = set()
    points = []
    for r in data.to_dict("records"):
        text = param_label(r["param"])
        at = (round(float(r[x]), 9), round(float(r[y]), 9))
        if not text or at in seen:  # one label per distinct point (ties share their point)
            continue
        seen.add(at)
        points.append((float(r[x]), float(r[y]), text, colors[r["method"]]))
    plot_w = _FRONT_W - _FRONT_M["l"] - _FRONT_M["r"]
    plot_h = _FRONT_H - _FRONT_M["t"] - _FRONT_M["b"]
    fig.update_layout(
        width=_FRONT_W,
        height=_FRONT_H,
        margin=dict(_FRONT_M),
        xaxis={"range": list(xr), "autorange": False},
        yaxis={"range": list(yr), "autorange": False},
        annotations=place_labels(points, xr, yr, plot_w, plot_h),
    )
    return True
