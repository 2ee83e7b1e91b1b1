"""The oracle settings live-training runs start from (the demo and the study), in a module
that imports nothing, so that any layer reads them without importing the training loop."""

from __future__ import annotations

from typing import Any

__all__ = ["DEMO_ORACLE"]

# The oracle settings of live-training runs (the demo and the study start from them).
# Oracle settings of the demo's embedded default: the Digits-4 federation (5 clients per domain,
# 1% of each training set) with smaller evaluation sets and Fisher probes, one torch thread per
# run process, so that `make demo` fits in 15 minutes on 2 CPU cores (results/demo/record.toml).
# Local step size 0.1 and two local epochs rather than the oracle's 0.05 / 1 epoch, so that the
# model trains far enough in the demo's 8 rounds of K=5 for the selectors to differ
# (results/demo/summary.csv), at a somewhat longer round.
DEMO_ORACLE: dict[str, Any] = {
    "lr": 0.1,
    "local_epochs": 2.0,
    "val_per_domain": 200,
    "test_per_domain": 500,
    "fisher_samples": 32,
    "threads": 1,
}
