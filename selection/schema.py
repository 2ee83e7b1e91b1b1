"""The round-stats table: the contract between the oracle and the selection layer.

One row per (round, client). Torch-free, so both packages may import it. ``validate_stats``
checks every rule of DESIGN.md and raises :class:`StatsError` naming the column, the row
(0-based data row of the table), the client and the offending value.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from selection.errors import StatsError

__all__ = [
    "REQUIRED_COLUMNS",
    "DEFAULT_DOMAINS",
    "LN2",
    "domain_columns",
    "read_stats",
    "validate_stats",
]

REQUIRED_COLUMNS: tuple[str, ...] = (
    "round",
    "client_id",
    "domain",
    "n_samples",
    "U",
    "F",
    "B",
    "cos_g",
)
DEFAULT_DOMAINS: tuple[str, ...] = ("mnist", "usps", "svhn", "syn")
LN2 = math.log(2.0)
_TOL = 1e-9


def domain_columns(df: pd.DataFrame) -> list[str]:
    """The per-domain utility columns ``U_<domain>`` in table order."""
    return [c for c in df.columns if c.startswith("U_") and len(c) > 2]


def read_stats(path: str | os.PathLike) -> pd.DataFrame:
    """Read a round-stats table from CSV or Parquet (by suffix) and validate it."""
    p = Path(path)
    if not p.is_file():
        raise StatsError(f"stats file not found: {p}")
    suffix = p.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        elif suffix in (".csv", ".txt"):
            df = pd.read_csv(p, dtype={"client_id": str, "domain": str})
        else:
            raise StatsError(
                f"stats file {p} must end in .csv or .parquet, not {suffix or '(none)'}"
            )
    except StatsError:
        raise
    except Exception as exc:  # pandas/pyarrow raise many types on malformed files
        raise StatsError(f"cannot read stats file {p}: {str(exc).splitlines()[0]}") from exc
    return validate_stats(df)


def _plain(value: object) -> object:
    """A numpy scalar as the Python value it holds (so messages read ``nan``, not ``np.float64``)."""
    return value.item() if isinstance(value, np.generic) else value


def _where(df: pd.DataFrame, pos: int) -> str:
    cid = df["client_id"].iloc[pos] if "client_id" in df.columns else "?"
    return f"row {pos} (client {cid})"


def _check_range(
    df: pd.DataFrame,
    col: str,
    lo: float | None,
    hi: float | None,
    lo_open: bool = False,
    what: str = "",
) -> None:
    v = df[col].to_numpy(dtype=float)
    bad = np.zeros(len(v), dtype=bool)
    if lo is not None:
        bad |= (v <= lo) if lo_open else (v < lo - _TOL)
    if hi is not None:
        bad |= v > hi + _TOL
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise StatsError(f"column {col}: {_where(df, pos)} has value {float(v[pos])!r}, {what}")


def validate_stats(df: pd.DataFrame) -> pd.DataFrame:
    """Validate a round-stats table and return it with normalized dtypes.

    Args:
        df: one row per (round, client) with the columns of DESIGN.md.

    Returns:
        A copy with ``client_id``/``domain`` as str and ``round``/``n_samples`` as int64.

    Raises:
        StatsError: on the first violation, naming column, row, client and value.
    """
    if not isinstance(df, pd.DataFrame):
        raise StatsError(f"round stats must be a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise StatsError("round stats table is empty")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise StatsError(f"round stats table is missing column(s): {', '.join(missing)}")
    dcols = domain_columns(df)
    if not dcols:
        raise StatsError("round stats table has no per-domain utility column U_<domain>")
    df = df.reset_index(drop=True).copy()
    df["client_id"] = df["client_id"].astype(str)
    df["domain"] = df["domain"].astype(str)
    numeric = ["round", "n_samples", "U", "F", "B", "cos_g", *dcols]
    for col in numeric:
        v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(v)
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise StatsError(
                f"column {col}: {_where(df, pos)} has non-finite or non-numeric value {_plain(df[col].iloc[pos])!r}"
            )
        df[col] = v
    for col in ("round", "n_samples"):
        v = df[col].to_numpy()
        bad = v != np.round(v)
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise StatsError(
                f"column {col}: {_where(df, pos)} has non-integer value {float(v[pos])!r}"
            )
    _check_range(df, "round", 0, None, what="rounds are integers >= 0")
    _check_range(df, "n_samples", 0, None, lo_open=True, what="n_samples must be > 0")
    for col in ("U", *dcols):
        _check_range(df, col, 0.0, 100.0, what="utilities are accuracies in [0, 100]")
    _check_range(df, "F", 0.0, None, lo_open=True, what="the Fisher trace F must be > 0")
    _check_range(df, "B", 0.0, LN2, what="B is a JS divergence in [0, ln 2] nats")
    _check_range(df, "cos_g", -1.0, 1.0, what="cos_g is a cosine in [-1, 1]")
    df["round"] = df["round"].astype("int64")
    df["n_samples"] = df["n_samples"].astype("int64")
    ids = df["client_id"]
    badid = ids.str.contains(r"[\s;]", regex=True) | (ids.str.len() == 0)
    if badid.any():
        pos = int(np.flatnonzero(badid.to_numpy())[0])
        raise StatsError(
            f"column client_id: row {pos} has id {ids.iloc[pos]!r}; ids must be non-empty without spaces or ';'"
        )
    dup = df.duplicated(["round", "client_id"], keep="first")
    if dup.any():
        pos = int(np.flatnonzero(dup.to_numpy())[0])
        raise StatsError(
            f"column client_id: {_where(df, pos)} is a duplicate id in round {int(df['round'].iloc[pos])}"
        )
    return df
