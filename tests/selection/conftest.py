"""Shared factories for the selection tests: small round-stats tables and problems.

* ``make_stats(n, seed=0, kind="synthetic", decimals=None, d=4)`` — a valid round-stats table:
  ``synthetic`` is :func:`selection.synthetic.synthetic_stats` (oracle-shaped), ``random`` has
  independent uniform per-domain utilities (U = their mean), log-normal F, uniform B and cos_g.
  ``decimals`` rounds every utility column (CP-SAT with scale 10**decimals then solves the
  data exactly).
* ``make_problem(n, k, seed=0, kind="synthetic", decimals=None, d=4)`` — the problem of it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.problem import SelectionProblem
from selection.schema import LN2
from selection.synthetic import synthetic_stats

DOMAINS = ("mnist", "usps", "svhn", "syn", "d4", "d5")


def random_stats(n: int, *, seed: int = 0, d: int = 4) -> pd.DataFrame:
    """A fully random valid round-stats table of one round (round 0)."""
    rng = np.random.default_rng(seed)
    doms = DOMAINS[:d]
    Ud = rng.uniform(5.0, 95.0, size=(n, d))
    df = pd.DataFrame(
        {
            "round": 0,
            "client_id": [f"c{i}" for i in range(n)],
            "domain": [doms[i % d] for i in range(n)],
            "n_samples": rng.integers(10, 500, n),
            "U": Ud.mean(axis=1),
            "F": np.exp(rng.normal(5.0, 1.0, n)),
            "B": rng.uniform(0.0, LN2, n),
            "cos_g": rng.uniform(-1.0, 1.0, n),
        }
    )
    for j, name in enumerate(doms):
        df[f"U_{name}"] = Ud[:, j]
    return df


def build_stats(
    n: int, seed: int = 0, kind: str = "synthetic", decimals: int | None = None, d: int = 4
) -> pd.DataFrame:
    """See the module docstring."""
    if kind == "synthetic":
        df = synthetic_stats(n, seed=seed, domains=DOMAINS[:d])
    elif kind == "random":
        df = random_stats(n, seed=seed, d=d)
    else:
        raise ValueError(f"unknown kind {kind!r}")
    if decimals is not None:
        for c in [c for c in df.columns if c == "U" or c.startswith("U_")]:
            df[c] = df[c].round(decimals)
    return df


def build_problem(
    n: int,
    k: int,
    seed: int = 0,
    kind: str = "synthetic",
    decimals: int | None = None,
    d: int = 4,
) -> SelectionProblem:
    """See the module docstring."""
    return SelectionProblem.from_stats(build_stats(n, seed, kind, decimals, d), k)


@pytest.fixture
def make_stats():
    """Factory fixture: ``make_stats(n, seed=0, kind="synthetic", decimals=None, d=4)``."""
    return build_stats


@pytest.fixture
def make_problem():
    """Factory fixture: ``make_problem(n, k, seed=0, kind="synthetic", decimals=None, d=4)``."""
    return build_problem
