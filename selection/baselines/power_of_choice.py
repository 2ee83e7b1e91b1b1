"""``power-of-choice:d``: d candidates ∝ n_samples, then the K with the highest loss."""

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.reads import Reads
from selection.errors import SelectionError


@register
class PowerOfChoice(Baseline):
    name = "power-of-choice"
    summary = "d candidates ∝ samples, the K of highest local loss (U when no loss column)"
    arg = "d"
    arg_example = "10"
    integer = True
    minimum = 1
    study_entry = "power-of-choice:10"
    order = 40
    reads = Reads.PROBE_CANDIDATES

    def pick(self, problem, rng):
        n, k, d = problem.n, problem.k, int(self.value)
        if d < k:
            raise SelectionError(f"{self.spec}: d={d} must be at least k={k}")
        p = problem.n_samples / problem.n_samples.sum()
        cand = rng.choice(n, min(d, n), replace=False, p=p)
        self.probed = np.sort(cand)
        table = problem.table
        if table is not None and "loss" in table.columns:
            key = -self.losses(problem, cand)[cand]
        else:
            key = problem.U[cand]
        return cand[np.argsort(key, kind="stable")[:k]]
