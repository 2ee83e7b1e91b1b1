"""Write results/examples/stats.csv: a synthetic 20-client, 3-round Digits-4-shaped round-stats table.

Run from the repository root: ``.venv/bin/python results/examples/make_example.py``.
The table is :func:`selection.synthetic.synthetic_stats` (20 clients over mnist, usps, svhn,
syn; seed 15; rounds 0-2), validated and written atomically.
"""

from __future__ import annotations

from pathlib import Path

from selection.atomic import write_table_atomic
from selection.schema import validate_stats
from selection.synthetic import synthetic_stats

OUT = Path(__file__).resolve().parent / "stats.csv"
SEED = 15


def make_example(path: Path = OUT) -> Path:
    """Generate, validate and write the example table; return its path."""
    df = validate_stats(synthetic_stats(20, seed=SEED, rounds=3))
    return write_table_atomic(df.round(6), path)


if __name__ == "__main__":
    print(make_example())
