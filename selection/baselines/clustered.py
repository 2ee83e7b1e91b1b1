"""``clustered:1``, ``clustered:2``: clustered sampling (Fraboni et al., ICML '21, Algorithms 1, 2).

With p_i = n_i / n and K draws, the clients' mass K·p_i, largest first, fills K distributions
r_1..r_K of mass 1 each in turn (a client whose mass crosses a boundary is split between two);
one client is drawn from each r_k, and the K updates are aggregated with weight 1/K each. Every
client's expected aggregation weight is then p_i (unbiased, as FedAvg's sampling) with a lower
variance than K independent draws ∝ p (the paper's Theorem 1).

What fedsel changes: a round commits K distinct clients, so a client already drawn from an
earlier distribution is not drawn again: the later distribution is drawn restricted to the
clients not yet picked (renormalized; from all the clients not yet picked ∝ p where it holds
none) and the picks are aggregated with 1/K each. The paper lets a client that straddles two
distributions be drawn twice, with weight 2/K. So here the expected weights are not exactly
p_i: on the Digits-4 sizes a client's expected weight moves from p_i by up to ±8 % at K = 5
and up to +20 % at K = 10 (``results/benchmarks/clustered_bias.md``, Monte Carlo error
≤ 0.033).

Algorithm 2 (``clustered:2``) groups the clients by the similarity of their representative
gradients, each client's latest update (fedsel: the update the server last committed from it;
``reads = "updates"``, which costs nothing beyond the training already paid). As the authors'
code does it: the angle arccos(cos(Δ_i, Δ_j)) between every two clients' updates, rows of that
matrix clustered by Ward's linkage (scipy); the tree cut into the largest subtrees whose mass
Σ p_i is at most 1/K; the K heaviest clusters each seed a distribution with mass K·p_i of its
clients, and the clients of the other clusters (lightest cluster first, a cluster's clients in
a random order) fill the distributions in turn up to mass 1 each (a client crossing a boundary
is split between two). Row sums are 1 and column sums K·p_i, as in Algorithm 1, so the
aggregation with 1/K each stays unbiased. A client never committed has no update: as in the
authors' code (``get_similarity``, ``distance_type="cosine"``: a zero representative gradient
returns 0.0), its angle to every client is 0, so in round 0 every client sits at angle 0 from
every other and the clusters are the tree of equal (zero) distances. What fedsel changes: the same distinct-client draws as
Algorithm 1; the distances are over the whole update (the authors' code takes the last two
parameter tensors).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.reads import Reads
from selection.errors import SelectionError


def size_distributions(n_samples: np.ndarray, k: int) -> np.ndarray:
    """The K distributions of Algorithm 1, shape (K, N): each row sums to 1, each column i to
    K·p_i; clients enter largest first (ties in index order)."""
    p = np.asarray(n_samples, dtype=float)
    p = p / p.sum()
    r = np.zeros((k, len(p)))
    pour(r, 0, np.argsort(-p, kind="stable"), k * p)
    return r


def pour(r: np.ndarray, row: int, clients, mass: np.ndarray) -> int:
    """Fill the clients' ``mass`` into the rows of ``r`` in turn from ``row``, each row up to
    mass 1 (a client crossing a boundary is split between two); returns the row reached."""
    k = len(r)
    room = 1.0 - float(r[row].sum()) if row < k else 0.0
    for i in clients:
        share = float(mass[i])
        while share > 1e-12 and row < k:
            take = min(share, room)
            r[row, i] += take
            share -= take
            room -= take
            if room <= 1e-12:
                row += 1
                room = 1.0 - float(r[row].sum()) if row < k else 0.0
    return row


def update_angles(vectors: np.ndarray) -> np.ndarray:
    """(N, N) angles arccos(cos(v_i, v_j)) in [0, π]; rows that are NaN or zero (no update
    known) are at angle 0 from every client, as the authors' code gives a zero gradient."""
    v = np.asarray(vectors, dtype=np.float64)
    known = np.isfinite(v).all(axis=1)
    norm = np.linalg.norm(np.where(known[:, None], v, 0.0), axis=1)
    known &= norm > 0
    u = np.where(known[:, None], np.nan_to_num(v) / np.where(norm > 0, norm, 1.0)[:, None], 0.0)
    angle = np.arccos(np.clip(u @ u.T, -1.0, 1.0))
    angle[~known, :] = angle[:, ~known] = 0.0
    np.fill_diagonal(angle, 0.0)
    return angle


def similarity_clusters(angles: np.ndarray, p: np.ndarray, k: int) -> list[list[int]]:
    """The clusters of Algorithm 2: Ward's tree of the angle matrix's rows cut into the largest
    subtrees of mass Σ p_i <= 1/K (a single client heavier than that is its own cluster)."""
    n = len(p)
    if n == 1:
        return [[0]]
    from scipy.cluster.hierarchy import ClusterWarning, linkage, to_tree  # the CLI starts without

    with warnings.catch_warnings():  # the rows are the observations, as the authors' code
        warnings.simplefilter("ignore", ClusterWarning)  # has it (not a condensed matrix)
        root = to_tree(linkage(angles, method="ward"))
    out: list[list[int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        members = node.pre_order()
        if node.is_leaf() or p[members].sum() <= 1.0 / k + 1e-12:
            out.append(sorted(members))
        else:
            stack += [node.get_right(), node.get_left()]
    return sorted(out)


def similarity_distributions(
    angles: np.ndarray, n_samples: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """The K distributions of Algorithm 2, shape (K, N): rows sum to 1, columns to K·p_i.

    A client with K·p_i >= 1 (heavier than a distribution) first fills ⌊K·p_i⌋ rows alone, as
    Algorithm 1 would; the rest of its mass joins its cluster."""
    p = np.asarray(n_samples, dtype=float)
    p = p / p.sum()
    mass = k * p
    r = np.zeros((k, len(p)))
    row = 0
    for i in np.flatnonzero(mass >= 1.0 - 1e-12):
        full = min(int(math.floor(mass[i] + 1e-12)), k - row)
        r[row : row + full, i] = 1.0
        row += full
        mass[i] = max(mass[i] - full, 0.0)
    clusters = [c for c in similarity_clusters(angles, p, k) if mass[c].sum() > 1e-12]
    weight = [float(mass[c].sum()) for c in clusters]
    order = sorted(range(len(clusters)), key=lambda j: (weight[j], j))
    kept = order[len(order) - (k - row) :] if k > row else []
    for j in kept:
        r[row, clusters[j]] = mass[clusters[j]]
        row += 1
    row = k - len(kept)
    for j in order[: len(order) - len(kept)]:
        row = pour(r, row, rng.permutation(clusters[j]), mass)
    return r


def draw_distinct(r: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One client from each row of ``r``, a client already drawn not drawn again (a row
    holding only drawn clients draws ∝ p among the others); sorted indices."""
    n = r.shape[1]
    picked: list[int] = []
    free = np.ones(n, dtype=bool)
    for row in r:
        w = np.where(free, row, 0.0)
        if w.sum() <= 0:
            w = np.where(free, p, 0.0)
        j = int(rng.choice(n, p=w / w.sum()))
        picked.append(j)
        free[j] = False
    return np.array(sorted(picked), dtype=np.int64)


@register
class ClusteredSampling(Baseline):
    name = "clustered"
    summary = (
        "clustered sampling (Fraboni et al. '21): K distributions by size (1) or by the "
        "similarity of the latest updates (2), one client from each, 1/K each"
    )
    arg = "alg"
    arg_example = "1"
    integer = True
    minimum = 1
    order = 75
    reads = "nothing (1) | updates (2)"  # per instance: see __init__

    def __init__(self, spec: str, value: float | None = None) -> None:
        super().__init__(spec, value)
        if value is None or int(value) not in (1, 2):
            raise SelectionError(
                f"{spec}: Algorithm {value!r}: clustered:1 (by sample size) or clustered:2 (by "
                "the similarity of the latest updates)"
            )
        self.algorithm = int(value)
        #: Algorithm 2 reads the updates the server last committed from each client
        self.reads = Reads.UPDATES if self.algorithm == 2 else Reads.NOTHING

    def distributions(self, problem, rng) -> np.ndarray:
        if self.algorithm == 1:
            return size_distributions(problem.n_samples, problem.k)
        if problem.vectors is None:
            raise SelectionError(f"{self.spec}: the round carries no update vectors")
        return similarity_distributions(
            update_angles(problem.vectors), problem.n_samples, problem.k, rng
        )

    def pick(self, problem, rng):
        r = self.distributions(problem, rng)
        return draw_distinct(r, problem.n_samples / problem.n_samples.sum(), rng)

    #: 1/K for each of the K drawn clients (the paper's aggregation, Algorithms 1 and 2)
    aggregation = "uniform"
