"""Tiny injected Digits-like data and configurations shared by the oracle tests.

Imported as ``helpers.oracle`` (``from helpers.oracle import tiny_config``).
"""

from __future__ import annotations

import numpy as np
import torch

from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.data import DomainData

DOMAINS = ("mnist", "usps", "svhn", "syn")


def tiny_data(n_train: int = 120, n_test: int = 40, seed: int = 0) -> dict:
    """Learnable random data: each class has a fixed pattern per domain, plus noise."""
    rng = np.random.default_rng(seed)
    out = {}
    for j, d in enumerate(DOMAINS):
        proto = rng.normal(0, 1, (10, 3, 32, 32)).astype(np.float32)
        splits = {}
        for split, n in (("train", n_train), ("test", n_test)):
            y = rng.integers(0, 10, n)
            x = proto[y] * (0.5 + 0.2 * j) + rng.normal(0, 1, (n, 3, 32, 32))
            splits[split] = DomainData(
                d,
                split,
                torch.as_tensor(x, dtype=torch.float32),
                torch.as_tensor(y, dtype=torch.int64),
                "generated",
            )
        out[d] = splits
    return out


def tiny_config(**changes) -> OracleConfig:
    """Two clients per domain, a handful of samples each, the smallest model."""
    base = dict(
        seed=0,
        clients_per_domain=2,
        samples_per_client={"mnist": 20, "usps": 8, "svhn": 24, "syn": 10},
        val_per_domain=30,
        model="cnn-small",
        batch_size=8,
        fisher_samples=8,
        device="cpu",
        threads=1,  # the suite runs beside other jobs on two cores
    )
    base.update(changes)
    return OracleConfig(**base)
