"""The problem statement's correlation analysis of a round-stats table (torch-free).

* Spearman rho(F, U), the partial rank correlation rho(F, U | B) and rho(F, B), per round and
  pooled over every row (the problem statement reports -0.550, -0.547 and 0.064);
* the per-domain sample-weight table (how much each domain weighs under sample-weighted
  FedAvg versus uniform client weights);
* the problem statement's figure's data: log F against U coloured by B (:func:`scatter_data`; drawn with the
  page in :mod:`selection.analysis_report`).

Per round first: :func:`per_round_correlations` gives rho(F,U), rho(F,U|B) and rho(F,B) for
each measured round and each reading of U present in the table (``U``, ``U_own``, ``U_local``,
``dU``; see :mod:`selection.schema`) with bootstrap 95 % intervals (clients resampled with
replacement within the round, percentile intervals). The pooled value mixes training stages
(per-round F and U levels move together as the model trains), so it is reported only beside
:data:`POOLED_WARNING`. :func:`seed_table` sets the problem statement's three numbers beside fedsel's.

Data and rendering are separate modules: :func:`analyze_stats` computes everything as
DataFrames here; :mod:`selection.analysis_report` draws the figures and writes the files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as st

from selection.schema import U_READINGS, validate_stats

__all__ = [
    "POOLED_WARNING",
    "SEED",
    "ANALYSED_U",
    "bootstrap_correlations",
    "per_round_correlations",
    "seed_table",
    "ci_text",
    "AnalysisResult",
    "correlations",
    "partial_spearman",
    "sample_weights",
    "scatter_data",
    "analyze_stats",
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
    per_round: pd.DataFrame | None = None
    seed: pd.DataFrame | None = None


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


def analyze_stats(df: pd.DataFrame) -> AnalysisResult:
    """Validate a round-stats table and compute every reported quantity."""
    df = validate_stats(df)
    return AnalysisResult(correlations(df), sample_weights(df), scatter_data(df))


# ---------------------------------------------------------------------------- per round first

#: The problem statement's numbers (problem statement): Spearman over its clients on real Digits-4.
SEED: dict[str, float] = {"rho_FU": -0.550, "rho_FU_given_B": -0.547, "rho_FB": 0.064}
#: Readings of U, in report order (those present in a table are analysed).
#: the U columns the analysis reads: U, the readings of the contract (U_own, U_local), dU
ANALYSED_U: tuple[str, ...] = ("U", *U_READINGS, "dU")
POOLED_WARNING = (
    "pooled over rounds: mixes training stages (F and U both drift with the round), so it "
    "can differ in sign from every per-round value; read the per-round rows"
)
_STATS = ("rho_FU", "rho_FU_given_B", "rho_FB")


def _rank_rows(a: np.ndarray) -> np.ndarray:
    return st.rankdata(a, axis=-1)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise Spearman of (R, n) arrays (average ranks for ties); NaN for a constant row."""
    rx, ry = _rank_rows(x), _rank_rows(y)
    rx = rx - rx.mean(axis=1, keepdims=True)
    ry = ry - ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx**2).sum(1) * (ry**2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 1e-12, (rx * ry).sum(1) / np.where(den > 0, den, 1), np.nan)


def _three(F: np.ndarray, U: np.ndarray, B: np.ndarray) -> dict[str, np.ndarray]:
    fu, fb, ub = _spearman_rows(F, U), _spearman_rows(F, B), _spearman_rows(U, B)
    den = np.sqrt(np.clip((1 - fb**2) * (1 - ub**2), 0.0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        part = np.where(den > 1e-12, (fu - fb * ub) / np.where(den > 0, den, 1), np.nan)
    return {"rho_FU": fu, "rho_FU_given_B": part, "rho_FB": fb}


def bootstrap_correlations(
    F: np.ndarray,
    U: np.ndarray,
    B: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, float]:
    """rho(F,U), rho(F,U|B), rho(F,B) with percentile bootstrap intervals.

    Args:
        F, U, B: (n,) values of one group of clients.
        n_boot: bootstrap resamples (clients drawn with replacement); 0 = no intervals.
        seed: the resampling stream.
        level: coverage of the interval.

    Returns:
        ``<stat>``, ``<stat>_lo``, ``<stat>_hi`` for the three statistics (NaN when undefined;
        resamples where a statistic is undefined are left out of its interval).
    """
    F, U, B = (np.asarray(v, dtype=float) for v in (F, U, B))
    n = len(F)
    out: dict[str, float] = {}
    if n < 3:
        for k in _STATS:
            out.update({k: float("nan"), f"{k}_lo": float("nan"), f"{k}_hi": float("nan")})
        return out
    point = _three(F[None], U[None], B[None])
    idx = np.random.default_rng(seed).integers(0, n, size=(max(int(n_boot), 0), n))
    boot = _three(F[idx], U[idx], B[idx]) if n_boot > 0 else None
    a = (1 - level) / 2
    for k in _STATS:
        out[k] = float(point[k][0])
        vals = boot[k][np.isfinite(boot[k])] if boot is not None else np.array([])
        lo, hi = np.quantile(vals, [a, 1 - a]) if len(vals) else (np.nan, np.nan)
        out[f"{k}_lo"], out[f"{k}_hi"] = float(lo), float(hi)
    return out


def per_round_correlations(
    df: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, readings: tuple[str, ...] | None = None
) -> pd.DataFrame:
    """One row per (round, U reading) plus a pooled row per reading.

    Columns: ``round`` (str: the round or ``pooled``), ``reading``, ``n``, the three
    statistics each with ``_lo``/``_hi`` (bootstrap 95 %), ``logF_min``, ``logF_max``
    (natural log of F over the round), ``U_median`` (of the reading), ``note`` (the pooled
    warning on pooled rows). Rows whose reading is NaN are left out of that reading.
    """
    readings = tuple(r for r in (readings or ANALYSED_U) if r in df.columns)
    rows = []
    groups = [(str(r), g) for r, g in df.groupby("round", sort=True)] + [("pooled", df)]
    for label, g in groups:
        for k, r in enumerate(readings):
            part = g[np.isfinite(g[r].to_numpy(dtype=float))]
            F = part["F"].to_numpy(dtype=float)
            res = bootstrap_correlations(
                F,
                part[r].to_numpy(dtype=float),
                part["B"].to_numpy(dtype=float),
                n_boot=n_boot,
                seed=seed + k,
            )
            rows.append(
                {
                    "round": label,
                    "reading": r,
                    "n": len(part),
                    **res,
                    "logF_min": float(np.log(F.min())) if len(F) else float("nan"),
                    "logF_max": float(np.log(F.max())) if len(F) else float("nan"),
                    "U_median": float(part[r].median()) if len(part) else float("nan"),
                    "note": POOLED_WARNING if label == "pooled" else "",
                }
            )
    return pd.DataFrame(rows)


def ci_text(row: pd.Series, k: str) -> str:
    """``row[k]`` with its 95 % interval (``row[k_lo]``, ``row[k_hi]``) as table text."""
    v, lo, hi = row[k], row[f"{k}_lo"], row[f"{k}_hi"]
    if not np.isfinite(v):
        return "n/a"
    return f"{v:+.3f} [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) else f"{v:+.3f}"


def seed_table(per_round: pd.DataFrame, rounds: list[str] | None = None) -> pd.DataFrame:
    """The problem statement's three numbers in a column beside fedsel's (value [95 % interval]).

    Args:
        per_round: :func:`per_round_correlations`.
        rounds: which measured rounds get a column per reading (default: the first and the
            last measured round).

    Returns:
        One row per statistic: ``statistic, problem statement``, then ``<reading> @ round <t>`` columns.
    """
    measured = [r for r in dict.fromkeys(per_round["round"]) if r != "pooled"]
    if rounds is None:
        rounds = list(dict.fromkeys([measured[0], measured[-1]])) if measured else []
    names = {"rho_FU": "ρ(F,U)", "rho_FU_given_B": "ρ(F,U|B)", "rho_FB": "ρ(F,B)"}
    out = []
    for k in _STATS:
        rec: dict[str, str] = {"statistic": names[k], "problem statement": f"{SEED[k]:+.3f}"}
        for t in rounds:
            for _, row in per_round[per_round["round"] == str(t)].iterrows():
                rec[f"{row['reading']} @ round {t}"] = ci_text(row, k)
        out.append(rec)
    return pd.DataFrame(out)
