"""The problem statement's analysis as files: its figures, its page and what ``fedsel analyze`` writes.

:func:`write_analysis` computes everything first (:mod:`selection.analysis`: correlations per
round with bootstrap intervals, the problem statement's numbers beside fedsel's, the pooled value under its
warning, sample weights) and then writes ``per_round.csv``, ``statement.csv``, ``analysis.csv``,
``sample_weights.csv``, ``analysis.json`` and a self-contained ``analysis.html``:
:func:`analysis_takeaway` first, the tables, then the problem statement's figure per measured round
(:func:`faceted_figure`) and pooled (:func:`scatter_figure`).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from selection.analysis import (
    ANALYSED_U,
    POOLED_WARNING,
    SEED,
    AnalysisResult,
    analyze_stats,
    ci_text,
    per_round_correlations,
    seed_table,
)
from selection.atomic import write_table_atomic, write_text_atomic
from selection.plotly_js import write_report
from selection.schema import validate_stats

__all__ = ["analysis_takeaway", "faceted_figure", "scatter_figure", "write_analysis"]


def scatter_figure(points: pd.DataFrame, pooled: dict | None = None):
    """Plotly scatter of log F (x) against U (y), coloured by B (nats)."""
    import plotly.graph_objects as go

    hover = [
        f"{c} ({d}), round {r}"
        for c, d, r in zip(points["client_id"], points["domain"], points["round"], strict=True)
    ]
    fig = go.Figure(
        go.Scatter(
            x=points["log_F"],
            y=points["U"],
            mode="markers",
            text=hover,
            marker={
                "color": points["B"],
                "colorscale": "Viridis",
                "showscale": True,
                "size": 8,
                "colorbar": {"title": "B (nats)"},
            },
            hovertemplate="%{text}<br>log F=%{x:.3f}<br>U=%{y:.2f}%<extra></extra>",
        )
    )
    title = "log F vs U, coloured by B"
    if pooled:
        title += (
            f" — pooled ρ(F,U)={pooled['rho_FU']:.3f}, ρ(F,U|B)="
            f"{pooled['rho_FU_given_B']:.3f}, ρ(F,B)={pooled['rho_FB']:.3f}"
        )
    fig.update_layout(
        title=title,
        xaxis_title="log F (empirical Fisher trace)",
        yaxis_title="U (validation accuracy of w_t + Δ_i, %)",
        template="plotly_white",
    )
    return fig


def faceted_figure(df: pd.DataFrame, reading: str = "U", max_cols: int = 4):
    """The problem statement's figure per measured round: log F (x) against a U reading (y), coloured by B."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rounds = sorted(df["round"].unique())
    cols = min(max_cols, max(1, len(rounds)))
    nrows = math.ceil(len(rounds) / cols)
    fig = make_subplots(
        rows=nrows,
        cols=cols,
        subplot_titles=[f"round {r}" for r in rounds],
        shared_yaxes=False,
        horizontal_spacing=0.06,
        # about 50 px between rows at any number of rows (plotly caps it at 1 / (rows − 1))
        vertical_spacing=min(0.12, 50.0 / (330 * nrows + 80)),
    )
    bmax = float(df["B"].max()) if len(df) else 1.0
    for i, r in enumerate(rounds):
        g = df[df["round"] == r]
        fig.add_trace(
            go.Scatter(
                x=np.log10(g["F"].to_numpy(dtype=float)),
                y=g[reading],
                mode="markers",
                text=[f"{c} ({d})" for c, d in zip(g["client_id"], g["domain"], strict=True)],
                marker={
                    "color": g["B"],
                    "colorscale": "Viridis",
                    "cmin": 0.0,
                    "cmax": bmax,
                    "size": 7,
                    "showscale": i == 0,
                    "colorbar": {"title": "B (nats)"},
                },
                hovertemplate="%{text}<br>log10 F=%{x:.2f}<br>"
                + reading
                + "=%{y:.2f}<extra></extra>",
                showlegend=False,
            ),
            row=i // cols + 1,
            col=i % cols + 1,
        )
    fig.update_xaxes(title_text="log10 F")
    fig.update_yaxes(title_text=f"{reading} (%)")
    fig.update_layout(
        title=f"log F vs {reading} per measured round, coloured by B",
        template="plotly_white",
        height=330 * nrows + 80,
    )
    return fig


def write_analysis(
    df: pd.DataFrame, out: str | os.PathLike, *, n_boot: int = 1000, seed: int = 0
) -> AnalysisResult:
    """Write ``per_round.csv`` (per round and U reading, bootstrap intervals), ``statement.csv``
    (the problem statement's numbers beside fedsel's), ``analysis.csv`` (U only, with the pooled row),
    ``sample_weights.csv``, ``analysis.json`` and a self-contained ``analysis.html`` (per-round
    table first, the pooled value under its warning, the problem statement's figure per round and per U
    reading) into ``out``; return the :class:`AnalysisResult`."""
    res = analyze_stats(df)
    df = validate_stats(df)
    per = per_round_correlations(df, n_boot=n_boot, seed=seed)
    seed_tab = seed_table(per)
    res = AnalysisResult(res.correlations, res.sample_weights, res.scatter, per, seed_tab)
    out = Path(out)
    pooled = res.correlations.iloc[-1].to_dict()
    html = _analysis_html(df, res, pooled)  # everything computed before the first file is written
    payload = {
        "per_round_readings": _jsonable(per),
        "pooled_warning": POOLED_WARNING,
        "pooled": _jsonable(res.correlations.iloc[[-1]])[0],
        "per_round": _jsonable(res.correlations.iloc[:-1]),
        "sample_weights": _jsonable(res.sample_weights),
    }
    text = json.dumps(payload, indent=2, allow_nan=False)
    write_table_atomic(per, out / "per_round.csv")
    write_table_atomic(seed_tab, out / "statement.csv")
    write_table_atomic(res.correlations, out / "analysis.csv")
    write_table_atomic(res.sample_weights, out / "sample_weights.csv")
    write_text_atomic(text, out / "analysis.json")
    write_report(html, out / "analysis.html")
    return res


def _jsonable(df: pd.DataFrame) -> list[dict]:
    recs = df.to_dict("records")
    return [
        {
            k: (
                None
                if isinstance(v, float) and not math.isfinite(v)
                else v.item()
                if isinstance(v, np.generic)
                else v
            )
            for k, v in r.items()
        }
        for r in recs
    ]


def analysis_takeaway(per: pd.DataFrame, reading: str = "U") -> str:
    """Computed sentences: the within-round ρ(F, U) (median over rounds, how many rounds'
    intervals exclude zero, and on which side) beside the problem statement's −0.55 and the pooled value."""
    rows = per[(per["reading"] == reading) & (per["round"] != "pooled")]
    rows = rows[np.isfinite(rows["rho_FU"].to_numpy(dtype=float))]
    if rows.empty:
        return f"No round has enough clients to correlate F with {reading}."
    neg = int((rows["rho_FU_hi"] < 0).sum())
    pos = int((rows["rho_FU_lo"] > 0).sum())
    text = (
        f"Within a round, ρ(F, {reading}) has median {rows['rho_FU'].median():+.2f} over "
        f"{len(rows)} measured round(s) (the problem statement reports {SEED['rho_FU']:+.2f}); its 95 % "
        f"interval lies below zero in {neg} and above zero in {pos} of them."
    )
    pooled = per[(per["reading"] == reading) & (per["round"] == "pooled")]
    if len(pooled) and len(rows) > 1:
        text += (
            f" Pooled over rounds it reads {float(pooled['rho_FU'].iloc[0]):+.2f}, which mixes "
            "stages of training (see the warning below)."
        )
    return text


def _per_round_display(per: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in per[per["round"] != "pooled"].iterrows():
        rows.append(
            {
                "round": r["round"],
                "U reading": r["reading"],
                "n": r["n"],
                "ρ(F,U) [95% CI]": ci_text(r, "rho_FU"),
                "ρ(F,U|B) [95% CI]": ci_text(r, "rho_FU_given_B"),
                "ρ(F,B) [95% CI]": ci_text(r, "rho_FB"),
                "log10 F range": f"{r['logF_min'] / math.log(10):.2f} .. "
                f"{r['logF_max'] / math.log(10):.2f}",
                "median reading": f"{r['U_median']:.1f}",
            }
        )
    return pd.DataFrame(rows)


def _analysis_html(df: pd.DataFrame, res: AnalysisResult, pooled: dict) -> str:
    import html as _h

    per = res.per_round
    assert per is not None and res.seed is not None
    pooled_rows = per[per["round"] == "pooled"]
    pooled_tab = pd.DataFrame(
        [
            {
                "U reading": r["reading"],
                "n": r["n"],
                "ρ(F,U)": ci_text(r, "rho_FU"),
                "ρ(F,U|B)": ci_text(r, "rho_FU_given_B"),
                "ρ(F,B)": ci_text(r, "rho_FB"),
            }
            for _, r in pooled_rows.iterrows()
        ]
    )
    parts = [
        f"<p class='takeaway'><b>{_h.escape(analysis_takeaway(per))}</b></p>",
        "<h2>Per-round Spearman correlations (bootstrap 95 % intervals)</h2>",
        _per_round_display(per).to_html(index=False, escape=True),
        "<h2>The problem statement's numbers beside fedsel's</h2>",
        res.seed.to_html(index=False, escape=True),
        f"<h2>Pooled over rounds</h2><p><b>Warning:</b> {_h.escape(POOLED_WARNING)}.</p>",
        pooled_tab.to_html(index=False, escape=True),
        "<h2>Sample weights per domain</h2>",
        res.sample_weights.to_html(index=False, float_format=lambda v: f"{v:.1f}"),
    ]
    figs = []
    for r in [r for r in ANALYSED_U if r in df.columns]:
        figs.append(faceted_figure(df, r).to_html(full_html=False, include_plotlyjs=False))
    figs.append(
        "<h2>Pooled over rounds: log F vs U, coloured by B</h2><p class='note'>Every "
        "(round, client) of the table in one scatter; read it beside the warning above.</p>"
        + scatter_figure(res.scatter, pooled).to_html(full_html=False, include_plotlyjs=False)
    )
    body = (
        "".join(parts)
        + "<h2>The problem statement's figure per measured round</h2>"
        + "".join(figs)
    )
    from selection.html_page import page
    from selection.plotly_js import plotly_head

    return page(
        "fedsel analyze", body, css="table{margin:.5em 0}td,th{font-size:13px}", head=plotly_head()
    )
