"""What a baseline rule reads of the clients, and whose update vectors: the one vocabulary the
rules (``Baseline.reads``), the cost model, the oracle (``Oracle.update_vectors``) and the
Flower strategy share.

A deployment pays for what a rule reads: nothing beyond sizes, a probe pass (of every client,
of the candidates it drew, of its picks), or update vectors (the ones the server already
committed, each client's gradient at the model it last received, every client's probe-batch
gradient, every client trained at w_t).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Reads", "VectorSource", "VECTOR_READS", "PROBES_EVERY_CLIENT"]


class Reads(StrEnum):
    """What a rule reads of the clients (``Baseline.reads``), as a deployment pays it.

    Examples:
        >>> from selection.baselines import baselines
        >>> from selection.baselines.reads import Reads
        >>> baselines()["fisher-topk"].reads is Reads.PROBE, Reads("probe-picks")
        (True, <Reads.PROBE_PICKS: 'probe-picks'>)
    """

    NOTHING = "nothing"  # sizes only
    PROBE = "probe"  # a probe pass of every client: F or loss at w_t
    PROBE_CANDIDATES = "probe-candidates"  # of the candidates it drew
    PROBE_PICKS = "probe-picks"  # of its picks
    UPDATES = "updates"  # the update the server last committed from each client
    #: each client's probe-batch gradient at the model it last received: every client's at the
    #: rule's first round, its picks' (trained at w_t) at every round after
    PARTIAL_GRADIENTS = "partial-gradients"
    PROBE_GRADIENTS = "probe-gradients"  # every client's model-sized probe-batch gradient
    FRESH_UPDATES = "fresh-updates"  # every client trains at w_t


class VectorSource(StrEnum):
    """Whose update vectors a rule sees (``Oracle.update_vectors``, ``divfl:SOURCE``).

    Examples:
        >>> from selection.baselines.reads import VECTOR_READS, Reads, VectorSource
        >>> VECTOR_READS[Reads.UPDATES] is VectorSource.STALE, [str(s) for s in VectorSource]
        (True, ['stale', 'partial', 'probe', 'fresh'])
    """

    STALE = "stale"  # the update last committed from each client (NaN rows: never committed)
    #: minus each client's probe-batch gradient at the model it last received (DivFL's partial
    #: gradients: every client's at the first read, the committed clients' at each step)
    PARTIAL = "partial"
    PROBE = "probe"  # minus each client's mean gradient on its probe batch at w_t
    FRESH = "fresh"  # every client's update at w_t (the upper bound: N trainings)


#: the reads that give a rule the clients' update vectors, and whose
VECTOR_READS: dict[Reads, VectorSource] = {
    Reads.UPDATES: VectorSource.STALE,
    Reads.PARTIAL_GRADIENTS: VectorSource.PARTIAL,
    Reads.PROBE_GRADIENTS: VectorSource.PROBE,
    Reads.FRESH_UPDATES: VectorSource.FRESH,
}

#: the reads whose probe pass runs on every client
PROBES_EVERY_CLIENT = (Reads.PROBE, Reads.PROBE_GRADIENTS)
