"""``fedsel_stats_mod``: one line in a stock ClientApp's ``mods=[...]`` adds what fedsel reads.

A stock Flower ClientApp (e.g. Flower's ``quickstart-pytorch``) replies to a train message with
its trained model and ``{"train_loss", "num-examples"}``. :class:`FedselStrategy` runs with
that alone (selectors that read only U and U_d from the server's validation data; the domain
inferred), and with this mod around the user's unmodified train function it gets the rest::

    app = ClientApp(mods=[fedsel_stats_mod(Net, quickstart_data(load_data))])

(``quickstart_data`` adapts the quickstart examples' ``load_data(partition_id, num_partitions,
batch_size) -> (trainloader, testloader)``; any other app passes its own ``data_fn(context)``.)

After the user's train function has run, the mod adds to the reply's ``MetricRecord``:

- ``partition-id`` (from the node config, when it has one: the fedsel client id);
- ``F``: the Fisher trace at the model the server sent, the mean squared norm of the
  per-sample gradient of log p(y|x) (``torch.func.vmap(grad)``) over up to ``max_samples``
  training samples (the first ones the data function yields: deterministic when it yields
  them in a fixed order, a shuffled loader gives another sample each round);
- ``loss``: the mean cross-entropy at that model on the same samples (it replaces a ``loss``
  the client reports, which would be its loss after training);
- ``label-hist``: class counts of the client's training labels;

and a ``ConfigRecord`` ``"fedsel"`` with the client's ``domain`` (the ``domain`` argument, or
``node_config["domain"]``) and ``model-sha``, the fingerprint of the model F and the loss are
for (the server refuses statistics for another). Evaluate and query messages pass through untouched.

The probe pass (``fedsel-phase = "probe"``: the ``probe``, ``predicted`` and ``boosted``
information models and ``@probe`` specs) is served by the mod itself and the user's train
function is not called: nothing trains. The reply holds the statistics above,
``num-examples`` (the samples the data function yields), ``probe-samples`` (those F, the loss
and the gradient are computed on), ``steps`` (the planned local steps:
``local-epochs`` of the run config, else 1, times the batches of the data function), and the
first-order utilities of the message's per-domain validation gradients g_d (``ArrayRecord``
``"fedsel-gd"``, (D, P) in the order of the model's arrays): ``x`` = lr · steps ·
<∇L_i(w_t), g_d> (lr: the message config's ``lr``, else the mod's ``lr``) and ``cos-g``, the
cosine of ∇L_i(w_t) with Σ_d g_d, as the Digits-4 ClientApp computes them
(:func:`fl_oracle.experiments.flower.digits.client_first_order`). ∇L_i is the mean gradient of
the cross-entropy over the same ``max_samples`` samples as F (zeros for buffers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from flwr.app import ConfigRecord, Context, Message, MessageType, MetricRecord, RecordDict

from fl_oracle.experiments.flower.codec import PHASE_KEY, Phase
from fl_oracle.experiments.flower.guard import model_fingerprint

__all__ = ["fedsel_stats_mod", "quickstart_data"]

DataFn = Callable[[Context], Any]


def quickstart_data(
    load_data: Callable[[int, int, int], Any],
    *,
    batch_size_key: str = "batch-size",
    default_batch_size: int = 32,
) -> DataFn:
    """``data_fn`` for an app whose ``load_data(partition_id, num_partitions, batch_size)``
    returns ``(trainloader, testloader)``, as Flower's quickstart examples' does: this node's
    train loader, with the run config's batch size (``batch_size_key``).

    Examples:
        >>> from flwr.app import Context, RecordDict
        >>> from fl_oracle.experiments.flower.mod import quickstart_data
        >>> def load_data(partition_id, num_partitions, batch_size):  # the quickstart's shape
        ...     return f"train {partition_id}/{num_partitions} by {batch_size}", "test"
        >>> node = {"partition-id": 2, "num-partitions": 4}
        >>> ctx = Context(1, 1003, node, RecordDict(), run_config={"batch-size": 16})
        >>> quickstart_data(load_data)(ctx)
        'train 2/4 by 16'
    """

    def data(ctx: Context) -> Any:
        batch = int(ctx.run_config.get(batch_size_key, default_batch_size))
        pid, parts = int(ctx.node_config["partition-id"]), int(ctx.node_config["num-partitions"])
        return load_data(pid, parts, batch)[0]

    return data


def _batches(data: Any, keys: tuple[str, str]) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    """(x, y) batches of a (x, y) pair of tensors, a DataLoader of pairs or of dicts."""
    if isinstance(data, tuple | list) and len(data) == 2 and torch.is_tensor(data[0]):
        yield torch.as_tensor(data[0]), torch.as_tensor(data[1])
        return
    for batch in data:
        if isinstance(batch, dict):
            yield torch.as_tensor(batch[keys[0]]), torch.as_tensor(batch[keys[1]])
        else:
            x, y = batch[0], batch[1]
            yield torch.as_tensor(x), torch.as_tensor(y)


def client_statistics(
    model: torch.nn.Module,
    data: Any,
    *,
    max_samples: int = 64,
    keys: tuple[str, str] = ("img", "label"),
    gradient: Sequence[str] | None = None,
) -> dict[str, Any]:
    """F, loss and the label histogram of ``model`` on a client's training data.

    Args:
        model: the model at the server's weights (put in eval mode here).
        data: the client's training data: ``(x, y)`` tensors or an iterable of batches,
            each ``(x, y)`` or a dict with ``keys``.
        max_samples: samples F and the loss are computed on.
        keys: image and label keys of dict batches (Flower's datasets use ``img``/``label``).
        gradient: the names of the model's state entries in the order of the server's
            arrays: also return the mean gradient of the loss over the same samples,
            flattened in that order (zeros for buffers), and the number of batches.

    Returns:
        ``{"F": float, "loss": float, "label-hist": [int, ...]}``, with ``gradient``
        also ``"grad"`` ((P,) float64) and ``"batches"``.

    Examples:
        >>> import torch
        >>> from fl_oracle.experiments.flower.mod import client_statistics
        >>> model = torch.nn.Linear(2, 2)  # 2 classes, all weights 0: p(y|x) = 1/2
        >>> torch.nn.utils.vector_to_parameters(torch.zeros(6), model.parameters())
        >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> st = client_statistics(model, (x, torch.tensor([0, 1, 1])))
        >>> # per sample |grad log p|^2 = (|x|^2 + 1) / 2 = 1, 1, 1.5; the loss is ln 2
        >>> round(st["F"], 4), round(st["loss"], 4), st["label-hist"]
        (1.1667, 0.6931, [1, 2])
    """
    from torch.func import functional_call, grad, vmap

    model.eval()
    xs, ys, labels = [], [], []
    have = batches = 0
    for x, y in _batches(data, keys):
        batches += 1
        labels.append(y.reshape(-1).long())
        if have < max_samples:
            take = min(len(y), max_samples - have)
            xs.append(x[:take])
            ys.append(y[:take].long())
            have += take
    if not labels:
        raise ValueError("the client's data function yielded no samples")
    x, y = torch.cat(xs), torch.cat(ys)
    params = {n: p.detach() for n, p in model.named_parameters()}
    buffers = {n: b.detach() for n, b in model.named_buffers()}

    def logp(p: dict, xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, (p, buffers), (xi.unsqueeze(0),))[0]
        return torch.log_softmax(out, dim=-1).gather(0, yi.unsqueeze(0)).squeeze(0)

    g = vmap(grad(logp), in_dims=(None, 0, 0))(params, x, y)
    sq = sum((v.reshape(len(y), -1) ** 2).sum(1) for v in g.values())
    with torch.no_grad():
        logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    n_classes = int(logits.shape[-1])
    hist = np.bincount(torch.cat(labels).numpy(), minlength=n_classes)
    out = {"F": float(sq.mean()), "loss": float(loss), "label-hist": [int(v) for v in hist]}
    if gradient is not None:  # the loss's gradient: minus the mean of grad log p
        state = model.state_dict()
        parts = [
            -g[name].double().mean(0).reshape(-1)
            if name in g
            else torch.zeros(state[name].numel(), dtype=torch.float64)
            for name in gradient
        ]
        out["grad"] = torch.cat(parts).numpy() if parts else np.zeros(0)
        out["batches"] = batches
    return out


def fedsel_stats_mod(
    model_fn: Callable[[], torch.nn.Module],
    data_fn: DataFn,
    *,
    domain: str | Callable[[Context], str] | None = None,
    max_samples: int = 64,
    keys: tuple[str, str] = ("img", "label"),
    lr: float | None = None,
    local_epochs: float | None = None,
) -> Callable[[Message, Context, Callable[[Message, Context], Message]], Message]:
    """A Flower Mod adding fedsel's client statistics to every train reply (module docstring).

    Args:
        model_fn: builds the client's model (the server's weights are loaded into it).
        data_fn: ``data_fn(context)`` -> the client's training data (see
            :func:`client_statistics`), e.g. the stock example's train loader.
        domain: the client's domain, or ``domain(context)``; None = ``node_config["domain"]``
            (when absent, the server infers it).
        max_samples: samples F and the loss are computed on.
        keys: image and label keys of dict batches.
        lr: the learning rate of the probe pass's first-order utilities when the message's
            config has none (the server's ``train_config={"lr": ...}`` sends it).
        local_epochs: the local epochs the probe pass plans with; None: the run config's
            ``local-epochs``, else 1.

    Examples:
        >>> import torch
        >>> from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
        >>> from fl_oracle.experiments.flower.local_grid import LocalGrid
        >>> from fl_oracle.experiments.flower.mod import fedsel_stats_mod
        >>> def zero_model():  # 2 classes, all weights 0: p(y|x) = 1/2
        ...     model = torch.nn.Linear(2, 2)
        ...     torch.nn.utils.vector_to_parameters(torch.zeros(6), model.parameters())
        ...     return model
        >>> x, y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), torch.tensor([0, 1, 1])
        >>> def train(msg, ctx):  # the user's train function, unmodified
        ...     m = MetricRecord({"train_loss": 0.5, "num-examples": 3})
        ...     return Message(RecordDict({"metrics": m}), reply_to=msg)
        >>> mod = fedsel_stats_mod(zero_model, lambda ctx: (x, y), domain="mnist")
        >>> grid = LocalGrid(lambda msg, ctx: mod(msg, ctx, train), 1)  # one node, id 1001
        >>> w = RecordDict({"arrays": ArrayRecord(zero_model().state_dict())})
        >>> (reply,) = grid.send_and_receive([grid.create_message(w, "train", 1001, "")])
        >>> m = reply.content["metrics"]
        >>> round(m["F"], 4), round(m["loss"], 4), m["label-hist"], m["train_loss"]
        (1.1667, 0.6931, [1, 2], 0.5)
        >>> reply.content["fedsel"]["domain"], m["partition-id"]
        ('mnist', 0)
    """

    def mod(msg: Message, ctx: Context, call_next: Callable[[Message, Context], Message]):
        if _is_probe(msg):  # the probe pass: served here, nothing trains
            return _probe_reply(msg, ctx)
        reply = call_next(msg, ctx)
        if msg.metadata.message_type != MessageType.TRAIN or reply.has_error():
            return reply
        if not reply.has_content() or not msg.content.array_records:
            return reply
        arrays = _arrays(msg)
        model = model_fn()
        model.load_state_dict(arrays.to_torch_state_dict())
        stats = client_statistics(model, data_fn(ctx), max_samples=max_samples, keys=keys)
        _annotate(reply, ctx, stats, arrays)
        return reply

    def _annotate(reply: Message, ctx: Context, stats: dict, arrays) -> MetricRecord:
        """The statistics, the partition, the domain and the model's fingerprint, added to
        ``reply``; its metrics record."""
        records = reply.content.metric_records
        metrics = next(iter(records.values())) if records else None
        if metrics is None:
            metrics = MetricRecord()
            reply.content["metrics"] = metrics
        pid = ctx.node_config.get("partition-id")
        if pid is not None:
            metrics["partition-id"] = int(pid)
        metrics["F"] = stats["F"]
        metrics["loss"] = stats["loss"]  # fedsel's loss is at the server's model, w_t
        metrics["label-hist"] = stats["label-hist"]
        d = domain(ctx) if callable(domain) else domain
        d = d if d is not None else ctx.node_config.get("domain")
        flat = [np.asarray(a.numpy(), dtype=np.float32).ravel() for a in arrays.values()]
        info = ConfigRecord({"model-sha": model_fingerprint(np.concatenate(flat))})
        if d is not None:
            info["domain"] = str(d)
        reply.content["fedsel"] = info
        return metrics

    def _probe_reply(msg: Message, ctx: Context) -> Message:
        arrays = _arrays(msg)
        if arrays is None or "fedsel-gd" not in msg.content.array_records:
            return _error(msg, "probe: the message carries no model or no fedsel-gd")
        cfg = next(c for c in msg.content.config_records.values() if PHASE_KEY in c)
        rate = cfg.get("lr", lr)
        if rate is None:
            return _error(msg, "probe: no lr in the message's config and none given to the mod")
        model = model_fn()
        model.load_state_dict(arrays.to_torch_state_dict())
        names = list(arrays.keys())
        stats = client_statistics(
            model, data_fn(ctx), max_samples=max_samples, keys=keys, gradient=names
        )
        gd = np.asarray(msg.content["fedsel-gd"]["g"].numpy(), dtype=np.float64)
        grad = stats.pop("grad")
        if gd.ndim != 2 or gd.shape[1] != grad.size:
            return _error(msg, f"probe: fedsel-gd is {gd.shape}, the model has {grad.size} values")
        epochs = ctx.run_config.get("local-epochs", 1) if local_epochs is None else local_epochs
        steps = max(1, int(round(float(epochs) * stats.pop("batches"))))
        ref = gd.sum(0)
        denom = float(np.linalg.norm(grad) * np.linalg.norm(ref))
        reply = Message(RecordDict({"metrics": MetricRecord()}), reply_to=msg)
        metrics = _annotate(reply, ctx, stats, arrays)
        metrics["num-examples"] = int(sum(stats["label-hist"]))
        metrics["probe-samples"] = min(int(max_samples), metrics["num-examples"])
        metrics["steps"] = steps
        metrics["x"] = [float(v) for v in float(rate) * steps * (gd @ grad)]
        metrics["cos-g"] = float(grad @ ref / denom) if denom > 0 else 0.0
        if "partition-id" not in metrics:
            return _error(msg, "probe: the node config has no partition-id")
        if "domain" not in reply.content["fedsel"]:
            return _error(msg, "probe: no domain (give the mod one, or node config domain=...)")
        return reply

    return mod


def _is_probe(msg: Message) -> bool:
    """A train message of the probe pass (``fedsel-phase = "probe"``)."""
    if msg.metadata.message_type != MessageType.TRAIN or not msg.has_content():
        return False
    return any(cfg.get(PHASE_KEY) == Phase.PROBE for cfg in msg.content.config_records.values())


def _arrays(msg: Message):
    """The model the server sent: the message's first ``ArrayRecord`` (None: none)."""
    records = msg.content.array_records
    return next(iter(records.values())) if records else None


def _error(msg: Message, reason: str) -> Message:
    """A reply carrying ``reason`` as its error (the server names it in the round's failures)."""
    from flwr.app import Error

    return Message(Error(code=0, reason=reason), reply_to=msg)
