"""Deployment cost: what one round of a selector costs the clients, as a deployment pays it.

Kept apart from what the simulator computes for its own ground truth (the oracle may train
every client to measure what a selection realizes; a deployment pays only for what the
selector reads). Per round:

* ``cost_train_samples`` — sample-gradient evaluations of local training, summed over the
  clients that trained (steps × batch; the oracle's batches are always full; plus the
  probe-set gradients of γ-inexact checks when γ > 0);
* ``cost_probe_samples`` — sample evaluations of statistics computed without training (a
  forward and backward pass on a client's probe batch counts once per sample);
* ``cost_bytes_down`` — one model-sized message (parameter count × dtype size) to every client
  that trains or probes;
* ``cost_bytes_up`` — one model-sized update from every client that trained, plus the
  statistics each client uploads (float32: ``TRAIN_FLOATS`` per trained client — its sample
  count and loss — and the information model's or rule's floats per probed client).

Who trains and who probes follows the information model (:mod:`selection.information`):
``fresh`` — every client trains (the committed reuse their updates) and probes; ``pool:P`` —
the P candidates; ``stale`` — the K committed (every client in round 0, when nothing was
reported yet); ``probe`` and ``predicted`` — every client probes, the K committed train. A
baseline rule without an information model is charged for what the rule reads
(``Baseline.reads``): ``proportional``, ``random``, ``stratified``, ``all`` nothing beyond
the training of their picks; ``fisher-topk`` a probe pass of every client; ``power-of-choice:d``
the d candidates' losses; ``qffl:q`` and ``oort:eps`` the picks' losses; ``fedcor:W`` (as
published) a probe pass of every client in the rounds that begin or end a loss change its
Gaussian process keeps (warm-up and update rounds), nothing beyond training otherwise;
``fedcor-lw:W`` a probe pass of every client every round; ``clustered:2`` and
``divfl:updates`` nothing beyond their picks' training (the server kept the updates it
aggregated); ``divfl:stale`` a model-sized gradient at the model received, from every client
in round 0 and from its picks afterwards; ``divfl:probe`` a probe pass of every client with a
model-sized gradient upload each; ``divfl:fresh`` the training of every client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["COST_COLUMNS", "FLOAT_BYTES", "TRAIN_FLOATS", "upload_floats", "round_cost"]

COST_COLUMNS = ("cost_train_samples", "cost_probe_samples", "cost_bytes_up", "cost_bytes_down")
TRAIN_FLOATS = 2  # a trained client's sample count and loss beside its update
FLOAT_BYTES = 4


def upload_floats(*, trained: bool, probe_floats: int) -> int:
    """Numbers one client uploads beside its update in a round: ``TRAIN_FLOATS`` when it
    trained, and ``probe_floats`` (the information model's or the rule's) when it probed. The
    one rule both drivers charge by (:func:`round_cost`; Flower's
    :class:`~fl_oracle.experiments.flower.codec.MessageCost` per reply).

    Examples:
        >>> from fl_oracle.experiments.cost import upload_floats
        >>> upload_floats(trained=True, probe_floats=5)  # sample count and loss, 5 statistics
        7
        >>> upload_floats(trained=True, probe_floats=0)  # trained, reported no statistics
        2
        >>> upload_floats(trained=False, probe_floats=3)  # probed only
        3
    """
    return (TRAIN_FLOATS if trained else 0) + int(probe_floats)


def round_cost(
    *,
    trained: Mapping[str, int],
    probed: Iterable[str],
    probe_sizes: Mapping[str, int],
    probe_floats: int,
    model_bytes: int,
    down_messages: int | None = None,
) -> dict[str, int]:
    """The four cost columns of one round.

    Args:
        trained: client id -> sample-gradient evaluations of its local training this round.
        probed: ids of the clients that ran the probe pass.
        probe_sizes: client id -> samples in its probe batch.
        probe_floats: numbers each probed client uploads.
        model_bytes: bytes of one model-sized message.
        down_messages: model-sized messages sent down (default: one to every client that
            trains or probes; the information model's ``down_messages`` otherwise).

    Examples:
        Clients a and b trained (64 and 32 sample gradients), a, b and c probed 8 samples
        each and uploaded 3 statistics; a model message is 1000 bytes:

        >>> from fl_oracle.experiments.cost import round_cost
        >>> round_cost(
        ...     trained={"a": 64, "b": 32},
        ...     probed=["a", "b", "c"],
        ...     probe_sizes={"a": 8, "b": 8, "c": 8},
        ...     probe_floats=3,
        ...     model_bytes=1000,
        ... )  # up: 2 updates + 4 bytes x (2 x (2 + 3) + 3) floats; down: 3 models
        {'cost_train_samples': 96, 'cost_probe_samples': 24, 'cost_bytes_up': 2052,
         'cost_bytes_down': 3000}
    """
    probed = set(probed)
    if down_messages is None:
        down_messages = len(set(trained) | probed)
    return {
        "cost_train_samples": int(sum(trained.values())),
        "cost_probe_samples": int(sum(probe_sizes[c] for c in probed)),
        "cost_bytes_up": int(
            model_bytes * len(trained)
            + FLOAT_BYTES
            * sum(
                upload_floats(trained=c in trained, probe_floats=probe_floats if c in probed else 0)
                for c in set(trained) | probed
            )
        ),
        "cost_bytes_down": int(model_bytes * down_messages),
    }
