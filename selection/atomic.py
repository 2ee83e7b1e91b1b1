"""Atomic file writes: readers never see a half-written file, a failed write keeps the old one.

Every table, text, checkpoint and cache file fedsel writes goes through :func:`atomic_path`
(write to a temp file beside the target, then ``os.replace``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

__all__ = ["atomic_path", "write_table_atomic", "write_text_atomic"]


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success rename it onto ``path``, else remove it.

    Readers never see a half-written file, and a failed write leaves an older file intact.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)


def write_table_atomic(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a table as CSV or Parquet (by suffix) through a temp file and an atomic rename."""
    p = Path(path)
    with atomic_path(p) as tmp:
        if p.suffix.lower() in (".parquet", ".pq"):
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    return p


def write_text_atomic(text: str, path: str | os.PathLike) -> Path:
    """Write a text file (HTML, JSON, Markdown) through a temp file and an atomic rename."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
