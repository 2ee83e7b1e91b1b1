"""``power-of-choice:d``: d candidates ∝ n_samples, then the K with the highest loss.

Aggregation as the authors run it: the picks are averaged equally, w_{t+1} = (1/K) Σ_{k∈S} w_k
(Cho, Wang & Joshi, "Client selection in federated learning: convergence analysis and
power-of-choice selection strategies", 2020, the global update of their Section 3; and the
pow-d of the FedCor repository, ``src/federated_main.py``, which averages the picks with
``average_weights(local_weights[idxs_users], omega=None)``, ``src/utils.py``'s equal-weight
branch). ``power-of-choice:d@agg=samples`` runs it with sample weights (an ablation).
"""

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
    aggregation = "uniform"

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
