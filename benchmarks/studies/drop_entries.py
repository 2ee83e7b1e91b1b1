"""Forget some entries' runs in a study folder, so the study runs them again under the current
code (an entry whose rule changed meaning): their run files and their rows of the packed
history (``history.parquet``, from which a study restores missing run files) are removed;
every other run is kept byte for byte.

    .venv/bin/python benchmarks/studies/drop_entries.py results/study-fair-fight fedcor:5 divfl:stale

Then the study's own command (its ``--config`` or ``--out`` alone) runs the dropped entries
again. The study's settings (``study.toml``) are untouched: the entries stay in the study.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fl_oracle.experiments.study.runs import PACKED, run_path
from selection.atomic import atomic_path


def drop_entries(folder: Path, entries: list[str]) -> tuple[int, int]:
    """Remove ``entries``' run folders and packed rows from the study in ``folder``; returns
    (run files removed, packed rows removed)."""
    files = 0
    for e in entries:
        runs = run_path(folder, e, 0).parent
        if runs.is_dir():
            files += sum(1 for _ in runs.glob("seed*.csv"))
            shutil.rmtree(runs)
    rows = 0
    packed = folder / PACKED
    if packed.is_file():
        table = pq.read_table(packed)
        keep = pc.invert(pc.is_in(table.column("entry"), value_set=pa.array(entries)))
        kept = table.filter(keep)
        rows = table.num_rows - kept.num_rows
        meta = dict(table.schema.metadata or {})
        columns = json.loads(meta.get(b"fedsel.run_columns", b"{}"))
        columns = {k: v for k, v in columns.items() if k.split("\t")[0] not in entries}
        meta[b"fedsel.run_columns"] = json.dumps(columns).encode()
        with atomic_path(packed) as tmp:
            pq.write_table(
                kept.replace_schema_metadata(meta), tmp, compression="zstd", compression_level=19
            )
    return files, rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the study folder")
    parser.add_argument("entries", nargs="+", help="the entries to run again")
    args = parser.parse_args(argv)
    if not (args.folder / "study.toml").is_file():
        sys.exit(f"drop_entries: error: {args.folder} holds no study (no study.toml)")
    files, rows = drop_entries(args.folder, args.entries)
    print(f"dropped {files} run files and {rows} packed rows of {', '.join(args.entries)}")


if __name__ == "__main__":
    main()
