"""The seed's correlation analysis of a round-stats table (torch-free).

* Spearman rho(F, U), the partial rank correlation rho(F, U | B) and rho(F, B), per round and
  pooled over every row (the seed reports -0.550, -0.547 and 0.064);
* the per-domain sample-weight table (how much each domain weighs under sample-weighted
  FedAvg versus uniform client weights);
* the seed's figure: log F against U coloured by B (plotly).

Data and rendering are separate: :func:`analyze_stats` computes everything as DataFrames,
:func:`scatter_figure` draws the figure from :func:`scatter_data`, :func:`write_analysis`
writes ``analysis.csv``, ``sample_weights.csv``, ``analysis.json`` and ``analysis.html``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as st

from selection.atomic import write_table_atomic, write_text_atomic
from selection.schema import validate_stats

__all__ = [
    "AnalysisResult",
    "correlations",
    "partial_spearman",
    "sample_weights",
    "scatter_data",
    "scatter_figure",
    "analyze_stats",
    "write_analysis",
]


@dataclass(frozen=True)
class AnalysisResult:
    """Everything ``fedsel analyze`` reports.

    Attributes:
        correlations: one row per round plus a ``pooled`` row: ``round, n, rho_FU, p_FU,
            rho_FU_given_B, rho_FB, p_FB, rho_UB``.
        sample_weights: one row per domain: ``domain, clients, n_samples, weight_samples_pct,
            weight_uniform_pct``.
        scatter: the figure's data (``round, client_id, domain, log_F, U, B``).
    """

    correlations: pd.DataFrame
    sample_weights: pd.DataFrame
    scatter: pd.DataFrame


def partial_spearman(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    """Partial Spearman correlation rho(x, y | z) from the three pairwise rank correlations.

    rho_xy.z = (rho_xy - rho_xz rho_yz) / sqrt((1 - rho_xz^2)(1 - rho_yz^2)); NaN when undefined.
    """
    rxy = st.spearmanr(x, y).statistic
    rxz = st.spearmanr(x, z).statistic
    ryz = st.spearmanr(y, z).statistic
    den = math.sqrt(max((1 - rxz**2) * (1 - ryz**2), 0.0))
    if not np.isfinite([rxy, rxz, ryz]).all() or den < 1e-12:
        return float("nan")
    return float((rxy - rxz * ryz) / den)


def _row(label: str, df: pd.DataFrame) -> dict:
    F, U, B = (df[c].to_numpy(dtype=float) for c in ("F", "U", "B"))
    if len(df) < 3:
        nan = float("nan")
        return {
            "round": label,
            "n": len(df),
            "rho_FU": nan,
            "p_FU": nan,
            "rho_FU_given_B": nan,
            "rho_FB": nan,
            "p_FB": nan,
            "rho_UB": nan,
        }
    fu, fb, ub = st.spearmanr(F, U), st.spearmanr(F, B), st.spearmanr(U, B)
    return {
        "round": label,
        "n": len(df),
        "rho_FU": float(fu.statistic),
        "p_FU": float(fu.pvalue),
        "rho_FU_given_B": partial_spearman(F, U, B),
        "rho_FB": float(fb.statistic),
        "p_FB": float(fb.pvalue),
        "rho_UB": float(ub.statistic),
    }


def correlations(df: pd.DataFrame) -> pd.DataFrame:
    """rho(F,U), rho(F,U|B), rho(F,B) (Spearman) per round and pooled over all rows.

    Rounds with fewer than 3 clients or constant columns give NaN. ``round`` is a string
    column: the round number, or ``pooled``.
    """
    rows = [_row(str(r), g) for r, g in df.groupby("round", sort=True)]
    rows.append(_row("pooled", df))
    return pd.DataFrame(rows)


def sample_weights(df: pd.DataFrame) -> pd.DataFrame:
    """Per-domain weight (%) under sample-weighted aggregation vs uniform client weights.

    Uses each client's last recorded ``n_samples``.
    """
    last = df.drop_duplicates("client_id", keep="last")
    g = (
        last.groupby("domain", sort=False)
        .agg(clients=("client_id", "size"), n_samples=("n_samples", "sum"))
        .reset_index()
    )
    g["weight_samples_pct"] = 100.0 * g["n_samples"] / g["n_samples"].sum()
    g["weight_uniform_pct"] = 100.0 * g["clients"] / g["clients"].sum()
    return g


def scatter_data(df: pd.DataFrame) -> pd.DataFrame:
    """The figure's points: ``round, client_id, domain, log_F`` (natural log), ``U``, ``B``."""
    out = df[["round", "client_id", "domain", "U", "B"]].copy()
    out.insert(3, "log_F", np.log(df["F"].to_numpy(dtype=float)))
    return out.reset_index(drop=True)


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


def analyze_stats(df: pd.DataFrame) -> AnalysisResult:
    """Validate a round-stats table and compute every reported quantity."""
    df = validate_stats(df)
    return AnalysisResult(correlations(df), sample_weights(df), scatter_data(df))


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


def write_analysis(df: pd.DataFrame, out: str | os.PathLike) -> AnalysisResult:
    """Write ``analysis.csv`` (correlations), ``sample_weights.csv``, ``analysis.json`` and
    a self-contained ``analysis.html`` into ``out``; return the :class:`AnalysisResult`."""
    res = analyze_stats(df)
    out = Path(out)
    write_table_atomic(res.correlations, out / "analysis.csv")
    write_table_atomic(res.sample_weights, out / "sample_weights.csv")
    pooled = res.correlations.iloc[-1].to_dict()
    payload = {
        "pooled": _jsonable(res.correlations.iloc[[-1]])[0],
        "per_round": _jsonable(res.correlations.iloc[:-1]),
        "sample_weights": _jsonable(res.sample_weights),
    }
    write_text_atomic(json.dumps(payload, indent=2, allow_nan=False), out / "analysis.json")
    fig = scatter_figure(res.scatter, pooled)
    tables = res.correlations.to_html(
        index=False, float_format=lambda v: f"{v:.3f}"
    ) + res.sample_weights.to_html(index=False, float_format=lambda v: f"{v:.1f}")
    html = fig.to_html(include_plotlyjs=True, full_html=True)
    html = html.replace("</body>", f"<h3>Correlations</h3>{tables}</body>", 1)
    write_text_atomic(html, out / "analysis.html")
    return res
