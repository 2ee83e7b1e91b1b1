"""``fisher-topk``: the K clients with the largest Fisher trace F."""

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.reads import Reads


@register
class FisherTopK(Baseline):
    name = "fisher-topk"
    summary = "the K largest Fisher traces F"
    study_entry = "fisher-topk"
    order = 50
    reads = Reads.PROBE
    reports = ("F",)

    def pick(self, problem, rng):
        return np.argsort(-problem.F, kind="stable")[: problem.k]
