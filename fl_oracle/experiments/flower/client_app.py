"""The Digits-4 Flower ClientApp: fedsel's local training and statistics on one node.

Train messages (``fedsel-phase`` ``measure`` or ``commit``, FedProx's ``proximal-mu``, the
fedsel round in ``fedsel-round``) run :func:`fl_oracle.experiments.flower.digits.client_update`
at the received model and reply with the update (``ArrayRecord`` ``"delta"``), the statistics
(``MetricRecord`` ``"metrics"``: ``partition-id``, ``num-examples``, ``F``, ``loss``, ``steps``,
``gamma-achieved``, ``label-hist``, ``U_local``) and the domain (``ConfigRecord`` ``"fedsel"``).
A train message with ``fedsel-phase`` ``probe`` (the ``probe`` information model) carries the
server's per-domain validation gradients and trains nothing: the reply holds the probe loss, F,
the label histogram and the D first-order utilities (``x``). Evaluate messages reply with the
probe loss and F at the received model and the probe gradient (``ArrayRecord`` ``"grad"``).

The node's partition is ``context.node_config["partition-id"]`` (set by the simulation engine,
or ``flower-supernode --node-config "partition-id=3 num-partitions=20"``).

``app`` (for ``flwr run``) reads its settings from the run config
(:func:`fl_oracle.experiments.flower.digits.settings_from_run_config`);
:func:`make_client_app` takes them directly.
"""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from fl_oracle.experiments.flower.codec import PHASE_KEY, ROUND_KEY, Phase
from fl_oracle.experiments.flower.digits import (
    DigitsSettings,
    client_first_order,
    client_probe,
    client_update,
    settings_from_run_config,
)
from fl_oracle.experiments.flower.guard import model_fingerprint
from fl_oracle.experiments.flower.privacy_mod import fedsel_privacy_mod
from fl_oracle.experiments.privacy import StatsPrivacy

__all__ = ["make_client_app", "app"]


def _partition(context: Context) -> int:
    pid = context.node_config.get("partition-id")
    if pid is None:
        raise ValueError("node_config has no partition-id (start the node with one)")
    return int(pid)


def _own(context: Context) -> tuple[str, str] | None:
    """``(data_root, domain)`` of a deployed node that reads its own files (node config
    ``data-root`` and ``domain``), or None: its shard of the simulated partition."""
    root = context.node_config.get("data-root")
    if root is None or root == "":
        return None
    domain = context.node_config.get("domain")
    if not domain:
        raise ValueError('node_config has data-root but no domain (e.g. domain="svhn")')
    return str(root), str(domain)


def _model(message: Message) -> np.ndarray:
    arrays = message.content["arrays"]
    return np.concatenate(
        [np.asarray(a.numpy(), dtype=np.float32).ravel() for a in arrays.values()]
    )


def _probe(settings: DigitsSettings, message: Message, context: Context) -> Message:
    """``fedsel-phase = "probe"``: the probe pass at w_t against the server's per-domain
    validation gradients (``ArrayRecord`` ``"fedsel-gd"``); no training, a few numbers back."""
    cfg = message.content["config"]
    pid = _partition(context)
    g = message.content["fedsel-gd"]["g"].numpy()
    w = _model(message)
    info = client_first_order(
        settings,
        pid,
        w,
        g,
        lr=cfg.get("lr"),
        local_epochs=cfg.get("local-epochs"),
        own=_own(context),
    )
    metrics = {**_statistics(pid, info), "x": info["x"], "cos-g": info["cos_g"]}
    return _reply(message, info, metrics, w)


def _statistics(pid: int, info: dict) -> dict:
    """What every fedsel reply reports of the node (probe and training alike)."""
    return {
        "partition-id": pid,
        "num-examples": info["n_samples"],
        "F": info["F"],
        "loss": info["loss"],
        "steps": info["steps"],
        "label-hist": info["label_hist"],
        "probe-samples": info["probe_samples"],
    }


def _reply(message: Message, info: dict, metrics: dict, w: np.ndarray, delta=None) -> Message:
    """The reply: the update (when it trained), its metrics, the node's domain and id, and
    ``model-sha``, the model ``w`` the statistics are for (the server checks it)."""
    records = {} if delta is None else {"delta": ArrayRecord({"delta": Array(delta)})}
    records["metrics"] = MetricRecord(metrics)
    records["fedsel"] = ConfigRecord(
        {
            "domain": info["domain"],
            "client-id": info["client_id"],
            "model-sha": model_fingerprint(w),
        }
    )
    return Message(RecordDict(records), reply_to=message)


def _train(settings: DigitsSettings, message: Message, context: Context) -> Message:
    cfg = message.content["config"]
    if cfg.get(PHASE_KEY) == Phase.PROBE:
        return _probe(settings, message, context)
    pid = _partition(context)
    extra = {k: cfg[k] for k in ("lr", "gamma", "local-epochs") if k in cfg}
    w = _model(message)
    delta, info = client_update(
        settings,
        pid,
        w,
        round_=int(cfg.get(ROUND_KEY, int(cfg.get("server-round", 1)) - 1)),
        mu=float(cfg.get("proximal-mu", 0.0)),
        lr=extra.get("lr"),
        gamma=extra.get("gamma"),
        local_epochs=extra.get("local-epochs"),
        own=_own(context),
    )
    metrics = {
        **_statistics(pid, info),
        "gamma-achieved": info["gamma_achieved"],
        "train-samples": info["train_samples"],
    }
    if "U_local" in info:
        metrics["U_local"] = info["U_local"]
    return _reply(message, info, metrics, w, delta)


def _evaluate(settings: DigitsSettings, message: Message, context: Context) -> Message:
    pid = _partition(context)
    p = client_probe(settings, pid, _model(message), own=_own(context))
    content = RecordDict(
        {
            "grad": ArrayRecord({"grad": Array(p["grad"])}),
            "metrics": MetricRecord(
                {
                    "partition-id": pid,
                    "num-examples": p["n_samples"],
                    "loss": p["loss"],
                    "F": p["F"],
                }
            ),
        }
    )
    return Message(content, reply_to=message)


def make_client_app(
    settings: DigitsSettings | None = None, privacy: StatsPrivacy | None = None
) -> ClientApp:
    """A ClientApp on ``settings`` (None: built from each message's run config).

    Its replies' statistics pass the privacy Mod
    (:func:`~fl_oracle.experiments.flower.privacy_mod.fedsel_privacy_mod`): ``privacy``, or
    the run config's ``dp-epsilon``/``dp-delta``/``dp-seed`` (off when absent)."""
    seed = None if settings is None else int(settings.config.seed)
    client = ClientApp(mods=[fedsel_privacy_mod(privacy, seed=seed)])

    def resolve(context: Context) -> DigitsSettings:
        if settings is not None:
            return settings
        return settings_from_run_config(
            context.run_config, int(context.node_config.get("num-partitions", 0)) or None
        )

    @client.train()
    def train(message: Message, context: Context) -> Message:
        return _train(resolve(context), message, context)

    @client.evaluate()
    def evaluate(message: Message, context: Context) -> Message:
        return _evaluate(resolve(context), message, context)

    return client


app = make_client_app()
