"""``divfl:SOURCE``: diverse client selection by submodular facility location (Balakrishnan et
al., ICLR '22, "Diverse Client Selection for Federated Learning via Submodular Maximization").

The paper picks the K clients whose gradients best represent everyone's — the subset whose
gradients approximate the full aggregate gradient with the smallest error bound, a facility-
location problem: with the clients' update vectors g_i and d_ij = ||g_i − g_j||,

    min_{|S| = K}  Σ_{i ∈ [N]} min_{j ∈ S} d_ij,

i.e. max of the facility-location function G(S) = Σ_i (d_0 − min_{j ∈ S} d_ij), d_0 the largest
distance (G(∅) = 0, monotone submodular), solved by **stochastic greedy** (Mirzasoleiman et
al., AAAI '15, the solver the paper uses): K steps, each drawing ⌈(N/K)·ln(1/ε)⌉ of the clients
not yet picked (ε = 0.01) and adding the one of largest marginal gain Σ_i max(m_i − d_ij, 0),
m_i the current min_{j ∈ S} d_ij (ties drawn uniformly). Aggregation is FedAvg's.

``SOURCE`` names the vectors:

* ``stale`` — the official communication-efficient variant, "partial gradients"
  (github.com/melodi-lab/divfl, ``flearn/trainers/fedavg.py``): each client's gradient at the
  model it last received. At round 0 the server collects every client's gradient at w_0
  (lines 60-63: ``show_grads``, ``fedbase.py`` lines 62-93, every client's ``get_grads``), and
  from then on only the picks', each computed at the model the pick received before its local
  training (``fedavg.py`` lines 114, 121: the gradient ``solve_inner`` returns,
  ``flearn/models/nist/cnn.py`` lines 96-99, taken before the epochs), the distances of the picks'
  rows refreshed (lines 132-133). fedsel takes the gradient on the client's probe batch, where
  the official code takes it on the client's whole training set, and keeps minus it (as
  ``probe``'s; distances do not see the sign). ``reads = partial-gradients``: a probe pass of
  every client with a model-sized upload each at the rule's first round, of the picks at every
  round after (``probed_by``);
* ``probe`` — every client's mean gradient on its probe batch at w_t (exactly the quantity of
  the paper's analysis, ∇f_i(w_t), on a probe batch; ``reads = probe-gradients``: a probe pass
  of every client, each uploading a model-sized vector);
* ``fresh`` — every client's local update at w_t (the paper's upper bound: every client trains
  every round; ``reads = fresh-updates``, charged N trainings);
* ``updates`` — fedsel's earlier ``divfl:stale``: each client's last update the server committed
  (``reads = updates``, nothing paid beyond the picks' training), whose size grows with the
  client's local steps. A client never committed has no vector: it is at distance d_0 from
  every other client (so it covers only itself, and round 0, where no client has one, draws
  uniformly). The results committed under ``divfl:stale`` before the partial gradients came
  from it.

What fedsel changes, having no system heterogeneity: nothing in the selection; the paper's
experiments sample the ground set per round from the available devices, here every client is
available. The official partial-gradient run selects by lazy greedy (``fedavg.py`` line 64,
``stochastic_greedy = False``); fedsel by the paper's stochastic greedy.
"""

from __future__ import annotations

import math

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.reads import Reads, VectorSource
from selection.errors import SelectionError

#: ``divfl:SOURCE`` -> what the rule reads (whose vectors: ``reads.VECTOR_READS``)
SOURCES = {
    "stale": Reads.PARTIAL_GRADIENTS,
    "probe": Reads.PROBE_GRADIENTS,
    "fresh": Reads.FRESH_UPDATES,
    "updates": Reads.UPDATES,
}
EPSILON = 0.01  # stochastic greedy's sample size (N/K) ln(1/ε)


def update_distances(vectors: np.ndarray) -> np.ndarray:
    """(N, N) Euclidean distances between update vectors; a NaN row (no update known) is at
    the largest known distance (1 where none is known) from every other client."""
    v = np.asarray(vectors, dtype=np.float64)
    known = np.isfinite(v).all(axis=1)
    x = np.where(known[:, None], np.nan_to_num(v), 0.0)
    sq = (x * x).sum(axis=1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * (x @ x.T), 0.0))
    both = known[:, None] & known[None, :]
    far = float(d[both].max()) if both.any() and d[both].max() > 0 else 1.0
    d[~both] = far
    np.fill_diagonal(d, 0.0)
    return d


def stochastic_greedy(
    d: np.ndarray, k: int, rng: np.random.Generator, epsilon: float = EPSILON
) -> np.ndarray:
    """K clients by stochastic greedy on the facility location of distances ``d`` (sorted)."""
    n = len(d)
    size = min(n, max(1, math.ceil(n / k * math.log(1.0 / epsilon))))
    m = np.full(n, float(d.max()))  # min distance to the selection; d_0 before any pick
    free = np.ones(n, dtype=bool)
    picked: list[int] = []
    for _ in range(k):
        pool = np.flatnonzero(free)
        if len(pool) > size:
            pool = np.sort(rng.choice(pool, size, replace=False))
        gain = np.maximum(m[:, None] - d[:, pool], 0.0).sum(axis=0)
        best = np.flatnonzero(gain >= gain.max() - 1e-12 * max(1.0, abs(gain.max())))
        j = int(pool[best[0] if len(best) == 1 else rng.choice(best)])
        picked.append(j)
        free[j] = False
        m = np.minimum(m, d[:, j])
    return np.array(sorted(picked), dtype=np.int64)


@register
class DivFL(Baseline):
    name = "divfl"
    summary = (
        "DivFL: stochastic-greedy facility location over the clients' update vectors "
        "(stale: gradients at the model each last received, all at round 0; probe: probe "
        "gradients at w_t; fresh: every client trains, the upper bound, not counted; "
        "updates: last committed updates)"
    )
    arg = "source"
    arg_example = "stale"
    choices = tuple(SOURCES)
    order = 80
    reads = "partial-gradients | probe-gradients | fresh-updates | updates"  # by the source

    @classmethod
    def counts_as_baseline(cls, arg: str | None) -> bool:
        """``divfl:fresh`` is the paper's upper bound (N trainings a round), not a baseline to
        beat at a deployment's cost; the study reports it as a reference."""
        return arg != VectorSource.FRESH

    def __init__(self, spec: str, value: str | None = None) -> None:
        super().__init__(spec, value)
        if value not in SOURCES:
            raise SelectionError(f"{spec}: source {value!r}: one of {', '.join(SOURCES)}")
        self.source = str(value)
        self.reads = SOURCES[self.source]
        if self.reads in (Reads.PROBE_GRADIENTS, Reads.PARTIAL_GRADIENTS):
            self.probe_floats = Baseline.MODEL_SIZED
            self.reports = ()
        self.rounds = 0  # rounds picked so far

    def probed_by(self, n: int, picked: np.ndarray) -> np.ndarray:
        """The partial gradients' probe passes: every client at the rule's first round, the
        picks (their gradient at w_t, the model they train from) at every round after."""
        if self.reads == Reads.PARTIAL_GRADIENTS:
            return np.arange(n) if self.rounds == 1 else np.asarray(picked, dtype=np.int64)
        return super().probed_by(n, picked)

    def pick(self, problem, rng):
        if problem.vectors is None:
            raise SelectionError(f"{self.spec}: the round carries no update vectors")
        self.rounds += 1
        if self.reads == Reads.PARTIAL_GRADIENTS:
            unknown = ~np.isfinite(problem.vectors).all(axis=1)
            if unknown.any():  # every client's gradient is collected at round 0
                raise SelectionError(
                    f"{self.spec}: no partial gradient of client "
                    f"{problem.ids[int(np.flatnonzero(unknown)[0])]} (the transport keeps none)"
                )
        return stochastic_greedy(update_distances(problem.vectors), problem.k, rng)
