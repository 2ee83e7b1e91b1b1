"""How much each picked client counts: the aggregation weights of a selection, a decision.

Training commits w_t + Σ_{i∈S} p_i Δ_i. Who trains (S) is one decision; the weights p_i are the
other, and the problem statement names it as its first dilemma (equal weight per domain raises
the small domains' share of the update). Every selector spec accepts ``agg=KIND``
(:func:`selection.specs.parse_spec`):

* ``samples``: p_i = n_i / Σ_{j∈S} n_j — FedAvg's sample weighting (the trainer's default);
* ``uniform``: p_i = 1/K — how Oort, power-of-choice, FedCor and clustered sampling average
  their picks in their authors' code;
* ``domain``: domain-balanced — each domain present in S gets 1/|D(S)| of the aggregate, split
  within the domain ∝ n_i.

A spec without ``agg=`` aggregates as its selector does by default: a formulation by sample
weights, a baseline rule as its authors' code does
(:attr:`selection.baselines.base.Baseline.aggregation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np

from selection.errors import SelectionError

__all__ = ["Aggregation", "aggregation_weights", "parse_aggregation", "pick_weights"]


class Aggregation(StrEnum):
    """An aggregation rule's name (a ``str``: it compares and prints as its text)."""

    SAMPLES = "samples"
    UNIFORM = "uniform"
    DOMAIN = "domain"


def parse_aggregation(text: str) -> Aggregation:
    """The rule named ``text``; SelectionError naming the valid ones.

    Examples:
        >>> parse_aggregation("uniform")
        <Aggregation.UNIFORM: 'uniform'>
        >>> parse_aggregation("median")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: aggregation 'median': one of samples, uniform, domain
    """
    try:
        return Aggregation(str(text).strip())
    except ValueError:
        names = ", ".join(a.value for a in Aggregation)
        raise SelectionError(f"aggregation {text!r}: one of {names}") from None


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
    kind = parse_aggregation(kind)
    ids = [str(c) for c in ids]
    n = np.asarray(n_samples, dtype=float)
    if len(ids) == 0 or len(n) != len(ids) or len(domains) != len(ids):
        raise SelectionError(
            f"aggregation: {len(ids)} picks, {len(n)} sizes, {len(domains)} domains"
        )
    if kind is Aggregation.UNIFORM:
        w = np.full(len(ids), 1.0 / len(ids))
    elif kind is Aggregation.SAMPLES:
        w = n / n.sum()
    else:
        dom = np.asarray([str(d) for d in domains])
        present = list(dict.fromkeys(dom))
        w = np.empty(len(ids))
        for d in present:
            own = dom == d
            w[own] = n[own] / n[own].sum() / len(present)
    return {c: float(v) for c, v in zip(ids, w, strict=True)}


def pick_weights(kind: Aggregation | str, problem, ids: Sequence[str]) -> dict[str, float]:
    """:func:`aggregation_weights` of the picks ``ids`` of a
    :class:`~selection.problem.SelectionProblem` (their sizes and domains read from it)."""
    pos = {c: i for i, c in enumerate(problem.ids)}
    idx = np.array([pos[str(c)] for c in ids], dtype=np.int64)
    return aggregation_weights(kind, ids, problem.n_samples[idx], problem.client_domains[idx])
