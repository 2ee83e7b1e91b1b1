"""What a fedsel Flower message carries, and what it cost: the codec of the strategy's train
exchanges (:class:`fl_oracle.experiments.flower.strategy.FedselStrategy`).

- :func:`flatten` / :func:`unflatten_like`: a model's ``ArrayRecord`` as one float32 vector and
  back (record order).
- :func:`parse_reply`: one train reply as a :class:`Reply` (client id from the echoed
  ``partition-id``, domain, size, update Δ_i, statistics, ``model-sha``), or the one-line
  reason it cannot be used; :func:`one_line` makes a node's error one line.
- :class:`MessageCost`: a round's bytes down and up and the work the nodes report
  (the ``cost_*`` columns of the history).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, Message, RecordDict

__all__ = [
    "PHASE_KEY",
    "ROUND_KEY",
    "Phase",
    "MessageCost",
    "Reply",
    "first_metrics",
    "flatten",
    "nbytes",
    "one_line",
    "parse_reply",
    "reply_order",
    "unflatten_like",
]


#: the train message's config keys: its exchange and its round (0-based)
PHASE_KEY = "fedsel-phase"
ROUND_KEY = "fedsel-round"


class Phase(StrEnum):
    """The exchanges of a round, as a train message's ``PHASE_KEY`` names them.

    Examples:
        >>> from fl_oracle.experiments.flower.codec import Phase
        >>> [str(p) for p in Phase], Phase("probe") is Phase.PROBE
        (['measure', 'commit', 'probe'], True)
    """

    MEASURE = "measure"  # train at w_t and reply with the update and its statistics
    COMMIT = "commit"  # train at w_t for the aggregate (the K picks of a remembering model)
    PROBE = "probe"  # the probe pass at w_t: statistics, no update


def flatten(arrays: ArrayRecord) -> np.ndarray:
    """All arrays of a record as one float32 vector (record order)."""
    parts = [np.asarray(a.numpy(), dtype=np.float32).ravel() for a in arrays.values()]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def unflatten_like(flat: np.ndarray, like: ArrayRecord) -> ArrayRecord:
    """A record with the keys, shapes and dtypes of ``like`` holding ``flat``."""
    out, i = {}, 0
    for key, a in like.items():
        ref = a.numpy()
        n = int(ref.size)
        out[key] = Array(np.asarray(flat[i : i + n], dtype=ref.dtype).reshape(ref.shape))
        i += n
    if i != len(flat):
        raise ValueError(f"flat vector has {len(flat)} values, the record {i}")
    return ArrayRecord(out)


@dataclass
class Reply:
    node: int
    pid: int | None = None
    client_id: str = ""
    domain: str = ""
    n: int = 0
    delta: np.ndarray | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    missing: set[str] = field(default_factory=set)  # what a stock client does not report
    model_sha: str | None = None  # the model its statistics are for (ConfigRecord "fedsel")
    content: Any = None  # the reply's RecordDict (its own metrics are aggregated as FedAvg's)


@dataclass
class MessageCost:
    """A round's deployment cost as it crossed (:mod:`fl_oracle.experiments.cost`): the
    train-phase messages' arrays as they crossed, the statistics each reply uploads as the run's
    information model declares them (the rule ``fedsel train`` charges by, so that the two
    drivers charge one round alike), and the work the nodes report.

    A reply's bookkeeping (``partition-id``, ``steps``, ``train-samples``, ``probe-samples``,
    ``gamma-achieved``, the ``fedsel`` record) serves the simulation and its checks, not the
    selection: it is not charged, in either driver."""

    down: int = 0
    up: int = 0
    train: float = 0.0
    probe: float = 0.0
    # the round's probe phase already charged each node's probe batch at w_t: a training
    # reply's own probe of the same batch at the same model is that one, not another
    probed: bool = False
    #: numbers a probed client uploads, ``(n_classes, n_domains) -> count``: the information
    #: model's :meth:`~selection.information.InformationModel.probe_floats` (default: the
    #: base model's loss, F and label histogram)
    probe_floats: Callable[[int, int], int] | None = None

    def sent(self, n_nodes: int, arrays: ArrayRecord) -> None:
        self.down += n_nodes * nbytes(arrays)

    def _statistics(self, metrics: Mapping[str, Any], *, trained: bool, probed: bool) -> int:
        """Bytes of the statistics one reply uploads
        (:func:`~fl_oracle.experiments.cost.upload_floats`): its size and loss when it
        trained, its probe statistics when they are this round's (their histogram's classes
        and its first-order utilities counted from the reply)."""
        from fl_oracle.experiments.cost import FLOAT_BYTES, upload_floats

        n_classes = len(metrics.get("label-hist") or ())
        n_domains = len(metrics.get("x") or ())
        floats = 0
        if probed:
            count = self.probe_floats or (lambda c, d: 2 + int(c))
            floats = int(count(n_classes, n_domains))
        return FLOAT_BYTES * upload_floats(trained=trained, probe_floats=floats)

    def received(self, r: Reply, content: Any) -> None:
        arrays = sum(nbytes(a) for a in content.array_records.values())
        stats = 0
        if content.metric_records:  # a reply without statistics uploaded none
            stats = self._statistics(r.metrics, trained=True, probed=not self.probed)
        self.up += arrays + stats
        self.train += float(r.metrics.get("train-samples", float("nan")))
        if not self.probed:
            self.probe += float(r.metrics.get("probe-samples", float("nan")))

    def probe_reply(self, content: Any, metrics: Mapping[str, Any]) -> None:
        """A probe reply: its statistics' bytes and its probe samples (no training)."""
        if content.metric_records:
            self.up += self._statistics(metrics, trained=False, probed=True)
        self.probe += float(metrics.get("probe-samples", float("nan")))

    def columns(self) -> dict[str, float]:
        return {
            "cost_train_samples": self.train,
            "cost_probe_samples": self.probe,
            "cost_bytes_up": float(self.up),
            "cost_bytes_down": float(self.down),
        }


def nbytes(arrays: ArrayRecord) -> int:
    return int(sum(np.asarray(a.numpy()).nbytes for a in arrays.values()))


def reply_order(r: Reply) -> tuple[int, int]:
    """Partition order; nodes without a partition id after them, by node id."""
    return (0, r.pid) if r.pid is not None else (1, r.node)


_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b.*")


def one_line(reason: Any, limit: int = 300) -> str:
    """A node's error reason as one line: the exception line of an embedded traceback (the
    last ``SomeError: ...`` line), else its first line; Flower's ``<class 'X'>:<'...'>``
    wrapping unwrapped. A history names every failed node by one such line."""
    text = str(reason)
    m = re.fullmatch(r"<class '([\w.]+)'>:<'(.*)'>", text.strip(), re.S)
    if m:
        cls, text = m[1].rsplit(".", 1)[-1], m[2]
        if len([ln for ln in text.splitlines() if ln.strip()]) <= 1:
            text = f"{cls}: {text.strip()}" if text.strip() else cls
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "no reason given"
    found = [ln for ln in lines if _EXC_LINE.match(ln)]
    line = found[-1] if found and len(lines) > 1 else lines[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def first_metrics(content: RecordDict) -> dict | None:
    recs = list(content.metric_records.values())
    return dict(recs[0]) if recs else None


def parse_reply(msg: Message, w_t: np.ndarray, client_ids: list[str] | None) -> Reply:
    """One train reply as a :class:`Reply` (``error`` set when it cannot be used)."""
    r = Reply(node=int(msg.metadata.src_node_id))
    if msg.has_error():
        r.error = f"node error: {one_line(msg.error.reason)}"
        return r
    if not msg.has_content():
        r.error = "empty reply"
        return r
    content = msg.content
    m = first_metrics(content)
    if m is None:
        r.error = "reported no statistics (no MetricRecord)"
        return r
    pid = m.get("partition-id")
    if pid is None:  # a stock client: known by its node
        r.client_id = f"node-{r.node}"
        r.missing.add("partition-id")
    elif isinstance(pid, bool) or not isinstance(pid, int | float) or int(pid) != pid or pid < 0:
        r.error = f"partition-id={pid!r} is not an integer >= 0"
        return r
    else:
        r.pid = int(pid)
        if client_ids is not None:
            if r.pid >= len(client_ids):
                r.error = f"partition-id {r.pid} is not one of the {len(client_ids)} partitions"
                return r
            r.client_id = client_ids[r.pid]
        else:
            r.client_id = str(r.pid)
    if "num-examples" not in m:
        r.error = "reported no statistics (lacks num-examples)"
        return r
    if "F" not in m:
        r.missing.add("F")
    if "label-hist" not in m and "B" not in m:
        r.missing.add("label-hist")
    info = content.config_records.get("fedsel")
    domain = None if info is None else info.get("domain")
    if domain is not None and (not isinstance(domain, str) or not domain):
        r.error = f"domain={domain!r} (ConfigRecord 'fedsel') is not a name"
        return r
    if domain is None:
        r.missing.add("domain")
    r.model_sha = None if info is None else info.get("model-sha")
    r.domain = domain or ""
    n = m["num-examples"]
    if isinstance(n, bool) or not isinstance(n, int | float) or n < 1:
        r.error = f"num-examples={n!r} must be >= 1"
        return r
    r.n = int(n)
    if "delta" in content.array_records:
        delta = flatten(content["delta"])
    elif content.array_records:
        delta = flatten(next(iter(content.array_records.values()))) - w_t
    else:
        r.error = "reported no update (no ArrayRecord)"
        return r
    if delta.shape != w_t.shape:
        r.error = f"update has {delta.size} values, the model {w_t.size}"
        return r
    if not np.all(np.isfinite(delta)):
        r.error = "update has non-finite values"
        return r
    r.delta = delta
    r.metrics = m
    r.content = content
    return r
