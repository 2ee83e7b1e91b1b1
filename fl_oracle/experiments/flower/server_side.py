"""What the server holds beside the nodes, for :class:`~.strategy.FedselStrategy`: one object
instead of five constructor arguments.

A deployment's server may hold validation data per domain (to evaluate candidate updates, to
compute the probe phase's validation gradients, to measure the global model) and the partition
(each client's size, each client's planned local steps). Every field is optional: without it
the nodes report what the server would have computed, and the checks that need it are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ServerSide"]


@dataclass(frozen=True)
class ServerSide:
    """The server-side callbacks and knowledge of a Flower run.

    Attributes:
        evaluate_candidates: ``(w_t, deltas (M, P)) -> {column: (M,) values}`` giving at least
            ``U`` and ``U_<domain>`` on server-held validation data; None = the nodes report
            them.
        evaluate_global: ``w -> {"acc_<domain>": %, ...}`` test accuracy of a model for the
            history (None = no accuracy columns).
        validation_gradients: ``w -> (grads (D, P), {domain: accuracy %}, {domain: size})``,
            the server's per-domain validation gradients, accuracy and sizes at w: what the
            ``probe`` and ``predicted`` phases send and calibrate with.
        declared_sizes: each client id's known training-set size (the deployment's
            partition); a node claiming more ``num-examples`` is capped to it. Without it a
            claim far beyond the federation's others is capped (:mod:`.guard`).
        max_steps: ``(client id, n) -> the local steps the client's plan allows`` (checks a
            reply's claimed steps; None: not checked).

    Examples:
        >>> import numpy as np
        >>> from fl_oracle.experiments.flower.server_side import ServerSide
        >>> server = ServerSide(evaluate_global=lambda w: {"acc_a": float(w.sum())})
        >>> server.evaluate_global(np.ones(3)), server.calibrates
        ({'acc_a': 3.0}, False)
        >>> ServerSide(evaluate_candidates=lambda w, d: {}, validation_gradients=lambda w: ()
        ...     ).calibrates  # what the probe phase needs
        True
    """

    evaluate_candidates: Callable[[np.ndarray, np.ndarray], Mapping[str, Any]] | None = None
    evaluate_global: Callable[[np.ndarray], Mapping[str, float]] | None = None
    validation_gradients: Callable[[np.ndarray], tuple] | None = None
    declared_sizes: Mapping[str, int] | None = None
    max_steps: Callable[[str, int], int] | None = None

    @property
    def calibrates(self) -> bool:
        """Whether the server can run a calibrated model's probe phase (``probe``,
        ``predicted``, ``boosted``): it needs the validation gradients and the candidates'
        evaluation."""
        return self.validation_gradients is not None and self.evaluate_candidates is not None
