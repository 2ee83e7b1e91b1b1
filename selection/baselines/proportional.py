"""``proportional``: K clients drawn ∝ n_samples without replacement, then weighted ∝ n_samples.

A client's size counts twice (in the draw and in the weight), so the aggregate leans towards
large clients beyond their share of the data: not FedAvg as McMahan et al. run it (``fedavg``:
uniform draw, size weights), nor one of Li et al.'s unbiased schemes. Kept as the reference the
earlier studies were measured against.
"""

from selection.baselines.base import Baseline, register


@register
class Proportional(Baseline):
    name = "proportional"
    summary = "K clients ∝ their samples, weighted ∝ samples again (size counted twice)"
    study_entry = "proportional"
    order = 10

    def pick(self, problem, rng):
        from selection.baselines.sampling import proportional_sample

        return proportional_sample(problem.n_samples, problem.k, rng)
