"""Accuracies from per-sample hits: the per-domain and pooled accuracy of a model, and the
utilities U, U_<domain> of candidate updates (their accuracy on the validation sets)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["accuracy_metrics", "candidate_utilities"]


def accuracy_metrics(hits, sizes, domains: Sequence[str]) -> dict[str, float]:
    """``acc_<domain>``, ``acc_pooled``, ``acc_avg``, ``acc_worst`` (%) from correct counts.

    Args:
        hits: correct predictions per domain, shape (D,).
        sizes: evaluated samples per domain, shape (D,).
        domains: the D domain names.

    Examples:
        8 of 10 mnist and 3 of 5 usps samples right: pooled 11 / 15, the mean of 80 and 60:

        >>> import numpy as np
        >>> from fl_oracle.sim.utilities import accuracy_metrics
        >>> metrics = accuracy_metrics(np.array([8, 3]), np.array([10, 5]), ["mnist", "usps"])
        >>> {key: round(v, 2) for key, v in metrics.items()}
        {'acc_mnist': 80.0, 'acc_usps': 60.0, 'acc_pooled': 73.33, 'acc_avg': 70.0,
         'acc_worst': 60.0}
    """
    acc = 100.0 * hits / sizes
    out = {f"acc_{d}": float(a) for d, a in zip(domains, acc, strict=True)}
    out["acc_pooled"] = float(100.0 * hits.sum() / sizes.sum())
    out["acc_avg"] = float(acc.mean())
    out["acc_worst"] = float(acc.min())
    return out


def candidate_utilities(
    hits: np.ndarray, sizes: np.ndarray, hits0: np.ndarray, domains: Sequence[str]
) -> dict[str, np.ndarray]:
    """U, ``U_<domain>`` and dU (%) of M candidates from their correct counts.

    Args:
        hits: (M, D) correct predictions of each candidate w_t + Δ_i per domain.
        sizes: (D,) validation samples per domain.
        hits0: (D,) correct predictions of w_t itself.
        domains: the D domain names.

    U pools the domains' validation samples (the mean of U_d on equal sets); dU = U − U(w_t).

    Examples:
        Two candidates on 10 mnist and 5 usps samples; w_t itself gets 7 + 3 of 15 right:

        >>> import numpy as np
        >>> from fl_oracle.sim.utilities import candidate_utilities
        >>> out = candidate_utilities(np.array([[9, 3], [6, 4]]), np.array([10, 5]),
        ...                           np.array([7, 3]), ["mnist", "usps"])
        >>> {key: v.round(2).tolist() for key, v in out.items()}
        {'U': [80.0, 66.67], 'U_mnist': [90.0, 60.0], 'U_usps': [60.0, 80.0],
         'dU': [13.33, 0.0]}
    """
    Ud = 100.0 * hits / sizes
    U = 100.0 * hits.sum(1) / sizes.sum()
    out = {"U": U}
    for j, d in enumerate(domains):
        out[f"U_{d}"] = Ud[:, j]
    out["dU"] = U - 100.0 * hits0.sum() / sizes.sum()
    return out
