"""``clustered:1``: clustered sampling by sample size (Fraboni et al., ICML '21, Algorithm 1).

With p_i = n_i / n and K draws, the clients' mass K·p_i, largest first, fills K distributions
r_1..r_K of mass 1 each in turn (a client whose mass crosses a boundary is split between two);
one client is drawn from each r_k, and the K updates are aggregated with weight 1/K each. Every
client's expected aggregation weight is then p_i (unbiased, as FedAvg's sampling) with a lower
variance than K independent draws ∝ p (the paper's Theorem 1).

What fedsel changes: a round commits K distinct clients, so a client already drawn from an
earlier distribution is not drawn again: the later distribution is drawn restricted to the
clients not yet picked (renormalized; from all the clients not yet picked ∝ p where it holds
none) and the picks are aggregated with 1/K each. The paper lets a client that straddles two
distributions be drawn twice, with weight 2/K. Algorithm 2 (clustering by the latest updates)
needs the clients' update vectors, which fedsel's rules do not see yet: not built.
"""

from __future__ import annotations

import numpy as np

from selection.baselines.base import Baseline, register
from selection.errors import SelectionError


def size_distributions(n_samples: np.ndarray, k: int) -> np.ndarray:
    """The K distributions of Algorithm 1, shape (K, N): each row sums to 1, each column i to
    K·p_i; clients enter largest first (ties in index order)."""
    p = np.asarray(n_samples, dtype=float)
    p = p / p.sum()
    order = np.argsort(-p, kind="stable")
    r = np.zeros((k, len(p)))
    row, room = 0, 1.0
    for i in order:
        mass = k * p[i]
        while mass > 1e-12 and row < k:
            take = min(mass, room)
            r[row, i] += take
            mass -= take
            room -= take
            if room <= 1e-12:
                row, room = row + 1, 1.0
    return r


@register
class ClusteredSampling(Baseline):
    name = "clustered"
    summary = (
        "clustered sampling (Fraboni et al. '21), Algorithm 1: K distributions by size, 1/K each"
    )
    arg = "alg"
    arg_example = "1"
    integer = True
    minimum = 1
    order = 75

    def __init__(self, spec: str, value: float | None = None) -> None:
        super().__init__(spec, value)
        if value is None or int(value) != 1:
            raise SelectionError(
                f"{spec}: Algorithm {value!r} is not built; clustered:1 (by sample size) is "
                "(Algorithm 2 clusters the clients' latest updates, which rules do not see yet)"
            )

    def pick(self, problem, rng):
        n, k = problem.n, problem.k
        r = size_distributions(problem.n_samples, k)
        p = problem.n_samples / problem.n_samples.sum()
        picked: list[int] = []
        free = np.ones(n, dtype=bool)
        for row in r:
            w = np.where(free, row, 0.0)
            if w.sum() <= 0:  # this distribution holds only clients already picked
                w = np.where(free, p, 0.0)
            j = int(rng.choice(n, p=w / w.sum()))
            picked.append(j)
            free[j] = False
        return np.array(sorted(picked), dtype=np.int64)

    def aggregation_weights(self, problem, ids) -> dict[str, float]:
        """1/K for each of the K drawn clients (the paper's aggregation)."""
        return {str(c): 1.0 / len(ids) for c in ids}
