"""Synthetic round-stats tables shaped like the oracle's, for tests, benchmarks and examples.

Clients are spread evenly over the domains; each improves its own domain most and the others
by a domain-affinity factor; the pooled U is the mean of the per-domain utilities (equal
validation sets per domain, as the oracle uses); log F is drawn with a negative rank correlation
to U (the problem statement reports rho(F, U) = -0.55) and B nearly independent of F.

:func:`near_tied_stats` is a second, harder family for the exact routes: every client lifts its
own domain by ~30 points and hurts the next by ~10 around a common 50 %, with a few points of
noise and 2-decimal values, so many selections have nearly equal per-domain rows.

:func:`cross_penalty_stats` is a third family, built to be unlike both: unequal domain shares,
heavy-tailed (log-normal) client sizes, an own-domain lift that grows with the client's size,
strong penalties on unrelated domains and mild gains on the related one (the Digits-4 pairs
MNIST-USPS and SVHN-SYN), U pooled with sample weights (not the mean of the domain rows),
2-decimal values. :func:`hetero6_stats` is a fourth, from an independent model: six domains,
log-normal sizes, a ring of cross-domain penalties, many ties. :data:`FAMILIES` names the four.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from selection.schema import DEFAULT_DOMAINS, DEFAULT_SAMPLES_PER_CLIENT, LN2

__all__ = [
    "synthetic_stats",
    "near_tied_stats",
    "cross_penalty_stats",
    "hetero6_stats",
    "FAMILIES",
    "SAMPLES_PER_CLIENT",
]

# Digits-4 client sizes (1% of each domain's training set).
SAMPLES_PER_CLIENT = DEFAULT_SAMPLES_PER_CLIENT  # the Digits-4 sizes (selection.schema)
# How well an update from a row domain carries to a column domain (mnist, usps, svhn, syn).
_AFFINITY = np.array(
    [
        [1.00, 0.70, 0.15, 0.35],
        [0.75, 1.00, 0.12, 0.30],
        [0.30, 0.25, 1.00, 0.70],
        [0.40, 0.35, 0.60, 1.00],
    ]
)
_BASE = np.array([55.0, 45.0, 20.0, 30.0])  # accuracy of w_t on each domain, %


def synthetic_stats(
    n: int,
    *,
    domains: Sequence[str] = DEFAULT_DOMAINS,
    seed: int = 0,
    rounds: int = 1,
) -> pd.DataFrame:
    """A valid round-stats table of ``n`` clients per round.

    Args:
        n: clients per round (spread round-robin over the domains).
        domains: evaluation domains; the first four reuse the Digits-4 affinities.
        seed: seed of the table's own random stream.
        rounds: number of rounds (0..rounds-1), the base accuracy rising each round.

    Returns:
        DataFrame with the columns of the round-stats contract plus ``loss``.
    """
    if n <= 0 or rounds <= 0:
        raise ValueError(f"n={n} and rounds={rounds} must be positive")
    rng = np.random.default_rng(seed)
    D = len(domains)
    aff = np.full((D, D), 0.3) + 0.7 * np.eye(D)
    aff[: min(D, 4), : min(D, 4)] = _AFFINITY[: min(D, 4), : min(D, 4)]
    base = np.resize(_BASE, D)
    dom_idx = np.arange(n) % D
    rows = []
    for r in range(rounds):
        lift = 25.0 * (1 - np.exp(-0.5 * r))
        quality = rng.beta(2.0, 1.5, n)  # how useful each client's update is
        noise = rng.normal(0.0, 4.0, (n, D))
        room = 100.0 - (base + lift)
        Ud = (
            (base + lift)[None, :]
            + room[None, :]
            * (aff[dom_idx] * quality[:, None] * 0.8 - 0.15 * (1 - quality[:, None]))
            + noise
        )
        Ud = np.clip(Ud, 0.0, 100.0)
        U = Ud.mean(axis=1)
        zU = (U - U.mean()) / (U.std() + 1e-12)
        logF = 6.0 + 1.2 * (-0.6 * zU + 0.8 * rng.normal(size=n)) + 0.4 * dom_idx
        B = np.clip(rng.gamma(2.0, 0.03, n), 0.0, LN2)
        cos = np.clip(0.3 + 0.4 * zU / 3 + rng.normal(0.0, 0.2, n), -1.0, 1.0)
        for i in range(n):
            dname = domains[dom_idx[i]]
            size = SAMPLES_PER_CLIENT.get(dname, 300)
            row = {
                "round": r,
                "client_id": f"{dname}-{i // D}",
                "domain": dname,
                "n_samples": int(max(1, round(size * rng.uniform(0.9, 1.1)))),
                "U": float(U[i]),
                "F": float(np.exp(logF[i])),
                "B": float(B[i]),
                "cos_g": float(cos[i]),
                "loss": float(2.3 * (1 - U[i] / 100) + 0.1),
            }
            for j, dd in enumerate(domains):
                row[f"U_{dd}"] = float(Ud[i, j])
            rows.append(row)
    return pd.DataFrame(rows)


def near_tied_stats(n: int, *, seed: int = 0) -> pd.DataFrame:
    """A round whose per-domain rows are nearly tied (4 default domains, 2-decimal values).

    Clients are spread evenly over the domains (client i in domain i mod 4); every domain
    starts at 50 %, a client's own domain gains 30 points, the next domain loses 10, plus
    N(0, 3²) noise per domain, clipped to [0, 100] and rounded to 2 decimals; U is the mean
    of the per-domain values, rounded to 2 decimals. F, B, cos_g and sizes are those of
    :func:`synthetic_stats` (same ``n`` and ``seed``).
    """
    table = synthetic_stats(n, seed=seed).copy()
    rng = np.random.default_rng(1000 + seed)
    D = len(DEFAULT_DOMAINS)
    own = np.arange(n) % D
    Ud = np.full((n, D), 50.0)
    Ud[np.arange(n), own] += 30.0
    Ud[np.arange(n), (own + 1) % D] -= 10.0
    Ud = np.clip(Ud + rng.normal(0.0, 3.0, (n, D)), 0.0, 100.0).round(2)
    table["domain"] = [DEFAULT_DOMAINS[j] for j in own]
    table["client_id"] = [f"{DEFAULT_DOMAINS[j]}-{i // D}" for i, j in enumerate(own)]
    for j, d in enumerate(DEFAULT_DOMAINS):
        table[f"U_{d}"] = Ud[:, j]
    table["U"] = Ud.mean(axis=1).round(2)
    return table


# shares of the clients per domain (mnist, usps, svhn, syn) and the related-domain pairs
_SHARES = np.array([0.35, 0.15, 0.35, 0.15])
_RELATED = np.array([1, 0, 3, 2])
_BASE_CP = np.array([52.0, 48.0, 44.0, 46.0])
# U pooled over a validation set drawn like Digits-4's training data (600/72/732/100 per client)
_POOL_WEIGHTS = np.array([600.0, 72.0, 732.0, 100.0]) / 1504.0


def cross_penalty_stats(n: int, *, seed: int = 0) -> pd.DataFrame:
    """A round with heavy-tailed client sizes and strong cross-domain penalties (4 domains).

    Client i's domain is drawn with shares 35/15/35/15 %; its size is log-normal (median 150,
    σ = 1.2, at least 5). Every domain starts at 52, 48, 44, 46 %; a client lifts its own
    domain by 4 + 3·log(size/150)⁺ + 6·q points (q ~ Beta(2, 2)), moves the related one
    (MNIST-USPS, SVHN-SYN) by +0.3 of that and each unrelated one by −(3 + 6·q') points
    (q' ~ U(0, 1)), plus N(0, 1.5²) noise; values clipped to [0, 100] and rounded to 2
    decimals. U is pooled with the Digits-4 sample weights (600/72/732/100 per client), not
    the mean of the domain rows, and rounded to 2 decimals. F, B and cos_g are those of
    :func:`synthetic_stats`.
    """
    if n <= 0:
        raise ValueError(f"n={n} must be positive")
    table = synthetic_stats(n, seed=seed).copy()
    rng = np.random.default_rng(2000 + seed)
    D = len(DEFAULT_DOMAINS)
    own = rng.choice(D, size=n, p=_SHARES)
    sizes = np.maximum(5, np.round(150.0 * np.exp(rng.normal(0.0, 1.2, n)))).astype(np.int64)
    lift = 4.0 + 3.0 * np.maximum(np.log(sizes / 150.0), 0.0) + 6.0 * rng.beta(2.0, 2.0, n)
    Ud = np.tile(np.resize(_BASE_CP, D), (n, 1))
    rows = np.arange(n)
    penalty = 3.0 + 6.0 * rng.uniform(0.0, 1.0, (n, D))
    Ud -= penalty
    Ud[rows, own] += penalty[rows, own] + lift
    Ud[rows, _RELATED[own]] += penalty[rows, _RELATED[own]] + 0.3 * lift
    Ud = np.clip(Ud + rng.normal(0.0, 1.5, (n, D)), 0.0, 100.0).round(2)
    counts = np.zeros(D, dtype=np.int64)
    ids = []
    for j in own:
        ids.append(f"{DEFAULT_DOMAINS[j]}-{counts[j]}")
        counts[j] += 1
    table["domain"] = [DEFAULT_DOMAINS[j] for j in own]
    table["client_id"] = ids
    table["n_samples"] = sizes
    for j, d in enumerate(DEFAULT_DOMAINS):
        table[f"U_{d}"] = Ud[:, j]
    table["U"] = (Ud @ _POOL_WEIGHTS).round(2)
    return table


def hetero6_stats(n: int, *, seed: int = 0) -> pd.DataFrame:
    """A round over six domains ``d0`` … ``d5``, from a model unlike the other families'.

    Domain shares are Dirichlet(1); client i's domain is drawn with them and its size is
    log-normal (median e^3.5 ≈ 33, σ = 1, at least 5). Every domain starts at U(55, 85) %; a
    client of quality q ~ N(0, 1) moves domain j by 4q + 6·log10(size) (own domain only) − 3·r
    (r: the ring distance between its domain and j) + N(0, 2²) noise. Accuracies are measured
    on 80 validation images per domain (multiples of 1.25 %: many ties); U is the
    share-weighted mean of the domain rows (not their plain mean), 2 decimals.
    """
    if n <= 0:
        raise ValueError(f"n={n} must be positive")
    rng = np.random.default_rng(10_000 + seed)
    d = 6
    share = rng.dirichlet(np.ones(d))
    dom = rng.choice(d, size=n, p=share)
    size = np.maximum(5, np.rint(rng.lognormal(3.5, 1.0, n))).astype(int)
    quality = rng.normal(0, 1, n)
    base = rng.uniform(55, 85, d)
    ring = np.abs(np.arange(d)[None, :] - dom[:, None])
    ring = np.minimum(ring, d - ring)
    acc = (
        base[None, :]
        + 4 * quality[:, None]
        + 6 * (ring == 0) * np.log10(size)[:, None]
        - 3 * ring
        + rng.normal(0, 2, (n, d))
    )
    acc = np.clip(np.round(acc / 1.25) * 1.25, 0, 100)
    U = np.round(acc @ share, 2)
    return pd.DataFrame(
        {
            "round": 0,
            "client_id": [f"h{i}" for i in range(n)],
            "domain": [f"d{j}" for j in dom],
            "n_samples": size,
            "U": U,
            "F": rng.lognormal(0, 0.5, n),
            "B": rng.uniform(0, 0.3, n),
            "cos_g": rng.uniform(-0.2, 0.9, n),
            **{f"U_d{j}": acc[:, j] for j in range(d)},
        }
    )


#: the instance families of the benchmarks and the conformance tests, by name
FAMILIES = {
    "synthetic": lambda n, seed=0: synthetic_stats(n, seed=seed),
    "near-tied": lambda n, seed=0: near_tied_stats(n, seed=seed),
    "cross-penalty": lambda n, seed=0: cross_penalty_stats(n, seed=seed),
    "hetero6": lambda n, seed=0: hetero6_stats(n, seed=seed),
}
