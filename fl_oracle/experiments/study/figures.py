"""The study report's figures, as plotly figure dicts (data and layout) the page embeds.

:func:`family` groups entries (a formulation's swept parameters share a colour and a line),
:func:`family_colors` gives each family its colour; the figures: the realized (average,
worst-domain) plane with labels placed without overlaps, the forest of paired differences, the
curves over rounds and the exact predicted fronts of the reference run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fl_oracle.experiments.study.settings import StudySettings
from fl_oracle.experiments.study.stats import METRICS
from selection.html_page import long_palette, palette_colors
from selection.selectors import Spec
from selection.words import signed

if TYPE_CHECKING:
    from fl_oracle.experiments.study.assembly import StudyResult

__all__ = [
    "family",
    "family_colors",
    "plane_figure",
    "forest_figure",
    "curves_figure",
    "fronts_figure",
]


def family(spec: Spec) -> str:
    """The formulation an entry belongs to: ``eps:5@stale`` -> ``eps@stale``; a baseline rule
    and ``all``: the entry itself (canonical)."""
    if spec.is_rule:
        return spec.canonical
    return spec.name + ("@" + "+".join(spec.modifiers) if spec.modifiers else "")


def _param(spec: Spec) -> str:
    from selection.solvers.registry import solvers

    name, arg = spec.name, spec.arg
    cls = solvers().get(name)
    sym = (cls.symbol if cls is not None else None) or name  # as the solver declares it
    return f"{sym}={arg}" if arg else name


def family_colors(settings: StudySettings) -> dict[str, str]:
    """One colour per formulation family (baselines each their own), distinct for up to 34
    families (:func:`selection.html_page.long_palette`)."""
    fams = dict.fromkeys(family(e.spec) for e in settings.entries)
    return palette_colors(fams, long_palette())


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


def plane_figure(res: StudyResult, zoom: bool = False) -> dict:
    """Realized (final average, final worst) plane: seeds faint, means with 95 % intervals,
    each formulation's swept points joined in parameter order and labelled by parameter
    (annotations placed so that no two labels overlap). ``zoom``: the axes fitted to the
    leading half of the entries (mean final worst at least the median), every mean inside
    labelled."""
    colors = family_colors(res.settings)
    traces = []
    m = res.metrics
    fam_of = {e.text: family(e.spec) for e in res.settings.entries}
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
        rule = all(res.settings.spec(e).is_rule for e in entries)  # a baseline's diamond
        traces.append(
            {
                "type": "scatter", "mode": "lines+markers" if len(xs) > 1 else "markers",
                "x": xs, "y": ys, "name": fam if len(entries) > 1 else entries[0],
                "legendgroup": fam, "text": labels, "_half": (ex, ey),  # bars: cut to the axes
                "hovertemplate": "%{text}<br>avg %{x:.2f} %, worst %{y:.2f} %%{customdata}"
                                 "<extra></extra>",
                "marker": {"color": colors[fam], "size": 9,
                           "symbol": [_SYMBOLS[i % len(_SYMBOLS)] for i in range(len(xs))]
                           if len(xs) > 1 else ("diamond" if rule else "circle")},
                "line": {"color": colors[fam], "width": 1.5},
            }
        )  # fmt: skip

    def pad(v: list[float]) -> tuple[float, float]:  # 4 % margins, within 0..100 %
        span = max(v) - min(v) or 1
        return _on_scale(min(v) - 0.04 * span, max(v) + 0.04 * span)

    # the axes hold every seed's point and every mean's interval (2 seeds: wide t intervals),
    # within the accuracy scale [0, 100]: a bar reaching past it is cut at the axis
    xs_all += [q[0] + s * q[2] for q in means for s in (-1, 1)]
    ys_all += [q[1] + s * q[3] for q in means for s in (-1, 1)]
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
    for t in traces:
        if "_half" in t:
            _cut_bars(t, xr, yr)
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


def _on_scale(lo: float, hi: float) -> tuple[float, float]:
    """An accuracy axis' range kept within [0, 100] (%)."""
    return max(lo, 0.0), min(hi, 100.0)


def _cut_bars(trace: dict, xr: tuple[float, float], yr: tuple[float, float]) -> None:
    """A means trace's 95 % interval bars drawn only within the axes ``xr``, ``yr`` (a bar
    that reaches past one stops at it), each interval given in full on hover, with a note
    where its bar is cut."""
    ex, ey = trace.pop("_half")
    notes, bars = [], {}
    for axis, centres, halves, (lo, hi) in (("x", trace["x"], ex, xr), ("y", trace["y"], ey, yr)):
        shown = [(c, h if lo <= c <= hi else 0.0) for c, h in zip(centres, halves, strict=True)]
        up = [min(c + h, hi) - c for c, h in shown]  # a mean off the axes (zoomed): no bar
        down = [c - max(c - h, lo) for c, h in shown]
        bars[axis] = {"type": "data", "symmetric": False, "array": up, "arrayminus": down,
                      "thickness": 1, "width": 0}  # fmt: skip
        notes.append([(c - h, c + h, c - h < lo or c + h > hi)
                      for c, h in zip(centres, halves, strict=True)])  # fmt: skip
    trace["error_x"], trace["error_y"] = bars["x"], bars["y"]
    trace["customdata"] = [
        f"<br>95 %: avg [{ax:.1f}, {bx:.1f}], worst [{ay:.1f}, {by:.1f}]"
        + (" (bar cut at the axis)" if cx or cy else "")
        for (ax, bx, cx), (ay, by, cy) in zip(*notes, strict=True)
    ]


def forest_figure(res: StudyResult, metric: str) -> dict:
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
        "hovertext": [f"{r.entry}: {signed(r.diff)} [{signed(r.ci_lo)}, {signed(r.ci_hi)}], p_holm={r.p_holm:.3g}"
                      for r in sub.itertuples()], "hoverinfo": "text",
    }  # fmt: skip
    layout = {
        "xaxis": {"title": {"text": f"{METRICS[metric][0]}: entry − {res.settings.reference}"},
                  "zeroline": True, "zerolinewidth": 2},
        "yaxis": {"automargin": True}, "height": 140 + 24 * max(len(sub), 1),
        "margin": {"t": 10}, "showlegend": False,
    }  # fmt: skip
    return {"data": [trace], "layout": layout}


def curves_figure(res: StudyResult, column: str, title: str) -> dict:
    colors = family_colors(res.settings)
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
             "y": (mean + half).clip(upper=100.0).tolist()
                  + (mean - half).clip(lower=0.0).tolist()[::-1],  # accuracy: 0..100 %
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


def fronts_figure(res: StudyResult) -> dict:
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
