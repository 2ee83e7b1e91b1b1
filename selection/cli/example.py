"""``fedsel example``: write the example round-stats table shipped inside the package
(``selection/data/``), so that an installed fedsel has a table to try the selection commands
on without the repository."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from selection.errors import SelectionError
from selection.example import EXAMPLE_STATS, example_stats_bytes

__all__ = ["EXAMPLE_STATS", "example_stats_bytes", "example", "register"]


def example(
    out: Path = typer.Option(
        Path("example_stats.csv"),
        "--out",
        "-o",
        help="File to write the example round-stats table to: CSV (.csv, .txt) or Parquet "
        "(.parquet, .pq), by its suffix, as fedsel solve reads it.",
        show_default="example_stats.csv in the current folder",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the file --out names."),
) -> None:
    """Write an example round-stats table (20 clients, 3 rounds) to try the commands on."""
    from selection.schema import CSV_SUFFIXES, PARQUET_SUFFIXES

    out = Path(out)
    if out.is_dir():
        raise SelectionError(f"--out {out} is a folder; name a file, e.g. {out / 'stats.csv'}")
    suffix = out.suffix.lower()
    if suffix not in (*CSV_SUFFIXES, *PARQUET_SUFFIXES):  # the name promises the format
        raise SelectionError(
            f"--out {out}: a round-stats table is written as CSV "
            f"({', '.join(CSV_SUFFIXES)}) or Parquet ({', '.join(PARQUET_SUFFIXES)}), the "
            f"files fedsel solve reads, not {suffix or 'a name without a suffix'}"
        )
    if out.exists() and not overwrite:
        raise SelectionError(f"{out} exists; pass --overwrite to replace it")
    data = example_stats_bytes()
    from selection.atomic import atomic_path, write_table_atomic

    if suffix in PARQUET_SUFFIXES:  # the same table, read as fedsel reads the CSV
        import io

        from selection.schema import read_stats_csv

        write_table_atomic(read_stats_csv(io.BytesIO(data)), out)
    else:
        with atomic_path(out) as tmp:
            tmp.write_bytes(data)
    print(
        f"wrote {out}; try: fedsel solve --stats {out} --k 5 --method eps --eps 25",
        file=sys.stderr,
    )


def register(app: typer.Typer) -> None:
    """Add ``example`` to the fedsel app."""
    app.command("example")(example)
