"""The sampling rules of the baselines: FedAvg's proportional draw and the domain quota.

Also used by the oracle's measuring sampler (``fedsel oracle --k``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["proportional_sample", "stratified_sample"]


def proportional_sample(n_samples: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """K distinct indices drawn without replacement with probability ∝ n_samples (FedAvg's
    client sampling), sorted ascending.

    Args:
        n_samples: shape (N,), client training-set sizes (> 0).
        k: how many, 1 <= k <= N.
        rng: the caller's generator (one draw of ``rng.choice``).
    """
    n = np.asarray(n_samples, dtype=float)
    return np.sort(rng.choice(len(n), k, replace=False, p=n / n.sum()))


def stratified_sample(
    domains: np.ndarray, n_samples: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """K indices with a quota per domain, drawn ∝ n_samples within each domain, sorted.

    Every domain gets ⌊K/D⌋ clients (fewer if it has fewer); the remaining slots go to domains
    with clients left, drawn without replacement ∝ the domain's total samples. Within a domain
    the clients are drawn without replacement ∝ n_samples (:func:`proportional_sample`).

    Args:
        domains: shape (N,), each client's domain.
        n_samples: shape (N,), client training-set sizes.
        k: how many, 1 <= k <= N.
        rng: the caller's generator.
    """
    domains = np.asarray(domains)
    n = np.asarray(n_samples, dtype=float)
    names = list(dict.fromkeys(domains.tolist()))  # first-seen order: deterministic
    members = [np.flatnonzero(domains == d) for d in names]
    quota = np.array([min(k // len(names), len(m)) for m in members])
    while quota.sum() < k:
        spare = [i for i, m in enumerate(members) if quota[i] < len(m)]
        weight = np.array([n[members[i]].sum() for i in spare])
        extra = rng.choice(
            len(spare),
            min(k - int(quota.sum()), len(spare)),
            replace=False,
            p=weight / weight.sum(),
        )
        for j in extra:
            quota[spare[j]] += 1
    picks = [m[proportional_sample(n[m], q, rng)] for m, q in zip(members, quota, strict=True) if q]
    return np.sort(np.concatenate(picks))
