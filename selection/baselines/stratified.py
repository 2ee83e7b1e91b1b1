"""``stratified``: a quota of ⌊K/D⌋ clients per domain, the rest to domains ∝ their samples."""

from selection.baselines.base import Baseline, register


@register
class Stratified(Baseline):
    name = "stratified"
    summary = "⌊K/D⌋ clients per domain, the rest ∝ samples; ∝ n_samples within a domain"
    study_entry = "stratified"
    order = 30

    def pick(self, problem, rng):
        from selection.baselines.sampling import stratified_sample

        return stratified_sample(problem.client_domains, problem.n_samples, problem.k, rng)
