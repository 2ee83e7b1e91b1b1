"""What the server holds beside the nodes, for :class:`~.strategy.FedselStrategy`: one object
instead of five constructor arguments.

A deployment's server may hold validation data per domain (to evaluate candidate updates, to
compute the probe phase's validation gradients, to measure the global model) and the partition
(each client's size, each client's planned local steps). Every field is optional: without it
the nodes report what the server would have computed, and the checks that need it are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["NodePolicy", "ServerSide"]


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


@dataclass(frozen=True)
class NodePolicy:
    """How :class:`~.strategy.FedselStrategy` asks its nodes, and what it does when they fail.

    Attributes:
        client_ids: fedsel client id of each partition id (default ``str(partition_id)``).
        timeout: seconds to wait for the replies of one exchange (also the default of
            ``start(timeout=...)``, which governs the exchange Flower sends).
        wait_for_nodes: seconds to wait for K nodes to connect before failing.
        train_config: extra entries for every train message's config (lr, local epochs, ...).
        on_missing: what to do when nodes do not report a statistic the selector reads (a
            stock ClientApp without :func:`~fl_oracle.experiments.flower.mod.fedsel_stats_mod`
            sends no F and no label histogram): ``"fallback:<spec>"`` selects with that spec
            in such rounds, ``"error"`` stops the run. Statistics the selector does not read
            are filled with neutral values (F = 1, B = 0) and the run goes on.
        clip_updates: scale an update whose norm lies beyond the round's others down to the
            largest norm within them (it is named either way).

    Examples:
        >>> from fl_oracle.experiments.flower.server_side import NodePolicy
        >>> NodePolicy(timeout=30.0, train_config={"lr": 0.05}).on_missing
        'fallback:proportional'
        >>> NodePolicy(on_missing="skip")
        Traceback (most recent call last):
            ...
        ValueError: on_missing='skip' must be 'error' or 'fallback:<spec>'
    """

    client_ids: Sequence[str] | None = None
    timeout: float = 600.0
    wait_for_nodes: float = 30.0
    train_config: Mapping[str, Any] = field(default_factory=dict)
    on_missing: str = "fallback:proportional"
    clip_updates: bool = False

    def __post_init__(self) -> None:
        if not (self.timeout > 0 and self.wait_for_nodes >= 0):
            raise ValueError("timeout must be > 0 and wait_for_nodes >= 0 seconds")
        if self.on_missing != "error" and not self.on_missing.startswith("fallback:"):
            raise ValueError(f"on_missing={self.on_missing!r} must be 'error' or 'fallback:<spec>'")
        ids = None if self.client_ids is None else tuple(str(c) for c in self.client_ids)
        object.__setattr__(self, "client_ids", ids)
        object.__setattr__(self, "train_config", dict(self.train_config or {}))

    @property
    def fallback(self) -> str | None:
        """The spec selecting in rounds with missing statistics (None: ``error``)."""
        return self.on_missing.removeprefix("fallback:") if self.on_missing != "error" else None
