"""The round-stats table: the contract between the oracle and the selection layer.

One row per (round, client). Torch-free, so both packages may import it. ``validate_stats``
checks every rule of ``docs/contract.md`` and raises :class:`StatsError` naming the column, the row
(0-based data row of the table), the client and the offending value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from selection.errors import StatsError

__all__ = [
    "REQUIRED_COLUMNS",
    "DEFAULT_DOMAINS",
    "DEFAULT_SAMPLES_PER_CLIENT",
    "LN2",
    "OPTIONAL_RANGES",
    "U_READINGS",
    "F_FLOOR",
    "MAX_INT",
    "StatsWarning",
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
#: training samples per client of the Digits-4 federation: 1% of each real training set
#: (FedHEAL's Digits-4: mnist 60000, usps 7291, svhn 73257, syn 10000)
DEFAULT_SAMPLES_PER_CLIENT: dict[str, int] = {"mnist": 600, "usps": 72, "svhn": 732, "syn": 100}
#: F must be > 0 (the contract); a producer reports a vanishing Fisher trace as this value
F_FLOOR = 1e-12
LN2 = math.log(2.0)
_TOL = 1e-9


# Optional readings of the update utility beside U (accuracy %, of w_t + Δ_i): U_own on the
# client's own domain's validation subset, U_local on the client's local hold-out, dU = U minus
# the pooled validation accuracy of w_t. They are not domains; the selection layer ignores them.
U_READINGS: tuple[str, ...] = ("U_own", "U_local")
OPTIONAL_RANGES: dict[str, tuple[float, float]] = {
    "U_own": (0.0, 100.0),
    "U_local": (0.0, 100.0),
    "dU": (-100.0, 100.0),
}


# Largest round / n_samples accepted: every integer up to 2**53 is exact in float64 and int64.
MAX_INT = 2**53


class StatsWarning(UserWarning):
    """A round-stats table has something fedsel ignores (e.g. a ``U_*`` column of no domain).

    Examples:
        >>> import warnings
        >>> import pandas as pd
        >>> from selection.schema import StatsWarning, validate_stats
        >>> stats = pd.DataFrame({"round": 0, "client_id": ["a", "b"], "domain": ["x", "y"],
        ...     "n_samples": 100, "U": [80, 70], "U_x": [90, 60], "U_y": [70, 80],
        ...     "F": [1, 2], "B": [0.1, 0.2], "cos_g": [0.5, 0.3], "U_z": 50})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = validate_stats(stats)  # no client has domain z: U_z is ignored
        >>> caught[0].category is StatsWarning, str(caught[0].message)
        (True, 'ignoring column(s) U_z: no client has that domain (domains: x, y)')
    """


def domain_columns(df: pd.DataFrame) -> list[str]:
    """The per-domain utility columns ``U_<domain>`` in table order.

    The domains are the values of the ``domain`` column: a ``U_<name>`` column whose name is no
    client's domain (and not one of the readings ``U_own``/``U_local``) is not a domain.

    Examples:
        >>> import pandas as pd
        >>> from selection.schema import domain_columns
        >>> df = pd.DataFrame({"client_id": ["a", "b"], "domain": ["x", "y"], "U_y": [70, 80],
        ...     "U_own": [90, 80], "U_z": [50, 50], "U_x": [90, 60]})
        >>> domain_columns(df)  # U_own is a reading, z no client's domain
        ['U_y', 'U_x']
    """
    names = {str(d) for d in df["domain"].dropna().unique()} if "domain" in df.columns else set()
    return [
        c
        for c in df.columns
        if isinstance(c, str) and c.startswith("U_") and c not in U_READINGS and c[2:] in names
    ]


def _csv_header(p: Path) -> list[str]:
    """The raw header cells of a CSV file (pandas renames duplicates to ``name.1``)."""
    import csv

    with open(p, newline="", encoding="utf-8", errors="replace") as fh:
        return next(csv.reader(fh), [])


def _check_unique_columns(names) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        key = str(name).strip()
        if key in seen:
            raise StatsError(
                f"duplicate column header {key!r} (columns {seen[key] + 1} and {i + 1}); "
                "every column must appear once"
            )
        seen[key] = i


#: the file names a round-stats table is read from (and written to) by suffix
CSV_SUFFIXES = (".csv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")


def read_stats_csv(source) -> pd.DataFrame:
    """A round-stats CSV (a path or a file object) as fedsel reads it, not yet validated:
    ``keep_default_na=False``, so an id "NA", "None" or "null" is a string and an empty cell
    is "".

    Examples:
        >>> import io
        >>> from selection.schema import read_stats_csv
        >>> df = read_stats_csv(io.StringIO("round,client_id,domain\\n0,NA,x\\n0,007,\\n"))
        >>> df["client_id"].tolist(), df["domain"].tolist()  # no NaN, no int, no lost zeros
        (['NA', '007'], ['x', ''])
    """
    return pd.read_csv(source, dtype={"client_id": str, "domain": str}, keep_default_na=False)


def read_stats(path: str | os.PathLike) -> pd.DataFrame:
    """Read a round-stats table from CSV or Parquet (by suffix) and validate it.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from selection.example import example_stats
        >>> from selection.schema import read_stats
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = Path(tmp) / "stats.csv"
        ...     example_stats().to_csv(path, index=False)
        ...     stats = read_stats(path)
        >>> stats.shape, str(stats["n_samples"].dtype)  # 20 clients x 3 rounds
        ((60, 13), 'int64')
    """
    p = Path(path)
    if not p.is_file():
        raise StatsError(f"stats file not found: {p}")
    suffix = p.suffix.lower()
    try:
        if suffix in PARQUET_SUFFIXES:
            df = pd.read_parquet(p)
        elif suffix in CSV_SUFFIXES:
            _check_unique_columns(_csv_header(p))
            df = read_stats_csv(p)
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


def _strings(df: pd.DataFrame, col: str) -> pd.Series:
    """A text column as Python strings; a missing or blank cell is an error naming its row."""
    raw = df[col]
    missing = raw.isna().to_numpy()
    text = raw.astype(object).where(~missing, "").map(str)
    blank = text.str.strip().str.len().to_numpy() == 0
    if (missing | blank).any():
        pos = int(np.flatnonzero(missing | blank)[0])
        what = "is missing" if missing[pos] else f"is empty ({text.iloc[pos]!r})"
        raise StatsError(f"column {col}: row {pos} {what}; every row needs a {col} string")
    return text.astype(str)


def _domain_utilities(df: pd.DataFrame) -> list[str]:
    """The ``U_<domain>`` column of every domain; warns about ``U_*`` columns of no domain."""
    have = {c for c in df.columns if isinstance(c, str)}
    domains = list(dict.fromkeys(df["domain"]))
    _refuse_reserved(df, domains)
    for d in domains:
        if f"U_{d}" not in have:
            pos = int(np.flatnonzero((df["domain"] == d).to_numpy())[0])
            raise StatsError(
                f"column domain: {_where(df, pos)} has domain {d!r} but the table has no "
                f"per-domain utility column U_<domain> (U_{d})"
            )
    dcols = domain_columns(df)
    extra = [
        c
        for c in df.columns
        if isinstance(c, str) and c.startswith("U_") and c not in U_READINGS and c not in dcols
    ]
    if extra:
        import warnings

        warnings.warn(
            f"ignoring column(s) {', '.join(extra)}: no client has that domain "
            f"(domains: {', '.join(map(str, domains))})",
            StatsWarning,
            stacklevel=3,
        )
    return dcols


RESERVED_DOMAINS = tuple(c[2:] for c in U_READINGS)  # "own", "local": U_own, U_local are readings


def _refuse_reserved(df: pd.DataFrame, domains: Sequence[str]) -> None:
    for d in domains:
        if d in RESERVED_DOMAINS:
            pos = int(np.flatnonzero((df["domain"] == d).to_numpy())[0]) if "domain" in df else 0
            raise StatsError(
                f"column domain: {_where(df, pos)} has domain {d!r}, a reserved name: U_{d} is "
                "the utility reading of the contract, not a domain's column; rename the domain"
            )


def _known_domains(df: pd.DataFrame, domains: Sequence[str]) -> list[str]:
    """``U_<d>`` of each given domain (all must exist); every client's domain must be one."""
    _refuse_reserved(df, domains)
    missing = [f"U_{d}" for d in domains if f"U_{d}" not in df.columns]
    if missing:
        raise StatsError(f"round stats table is missing column(s): {', '.join(missing)}")
    other = ~df["domain"].isin(list(domains)).to_numpy()
    if other.any():
        pos = int(np.flatnonzero(other)[0])
        raise StatsError(
            f"column domain: {_where(df, pos)} has domain {df['domain'].iloc[pos]!r}, "
            f"not one of {', '.join(domains)}"
        )
    return [f"U_{d}" for d in domains]


def _refuse_booleans(df: pd.DataFrame, col: str) -> None:
    """True/False is not a number here (pandas would read it as 1/0)."""
    values = df[col]
    if pd.api.types.is_bool_dtype(values.dtype):
        bad = np.ones(len(values), dtype=bool)
    elif values.dtype == object:
        bad = values.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    else:
        return
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise StatsError(
            f"column {col}: {_where(df, pos)} has boolean value {_plain(values.iloc[pos])!r}; "
            "expected a number"
        )


def validate_stats(df: pd.DataFrame, *, domains: Sequence[str] | None = None) -> pd.DataFrame:
    """Validate a round-stats table and return it with normalized dtypes.

    Args:
        df: one row per (round, client) with the columns of ``docs/contract.md``.
        domains: the evaluation domains when the caller knows them (the oracle, whose table of
            a subset of clients may lack a domain's clients); None = the ``domain`` values.

    Returns:
        A copy with ``client_id``/``domain`` as str and ``round``/``n_samples`` as int64.

    Raises:
        StatsError: on the first violation, naming column, row, client and value.

    Examples:
        >>> import pandas as pd
        >>> from selection.schema import validate_stats
        >>> stats = pd.DataFrame({"round": [0.0, 0.0], "client_id": ["a", "b"],
        ...     "domain": ["x", "y"], "n_samples": 100, "U": [80, 70], "U_x": [90, 60],
        ...     "U_y": [70, 80], "F": [1, 2], "B": [0.1, 0.2], "cos_g": [0.5, 0.3]})
        >>> str(validate_stats(stats)["round"].dtype)
        'int64'
        >>> validate_stats(stats.assign(B=[0.1, 0.9]))  # B is at most ln 2 = 0.693...
        Traceback (most recent call last):
        ...
        selection.errors.StatsError: column B: row 1 (client b) has value 0.9, ...
    """
    if not isinstance(df, pd.DataFrame):
        raise StatsError(f"round stats must be a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise StatsError("round stats table is empty")
    _check_unique_columns(df.columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise StatsError(f"round stats table is missing column(s): {', '.join(missing)}")
    df = df.reset_index(drop=True).copy()
    for col in ("client_id", "domain"):
        df[col] = _strings(df, col)
    dcols = _domain_utilities(df) if domains is None else _known_domains(df, domains)
    numeric = ["round", "n_samples", "U", "F", "B", "cos_g", *dcols]
    for col in numeric:
        _refuse_booleans(df, col)
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
    _check_range(df, "round", 0, MAX_INT, what=f"rounds are integers in [0, {MAX_INT}]")
    _check_range(
        df, "n_samples", 0, MAX_INT, lo_open=True, what=f"n_samples must be in [1, {MAX_INT}]"
    )
    for col in ("U", *dcols):
        _check_range(df, col, 0.0, 100.0, what="utilities are accuracies in [0, 100]")
    _check_range(df, "F", 0.0, None, lo_open=True, what="the Fisher trace F must be > 0")
    _check_range(df, "B", 0.0, LN2, what="B is a JS divergence in [0, ln 2] nats")
    _check_range(df, "cos_g", -1.0, 1.0, what="cos_g is a cosine in [-1, 1]")
    for col, (lo, hi) in OPTIONAL_RANGES.items():  # optional; NaN allowed (not measured)
        if col in df.columns:
            _refuse_booleans(df, col)
            raw = df[col]
            v = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
            empty = raw.isna().to_numpy() | (raw.astype(str).str.strip() == "").to_numpy()
            text = np.isnan(v) & ~empty  # "abc" is not "not measured"
            if text.any():
                pos = int(np.flatnonzero(text)[0])
                raise StatsError(
                    f"column {col}: {_where(df, pos)} has non-numeric value "
                    f"{_plain(raw.iloc[pos])!r} (leave it empty when not measured)"
                )
            df[col] = v
            bad = ~np.isnan(v) & ((v < lo - _TOL) | (v > hi + _TOL) | ~np.isfinite(v))
            if bad.any():
                pos = int(np.flatnonzero(bad)[0])
                raise StatsError(
                    f"column {col}: {_where(df, pos)} has value {float(v[pos])!r}, "
                    f"must lie in [{lo:g}, {hi:g}] (or be empty)"
                )
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
