"""``random``: K clients uniformly at random."""

from selection.baselines.base import Baseline, register


@register
class Uniform(Baseline):
    name = "random"
    summary = "K clients uniformly at random"
    study_entry = None  # the default study runs fedavg, the same draw and weights
    order = 20

    def pick(self, problem, rng):
        return rng.choice(problem.n, problem.k, replace=False)
