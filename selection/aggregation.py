"""How much each picked client counts: the aggregation weights of a selection, a decision.

Training commits w_t + Σ_{i∈S} p_i Δ_i. Who trains (S) is one decision; the weights p_i are the
other, and the problem statement names it as its first dilemma (equal weight per domain raises
the small domains' share of the update). Every selector spec accepts ``agg=KIND``
(:func:`selection.specs.parse_spec`):

* ``samples``: p_i = n_i / Σ_{j∈S} n_j — FedAvg's sample weighting (the trainer's default);
* ``uniform``: p_i = 1/K — how Oort, power-of-choice, FedCor and clustered sampling average
  their picks in their authors' code;
* ``domain``: domain-balanced — each domain present in S gets 1/|D(S)| of the aggregate, split
  within the domain ∝ n_i;
* ``best``: not a rule but a choice among them, made every round jointly with S: the
  formulation solves over the pairs (S, w), w one of :data:`FAMILY` (the three rules above),
  with the surrogate's U_d(S, w) (:mod:`selection.aggregation_choice`); it needs a surrogate that
  models the aggregate (``weighted``, ``ensemble``, ``softvote``).

A spec without ``agg=`` aggregates as its selector does by default: a formulation by sample
weights, a baseline rule as its authors' code does
(:attr:`selection.baselines.base.Baseline.aggregation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np

from selection.errors import SelectionError

__all__ = [
    "Aggregation",
    "AggregationChoice",
    "FAMILY",
    "aggregation_forms",
    "aggregation_weights",
    "block_weights",
    "parse_aggregation",
    "pick_weights",
]


class Aggregation(StrEnum):
    """An aggregation rule's name (a ``str``: it compares and prints as its text).

    Examples:
        >>> Aggregation("domain") is Aggregation.DOMAIN, f"agg={Aggregation.SAMPLES}"
        (True, 'agg=samples')
    """

    SAMPLES = "samples"
    UNIFORM = "uniform"
    DOMAIN = "domain"


class AggregationChoice(StrEnum):
    """An ``agg=`` that names no rule but a choice among :data:`FAMILY`, made per round.

    Examples:
        >>> AggregationChoice("best"), [str(rule) for rule in FAMILY]
        (<AggregationChoice.BEST: 'best'>, ['samples', 'uniform', 'domain'])
    """

    BEST = "best"


#: the weighting rules ``agg=best`` chooses among, in the order that breaks exact ties
FAMILY: tuple[Aggregation, ...] = tuple(Aggregation)


def aggregation_forms() -> str:
    """Every ``agg=`` value, as a spec error lists them.

    Examples:
        >>> aggregation_forms()
        'samples|uniform|domain|best'
    """
    return "|".join([*Aggregation, *AggregationChoice])


def parse_aggregation(text: str) -> Aggregation | AggregationChoice:
    """The rule (or the choice ``best``) named ``text``; SelectionError naming the valid ones.

    Examples:
        >>> parse_aggregation("uniform"), parse_aggregation(" best")
        (<Aggregation.UNIFORM: 'uniform'>, <AggregationChoice.BEST: 'best'>)
        >>> parse_aggregation("median")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: aggregation 'median': one of samples, uniform, domain, best
    """
    word = str(text).strip()
    for kind in (Aggregation, AggregationChoice):
        try:
            return kind(word)
        except ValueError:
            continue
    names = aggregation_forms().replace("|", ", ")
    raise SelectionError(f"aggregation {text!r}: one of {names}")


def _rule(kind: Aggregation | str) -> Aggregation:
    """``kind`` as a weighting rule; SelectionError for ``best``, which is chosen per round."""
    kind = parse_aggregation(kind)
    if isinstance(kind, AggregationChoice):
        raise SelectionError(
            f"agg={kind} is chosen per round by a formulation (among "
            f"{', '.join(FAMILY)}); it gives no weights by itself"
        )
    return kind


def block_weights(
    kind: Aggregation | str,
    n_samples: np.ndarray,
    domains: np.ndarray,
    idx: np.ndarray,
    dtype: type = float,
) -> np.ndarray:
    """The weights p (M, K) of M selections given as index blocks ``idx`` (M, K), each row
    summing to 1, under the rule ``kind`` (what a surrogate of the aggregate combines).

    Args:
        kind: ``samples``, ``uniform`` or ``domain``.
        n_samples: every client's training-set size (N,).
        domains: every client's domain (N,), any labels.
        idx: the selections' client indices (M, K).
        dtype: the weights' float type (the ``ensemble`` surrogate sums in float32).

    Examples:
        >>> import numpy as np
        >>> n, d = np.array([600, 600, 72, 100]), np.array(["m", "m", "u", "s"])
        >>> block_weights("domain", n, d, np.array([[0, 1, 2], [0, 2, 3]])).round(4).tolist()
        [[0.25, 0.25, 0.5], [0.3333, 0.3333, 0.3333]]
        >>> block_weights("samples", n, d, np.array([[0, 2]])).round(4).tolist()
        [[0.8929, 0.1071]]
    """
    kind = _rule(kind)
    idx = np.asarray(idx, dtype=np.int64)
    if kind is Aggregation.UNIFORM:
        return np.full(idx.shape, 1.0 / idx.shape[1], dtype=dtype)
    n = np.asarray(n_samples).astype(dtype)[idx]
    if kind is Aggregation.SAMPLES:
        return n / n.sum(axis=1, keepdims=True)
    codes = np.unique(np.asarray(domains), return_inverse=True)[1].reshape(-1)[idx]
    within = np.empty_like(n)  # each pick's domain's size within its selection
    present = np.zeros(idx.shape[0], dtype=dtype)
    for c in np.unique(codes):
        own = codes == c
        size = (n * own).sum(axis=1)
        within[own] = np.broadcast_to(size[:, None], own.shape)[own]
        present += own.any(axis=1)
    return n / within / present[:, None]


def aggregation_weights(
    kind: Aggregation | str,
    ids: Sequence[str],
    n_samples: Sequence[float],
    domains: Sequence[str],
) -> dict[str, float]:
    """The weights of the picks ``ids`` (summing to 1) under the rule ``kind``.

    Args:
        kind: ``samples``, ``uniform`` or ``domain``.
        ids: the K picked client ids.
        n_samples: their training-set sizes (K,), aligned with ``ids``.
        domains: their domains (K,), aligned with ``ids``.

    Examples:
        >>> ids, n, d = ["a", "b", "c", "d"], [600, 600, 72, 100], ["m", "m", "u", "s"]
        >>> {c: round(w, 4) for c, w in aggregation_weights("samples", ids, n, d).items()}
        {'a': 0.4373, 'b': 0.4373, 'c': 0.0525, 'd': 0.0729}
        >>> aggregation_weights("uniform", ids, n, d)
        {'a': 0.25, 'b': 0.25, 'c': 0.25, 'd': 0.25}
        >>> {c: round(w, 4) for c, w in aggregation_weights("domain", ids, n, d).items()}
        {'a': 0.1667, 'b': 0.1667, 'c': 0.3333, 'd': 0.3333}
    """
    kind = _rule(kind)
    ids = [str(c) for c in ids]
    n = np.asarray(n_samples, dtype=float)
    if len(ids) == 0 or len(n) != len(ids) or len(domains) != len(ids):
        raise SelectionError(
            f"aggregation: {len(ids)} picks, {len(n)} sizes, {len(domains)} domains"
        )
    dom = np.asarray([str(d) for d in domains])
    w = block_weights(kind, n, dom, np.arange(len(ids))[None, :])[0]
    return {c: float(v) for c, v in zip(ids, w, strict=True)}


def pick_weights(kind: Aggregation | str, problem, ids: Sequence[str]) -> dict[str, float]:
    """:func:`aggregation_weights` of the picks ``ids`` of a
    :class:`~selection.problem.SelectionProblem` (their sizes and domains read from it).

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> problem = SelectionProblem.from_stats(example_stats(), k=3)
        >>> w = pick_weights("domain", problem, ["mnist-0", "mnist-1", "usps-3"])
        >>> {c: round(v, 3) for c, v in w.items()}
        {'mnist-0': 0.25, 'mnist-1': 0.25, 'usps-3': 0.5}
    """
    pos = {c: i for i, c in enumerate(problem.ids)}
    idx = np.array([pos[str(c)] for c in ids], dtype=np.int64)
    return aggregation_weights(kind, ids, problem.n_samples[idx], problem.client_domains[idx])
