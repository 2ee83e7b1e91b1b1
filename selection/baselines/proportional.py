"""``proportional``: FedAvg's sampling, K clients without replacement ∝ n_samples."""

from selection.baselines.base import Baseline, register


@register
class Proportional(Baseline):
    name = "proportional"
    summary = "FedAvg's sampling: K clients ∝ their samples, without replacement"
    study_entry = "proportional"
    order = 10

    def pick(self, problem, rng):
        from selection.baselines.sampling import proportional_sample

        return proportional_sample(problem.n_samples, problem.k, rng)
