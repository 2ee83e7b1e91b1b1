"""``qffl:q``: q-FFL — K clients uniformly, aggregated with weights ∝ n_i·loss_i^q."""

from selection.baselines.base import Baseline, register
from selection.baselines.reads import Reads


@register
class QFFL(Baseline):
    name = "qffl"
    summary = "q-FFL: K clients uniformly, aggregation weights ∝ n_i·loss_i^q"
    arg = "q"
    arg_example = "1"
    study_entry = "qffl:1"
    order = 60
    reads = Reads.PROBE_PICKS

    def aggregation_q(self):
        return float(self.value)

    def pick(self, problem, rng):
        return rng.choice(problem.n, problem.k, replace=False)
