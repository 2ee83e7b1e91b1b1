"""``fedavg``: FedAvg as McMahan et al. run it — K clients uniformly without replacement, their
updates weighted ∝ their samples, normalized over the picks.

A client's size counts once (in its weight), where ``proportional`` counts it twice (in the draw
and the weight). Li, Huang, Yang, Wang & Zhang ("On the convergence of FedAvg on non-IID data",
ICLR 2020) give the exactly unbiased schemes: scheme II draws as here but weights p_k·N/K
*unnormalized*; normalizing over the picks, as here and in most reference code, keeps the
direction's expectation close to the full gradient's without its exactness. Scheme I (K draws
*with* replacement ∝ size, averaged 1/K) may pick fewer than K distinct clients, which fedsel's
selections (K distinct clients) do not express; it is not offered.

The picks are ``random``'s (the same draw from the same seed): ``fedavg`` is that rule named as
what it is, the reference entry of a fair comparison: the default study runs it in random's
place and takes it as its reference.
"""

from selection.baselines.base import Baseline, register


@register
class FedAvg(Baseline):
    name = "fedavg"
    summary = "FedAvg (McMahan et al.): K clients uniformly, weighted ∝ their samples"
    study_entry = "fedavg"
    order = 5

    def pick(self, problem, rng):
        return rng.choice(problem.n, problem.k, replace=False)
