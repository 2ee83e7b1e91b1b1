"""The family-wise claim: a candidate beats every baseline only where Holm over the
(baselines × metrics) Wilcoxon tests rejects every comparison, not on intervals alone."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fl_oracle.experiments.study_stats import METRICS, dominance


def _metrics(diffs: dict[str, np.ndarray], seeds: int = 10) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    base = rng.normal(70, 3, seeds)
    rows = []
    for entry, d in diffs.items():
        for s in range(seeds):
            row = {"entry": entry, "seed": s, "reached": True}
            for m in METRICS:
                row[m] = base[s] + d[s]
            rows.append(row)
    return pd.DataFrame(rows)


def test_all_seeds_better_passes_holm_one_seed_worse_does_not():
    up = np.linspace(1.0, 2.0, 10)
    mixed = up.copy()
    mixed[0] = -1.6  # one seed clearly worse: Wilcoxon p ≈ 0.02, above Holm's 0.05/4
    m = _metrics({"b1": np.zeros(10), "b2": np.full(10, 0.1), "good": up + 0.2, "mixed": mixed})
    dom = dominance(m, ["good", "mixed"], ["b1", "b2"], resamples=2000)
    g = dom[dom["entry"] == "good"]
    assert g["beats"].all() and g["beats_fw"].all()
    assert np.allclose(g["p_final_avg"], 2 / 1024)  # exact Wilcoxon, every pair positive
    assert np.allclose(g["p_holm_final_avg"], 4 * 2 / 1024)  # Holm over 2 baselines × 2 metrics
    x = dom[dom["entry"] == "mixed"]
    assert x["beats"].all()  # its intervals alone exclude zero ...
    assert not x["beats_fw"].all()  # ... the family-wise test does not agree
