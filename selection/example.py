"""The example round the package ships: 20 clients of the four Digits-4 domains, 3 rounds.

``fedsel example -o stats.csv`` writes it; :func:`example_stats` reads it in Python, from
any folder and from an installed wheel alike.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where the table is read, not with the CLI's listing
    import pandas as pd

__all__ = ["EXAMPLE_STATS", "example_stats", "example_stats_bytes"]

EXAMPLE_STATS = ("data", "example_stats.csv")  # inside the selection package


def example_stats_bytes() -> bytes:
    """The example round-stats table as the package holds it (CSV bytes).

    Examples:
        >>> from selection.example import example_stats_bytes
        >>> lines = example_stats_bytes().decode().splitlines()
        >>> len(lines), lines[0]  # a header and 20 clients x 3 rounds
        (61, 'round,client_id,domain,n_samples,U,F,B,cos_g,loss,U_mnist,U_usps,U_svhn,U_syn')
    """
    from importlib.resources import files

    resource = files("selection")
    for part in EXAMPLE_STATS:
        resource = resource.joinpath(part)
    return resource.read_bytes()


def example_stats() -> pd.DataFrame:
    """The example round-stats table, validated as :func:`selection.schema.read_stats` reads a
    file.

    Examples:
        >>> from selection.example import example_stats
        >>> stats = example_stats()
        >>> stats["client_id"].nunique(), sorted(stats["round"].unique().tolist())
        (20, [0, 1, 2])
    """
    from selection.schema import read_stats_csv

    return read_stats_csv(io.BytesIO(example_stats_bytes()))
