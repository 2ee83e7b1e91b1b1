"""Rendering of the demo report: the data of :func:`fl_oracle.experiments.demo.report.report_data` -> HTML.

One self-contained page: plotly.js is embedded once (the first figure), the others reuse it.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from selection.analysis_report import scatter_figure
from selection.html_page import html_table, page, palette_colors, plotly_palette
from selection.plotly_js import plotly_head
from selection.words import counted, signed

__all__ = ["render_html"]

# the demo page's own rules, after the shared ones of selection.html_page
_CSS = (
    "body{max-width:1150px;margin:2em auto}td.best{font-weight:bold;background:#e4f4e4}"
    "td.ids{white-space:normal;min-width:16em;font-size:.85em}"
    ".caveat{background:#fff7e0;padding:.4em .8em}"
)
_LABELS = {
    "avg_mean": "avg %",
    "worst_mean": "worst %",
    "gap_mean": "gap pp",
    "std_mean": "std over domains pp",
    "solve_seconds_mean": "solve ms/round",
}
# accuracy columns are marked best; solve time is reported, not ranked (a selector that
# solves nothing is trivially fastest)
_MARKED = ("avg_mean", "worst_mean", "gap_mean", "std_mean")


def _colors(names: list[str]) -> dict[str, str]:
    return palette_colors(names, plotly_palette())


def _table(
    df: pd.DataFrame,
    best: dict[str, list[str]] | None = None,
    key: str = "",
    ids: tuple[str, ...] = (),
) -> str:
    """An HTML table; ``best`` marks cells, ``ids`` columns hold ';'-joined client ids (shown
    comma-separated on one line)."""

    def cell(c: str, v, rec: dict) -> tuple[str, str]:
        cls = ' class="best"' if best and c in best and rec.get(key) in best[c] else ""
        if c in ids:
            cls, v = ' class="ids"', str(v).replace(";", ", ")
        return cls, f"{v:.3f}" if isinstance(v, float) else html.escape(str(v))

    return html_table(df, cell, scroll=True)


def front_rows(fronts: pd.DataFrame) -> pd.DataFrame:
    """The fronts for display: parameters as ``ε=24.5``, and one row per distinct selection
    of a method (parameters giving the same selection are listed together)."""
    from selection.report import param_label

    if fronts.empty:
        return fronts
    df = fronts.copy()
    df["param"] = df["param"].fillna("").astype(str).map(param_label)
    keys = ["method", "selected"]
    if "round" in df.columns:
        keys.insert(0, "round")
    first = df.drop_duplicates(keys).set_index(keys)
    params = df.groupby(keys, sort=False)["param"].agg(lambda p: ", ".join(dict.fromkeys(p)))
    first["param"] = params
    return first.reset_index()[list(df.columns)]


def _final_table(data: dict) -> str:
    s = data["final_table"]
    df = pd.DataFrame({"selector": s["selector"]})
    for col, label in _LABELS.items():
        std = s[col.replace("_mean", "_std")]
        df[label] = [
            f"{1000 * m:.2f} ± {1000 * d:.2f}" if "seconds" in col else f"{m:.2f} ± {d:.2f}"
            for m, d in zip(s[col], std, strict=True)
        ]
    df["fallback rounds"] = s["fallback_rounds"].astype(int)
    best = {_LABELS[col]: data["best"][col] for col in _MARKED}
    return _table(df, best, "selector")


def _fig_curves(data: dict, colors: dict) -> go.Figure:
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("average accuracy over domains", "worst-domain accuracy")
    )
    for spec, entry in data["selectors"].items():
        c = entry["curve"]
        for col, which in ((1, "avg"), (2, "worst")):
            fig.add_trace(
                go.Scatter(
                    x=c["round"] + 1,
                    y=c[f"{which}_mean"],
                    name=spec,
                    legendgroup=spec,
                    showlegend=col == 1,
                    line={"color": colors[spec]},
                    error_y={"type": "data", "array": c[f"{which}_std"], "visible": True},
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="rounds committed")
    fig.update_yaxes(title_text="test accuracy % (mean ± std over seeds)")
    fig.update_layout(height=430)
    return fig


def _fig_plane(data: dict, colors: dict) -> go.Figure:
    """Means as large markers (stars: not dominated) with thin ±std bars, each seed's run as a
    faint dot; selectors are named in the legend and on hover, not on the plot, so labels of
    nearby selectors cannot overlap."""
    from plotly.colors import hex_to_rgb

    p, s = data["plane"], data["final_table"]
    seeds = data.get("final_seeds")
    fig = go.Figure()
    for rec, srec in zip(p.to_dict("records"), s.to_dict("records"), strict=True):
        name, color = rec["selector"], colors[rec["selector"]]
        faint = "rgba({},{},{},0.45)".format(*hex_to_rgb(color)) if color.startswith("#") else color
        if seeds is not None and len(seeds):
            part = seeds[seeds["selector"] == name]
            fig.add_trace(
                go.Scatter(
                    x=part["acc_avg"],
                    y=part["acc_worst"],
                    mode="markers",
                    name=name,
                    legendgroup=name,
                    showlegend=False,
                    marker={"size": 6, "color": faint},
                    text=[f"{name}, seed {int(v)}" for v in part["seed"]],
                    hovertemplate="%{text}<br>avg %{x:.2f} %, worst %{y:.2f} %<extra></extra>",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=[rec["avg"]],
                y=[rec["worst"]],
                mode="markers",
                name=name,
                legendgroup=name,
                marker={
                    "size": 15 if rec["nondominated"] else 10,
                    "color": color,
                    "symbol": "star" if rec["nondominated"] else "circle",
                    "line": {"width": 1, "color": "white"},
                },
                error_x={"type": "data", "array": [srec["avg_std"]], "thickness": 1,
                         "width": 0, "color": faint},
                error_y={"type": "data", "array": [srec["worst_std"]], "thickness": 1,
                         "width": 0, "color": faint},
                text=[
                    f"<b>{html.escape(name)}</b> (mean over seeds)<br>dominates: "
                    f"{rec['dominates'] or '-'}<br>dominated by: {rec['dominated_by'] or '-'}"
                ],
                hovertemplate="%{text}<br>avg %{x:.2f} %, worst %{y:.2f} %<extra></extra>",
            )
        )  # fmt: skip
    fig.update_layout(
        height=520,
        xaxis={"title": {"text": "final average accuracy % (mean over seeds ± std)"}},
        yaxis={"title": {"text": "final worst-domain accuracy %"}},
        legend={"title": {"text": "selector"}},
        margin={"t": 20},
    )
    return fig


def _fig_fronts(fronts: pd.DataFrame) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("utility vs gap", "utility vs worst"))
    pal = {"eps": "#1f77b4", "maxmin": "#d62728"}
    for method, part in front_rows(fronts).groupby("method", sort=False):
        col = pal.get(method, "#555")
        hover = (
            part["param"].astype(str) + "<br>" + part["selected"].astype(str).str.replace(";", ", ")
        )
        for c, y in ((1, "gap"), (2, "worst")):
            fig.add_trace(
                go.Scatter(
                    x=part["pred_utility"],
                    y=part[f"pred_{y}"],
                    mode="markers",
                    name=f"{method} predicted",
                    legendgroup=f"{method}p",
                    showlegend=c == 1,
                    marker={"color": col, "symbol": "circle-open", "size": 10},
                    hovertext=hover,
                ),
                1,
                c,
            )
            fig.add_trace(
                go.Scatter(
                    x=part["real_utility"],
                    y=part[f"real_{y}"],
                    mode="markers",
                    name=f"{method} realized",
                    legendgroup=f"{method}r",
                    showlegend=c == 1,
                    marker={"color": col, "size": 8},
                    hovertext=hover,
                ),
                1,
                c,
            )
            xs, ys = [], []
            for r in part.to_dict("records"):
                xs += [r["pred_utility"], r["real_utility"], None]
                ys += [r[f"pred_{y}"], r[f"real_{y}"], None]
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    showlegend=False,
                    line={"color": col, "width": 0.7, "dash": "dot"},
                ),
                1,
                c,
            )
    fig.update_xaxes(title_text="utility % (pooled validation)")
    fig.update_yaxes(title_text="gap pp", row=1, col=1)
    fig.update_yaxes(title_text="worst domain %", row=1, col=2)
    fig.update_layout(height=450)
    return fig


def _fig_scatter(scatter: pd.DataFrame, pooled: dict) -> go.Figure:
    fig = scatter_figure(scatter, pooled)
    fig.update_layout(height=450)
    return fig


def _setup(setup: dict) -> str:
    rows = []
    for d in setup.get("domains", []):
        c = setup.get("clients", {}).get(d, {})
        rows.append(
            {
                "domain": d,
                "source": setup.get("sources", {}).get(d, "unknown"),
                "provenance": setup.get("provenance", {}).get(d, ""),
                "clients": c.get("clients", ""),
                "samples": c.get("samples", ""),
                "samples/client": round(c.get("mean", 0.0), 1) if c else "",
                "FedAvg weight %": round(c.get("weight_pct", 0.0), 1) if c else "",
            }
        )
    skip = ("domains", "sources", "clients", "provenance")
    other = pd.DataFrame(
        [
            {"setting": k, "value": ", ".join(map(str, v)) if isinstance(v, list) else str(v)}
            for k, v in setup.items()
            if k not in skip
        ]
    )
    stand_in = [
        d
        for d in setup.get("domains", [])
        if "generated" in str(setup.get("sources", {}).get(d, ""))
    ]
    note = (
        f"<p><b>Generated stand-ins:</b> {', '.join(stand_in)} — not the real datasets; "
        "numbers on them are not comparable with published Digits-4 results.</p>"
        if stand_in
        else ""
    )
    return note + _table(pd.DataFrame(rows)) + _table(other)


def demo_takeaway(data: dict) -> str:
    """Two computed sentences from the final table: the best final worst-domain and average
    accuracy, each beside the reference (the first selector)."""
    t = data["final_table"]
    if t is None or len(t) == 0:
        return "No finished run."
    ref = t.iloc[0]
    w, a = t.loc[t["worst_mean"].idxmax()], t.loc[t["avg_mean"].idxmax()]

    def who(r, col: str) -> str:
        return f"{r['selector']} ({r[col]:.1f} ± {r[col.replace('_mean', '_std')]:.1f} %" + (
            f", {signed(r[col] - ref[col], 1)} against {ref['selector']})"
            if r["selector"] != ref["selector"]
            else ")"
        )

    return (
        f"Highest final worst-domain accuracy: {who(w, 'worst_mean')}. "
        f"Highest final average accuracy: {who(a, 'avg_mean')}."
    )


def render_html(data: dict) -> str:
    """The whole report as one self-contained HTML string."""
    colors = _colors(list(data["selectors"]))

    def fig_html(fig: go.Figure) -> str:
        return fig.to_html(full_html=False, include_plotlyjs=False)

    ss = data["seed_stats"]
    pooled = pd.DataFrame([ss["pooled"]])
    per = ss["per_round"]
    fronts = data["fronts"]
    cols = [
        c
        for c in (
            "method",
            "param",
            "pred_utility",
            "real_utility",
            "err_utility",
            "pred_gap",
            "real_gap",
            "err_gap",
            "pred_worst",
            "real_worst",
            "err_worst",
            "selected",
        )
        if c in fronts.columns
    ]
    setup = data["setup"]
    parts = [
        "<h1>fedsel demo: client selectors compared in live training</h1>",
        f"<p class='takeaway'>{html.escape(demo_takeaway(data))}</p>",
        f"<p class='caveat'>A showcase, not evidence: {counted(setup.get('seeds'), 'seed')} × "
        f"{counted(setup.get('rounds'), 'round')}, and floating-point differences between machines, "
        "amplified by training, change the ranking. Claims come from a paired study with "
        "intervals (<code>fedsel study</code>).</p>",
        f"<p class='note'>{counted(setup.get('seeds'), 'seed')} × {counted(len(data['selectors']), 'selector')}, "
        f"{counted(setup.get('rounds'), 'round')}, K = {setup.get('k')} of {setup.get('n_clients', '?')} "
        "clients. Values are mean ± std over seeds; the best value per column is marked.</p>",
        "<h2>1. Accuracy per round and final table</h2>",
        fig_html(_fig_curves(data, colors)),
        _final_table(data),
        "<h2>2. Final (average, worst) plane</h2><p class='note'>Large markers: the mean over "
        "seeds, with ±std bars; faint dots: each seed's run. Stars: not dominated by any "
        "other selector (both objectives maximized).</p>",
        fig_html(_fig_plane(data, colors)),
        _table(data["plane"]),
        f"<h2>3. Fronts at round {setup.get('front_round')}: predicted vs realized</h2>",
        "<p class='note'>Open markers: the linear model's prediction; filled: the oracle "
        "aggregating exactly that selection (realized). Error = realized − predicted.</p>",
    ]
    if fronts.empty:
        parts.append("<p>No front points.</p>")
    else:
        parts += [
            fig_html(_fig_fronts(fronts)),
            _table(data["surrogate_error"]),
            "<p class='note'>One row per distinct selection; parameters that gave the same "
            "selection are listed together.</p>",
            _table(front_rows(fronts)[cols], ids=("selected",)),
        ]
    parts += [
        "<h2>4. The problem statement's statistics</h2><p class='note'>Spearman correlations over the "
        "reference runs' client statistics (the problem statement reports ρ(F,U) = −0.550, ρ(F,U|B) = "
        "−0.547, ρ(F,B) = 0.064).</p>",
        _table(pooled),
        f"<p class='note'>Per round: median ρ(F,U) {per['rho_FU'].median():.3f}, "
        f"ρ(F,U|B) {per['rho_FU_given_B'].median():.3f}, ρ(F,B) {per['rho_FB'].median():.3f} "
        f"over {len(per)} (seed, round) tables. The pooled values mix rounds (F and U both "
        "move as training proceeds); the per-round values are the within-round relation.</p>"
        if len(per)
        else "",
        fig_html(_fig_scatter(ss["scatter"], ss["pooled"])),
        "<h2>5. Set-up</h2>",
        _setup(setup),
    ]
    return page("fedsel demo", "\n".join(parts), css=_CSS, heading="", head=plotly_head())
