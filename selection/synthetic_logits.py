"""Synthetic validation logits beside a synthetic round-stats table: the ``ensemble`` surrogate
at sizes the simulator's trained rounds do not reach on this machine.

:func:`synthetic_logits` takes the clients of :func:`selection.synthetic.synthetic_stats` and
draws, for every client i and validation sample s (``samples_per_domain`` per domain, labels
uniform over ``classes``), the class t_is the client's model believes:

* the label with probability sigmoid(logit(a_id) + κ·(1/2 − h_s)), where a_id = U_id / 100 is
  the table's accuracy of client i on the sample's domain d and h_s ~ U(0, 1) the sample's
  hardness, shared by every client (κ = ``hardness``: hard samples are missed together, as
  trained models' errors are correlated);
* otherwise the sample's one confusable class (shared by every client, ``confusion`` of the
  misses) or a uniformly drawn wrong class;

then z_is = ``margin``·onehot(t_is) + N(0, 1) noise per class, stored as float16. The table's
U_<domain> and U are then set to what these logits give (each client's own accuracy on each
domain's samples, and pooled), so statistics and logits agree as the oracle's do. Everything
is drawn from ``np.random.default_rng(seed)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from selection.logits import ValidationLogits
from selection.synthetic import synthetic_stats

__all__ = ["synthetic_logits"]


def synthetic_logits(
    n: int,
    *,
    seed: int = 0,
    samples_per_domain: int = 200,
    classes: int = 10,
    hardness: float = 3.0,
    confusion: float = 0.6,
    margin: float = 4.0,
) -> tuple[pd.DataFrame, ValidationLogits]:
    """A one-round table of ``n`` clients and its validation logits (module docstring).

    Returns:
        (table, logits): the round-stats table (U columns measured on the logits) and the
        :class:`~selection.logits.ValidationLogits` of its round, z of shape
        (n, D·samples_per_domain, classes).
    """
    if n <= 0 or samples_per_domain <= 0 or classes < 2:
        raise ValueError(
            f"n={n}, samples_per_domain={samples_per_domain} and classes={classes} must be "
            "positive (classes >= 2)"
        )
    table = synthetic_stats(n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    domains = tuple(c[2:] for c in table.columns if c.startswith("U_"))
    D, C = len(domains), int(classes)
    S = D * samples_per_domain
    dom = np.repeat(np.arange(D), samples_per_domain)
    y = rng.integers(0, C, S)
    confusable = (y + rng.integers(1, C, S)) % C  # one wrong class per sample
    hard = rng.uniform(0.0, 1.0, S)
    acc = np.clip(table[[f"U_{d}" for d in domains]].to_numpy() / 100.0, 1e-3, 1 - 1e-3)
    logit = np.log(acc / (1 - acc))[:, dom] + hardness * (0.5 - hard)[None, :]  # (n, S)
    right = rng.uniform(size=(n, S)) < 1.0 / (1.0 + np.exp(-logit))
    shared = rng.uniform(size=(n, S)) < confusion
    other = (y[None, :] + rng.integers(1, C, (n, S))) % C
    t = np.where(right, y[None, :], np.where(shared, confusable[None, :], other))
    z = rng.normal(size=(n, S, C))
    np.put_along_axis(z, t[:, :, None], margin + np.take_along_axis(z, t[:, :, None], 2), 2)
    z = z.astype(np.float16)
    hit = z.astype(np.float32).argmax(axis=2) == y[None, :]
    for j, d in enumerate(domains):
        table[f"U_{d}"] = 100.0 * hit[:, dom == j].mean(axis=1)
    table["U"] = 100.0 * hit.mean(axis=1)
    ids = table["client_id"].to_numpy(str)
    return table, ValidationLogits(0, ids, z, y, dom, domains)
