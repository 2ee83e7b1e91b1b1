"""The benchmarks' instance families: the three generated ones and round-stats from oracle runs.

* ``synthetic``, ``near-tied``, ``cross-penalty``, ``hetero6`` — :data:`selection.synthetic.FAMILIES`;
* ``oracle`` — the last round of a real ``fedsel oracle`` run with N clients (⌈N/4⌉ per Digits-4
  domain on the generated stand-ins, Dirichlet(0.5) label skew, 40 samples per client, 200
  validation images per domain, 2 rounds training K = N/10): what users solve. Runs are cached
  under ``runs/bench-oracle/n<N>`` (ignored by git) and made on first use (~2 min at N = 1,000,
  ~4 min at N = 5,000).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selection.schema import read_stats
from selection.synthetic import FAMILIES as GENERATED

ROOT = Path(__file__).resolve().parents[1]

ORACLE_DIR = ROOT / "runs" / "bench-oracle"
ORACLE_ARGS = [
    "--rounds", "2", "--samples-per-client", "40", "--dirichlet-alpha", "0.5",
    "--val-per-domain", "200", "--fisher-samples", "16", "--local-holdout", "0",
    "--data", "generated", "--seed", "0",
]  # fmt: skip


def oracle_command(n: int) -> list[str]:
    """The ``fedsel oracle`` command of the N-client run (N a multiple of 4)."""
    if n % 4:
        raise ValueError(f"oracle family: N={n} must be a multiple of 4 (N/4 per domain)")
    fedsel = str(Path(sys.executable).with_name("fedsel"))
    return [
        fedsel, "oracle", "--out", str(ORACLE_DIR / f"n{n}"),
        "--clients-per-domain", str(n // 4), "-k", str(max(1, n // 10)), *ORACLE_ARGS,
    ]  # fmt: skip


def oracle_stats(n: int, seed: int = 0) -> pd.DataFrame:
    """The last round of the cached oracle run with N clients rounded up to a multiple of 4
    (made on first use); its first N clients."""
    n4 = -(-n // 4) * 4
    stats = ORACLE_DIR / f"n{n4}" / "stats.parquet"
    if not stats.exists():
        cmd = oracle_command(n4)
        print(f"oracle family: running the {n4}-client oracle once ({' '.join(cmd[1:])})",
              file=sys.stderr)  # fmt: skip
        subprocess.run([*cmd, "--overwrite"], check=True, stdout=subprocess.DEVNULL)
    df = read_stats(stats)
    last = df[df["round"] == df["round"].max()].reset_index(drop=True)
    return last.iloc[:n].reset_index(drop=True)


FAMILIES = {**GENERATED, "oracle": oracle_stats}
