"""``all``: full participation, the reference a study compares against (not a baseline)."""

import numpy as np

from selection.baselines.base import Baseline, register


@register
class Everyone(Baseline):
    name = "all"
    summary = "every client (K = N): full participation"
    is_baseline = False
    study_entry = "all"
    order = 90

    def pick(self, problem, rng):
        return np.arange(problem.n)
