"""The train-message exchanges of
:class:`~fl_oracle.experiments.flower.strategy.FedselStrategy` with its nodes, and its probe
phase.

:class:`Exchange` keeps who is who (node id and fedsel client id, from the echoed
``partition-id``), the messages in flight and what the round's exchanges carried
(:class:`~.codec.MessageCost`). Every exchange (measure, probe, commit) goes through it:

* :meth:`Exchange.messages`: a record as a train message to each node, now in flight.
* :meth:`Exchange.collect`: the replies parsed (:func:`~.codec.parse_reply`); a reply carrying
  an error, a node claiming another node's partition or changing its own, and a node that did
  not reply go to the round's failures, and the rest pass the :class:`~.guard.ReplyGuard`.
* :meth:`Exchange.probe`: the ``probe`` / ``predicted`` phase's replies (each node's probe
  statistics against the server's per-domain validation gradients, no training) as the
  information model's :class:`~selection.information.RoundInputs`.

A bad reply is a failure of its node, never of the round; :class:`FlowerRunError` is raised
where the round itself cannot proceed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from flwr.app import Message, MessageType, RecordDict

from fl_oracle.experiments.flower.codec import (
    MessageCost,
    Reply,
    first_metrics,
    one_line,
    parse_reply,
    reply_order,
)
from fl_oracle.experiments.flower.guard import ReplyGuard
from fl_oracle.sim.stats import js_divergence
from selection.schema import F_FLOOR

__all__ = ["Exchange", "FlowerRunError"]


class FlowerRunError(RuntimeError):
    """A round cannot proceed (too few nodes, too few statistics); the message says why."""


class Exchange:
    """A strategy's exchanges with its nodes (module text).

    Args:
        construct: ``(record, node ids, message type) -> messages``, the strategy's
            ``_construct_messages`` (Flower's: one message of the record to each node).
        client_ids: fedsel client id of each partition id (None: ``str(partition_id)``).
        timeout: seconds the strategy waits for the replies of one exchange.
        guard: the checks the parsed replies pass.
    """

    def __init__(
        self,
        construct: Callable[[RecordDict, list[int], str], Iterable[Message]],
        *,
        client_ids: list[str] | None,
        timeout: float,
        guard: ReplyGuard,
    ) -> None:
        self.construct = construct
        self.client_ids = client_ids
        self.timeout = float(timeout)
        self.guard = guard
        self.node_of: dict[str, int] = {}  # client id -> node id
        self.client_of: dict[int, str] = {}  # node id -> client id
        self.sent: list[Message] = []  # the messages of the exchange in flight
        self.cost = MessageCost()  # what the round's train exchanges carried

    def messages(self, record: RecordDict, nodes: Sequence[int]) -> list[Message]:
        """``record`` as a train message to each of ``nodes``: the exchange in flight, its
        arrays counted as sent."""
        self.sent = list(self.construct(record, list(nodes), MessageType.TRAIN))
        for arrays in record.array_records.values():
            self.cost.sent(len(self.sent), arrays)
        return self.sent

    def sender(self, msg: Message) -> int:
        """The node a reply answers for. A SuperLink writes the error reply of a node that
        died with its own node id as the sender; the message it answers names the node."""
        asked = {
            m.metadata.message_id: int(m.metadata.dst_node_id)
            for m in self.sent
            if m.metadata.message_id
        }
        return asked.get(msg.metadata.reply_to_message_id, int(msg.metadata.src_node_id))

    def collect(
        self,
        replies: Iterable[Message],
        asked: Sequence[int],
        w_t: np.ndarray,
        failures: dict[str, str],
        sizes: Mapping[str, int],
    ) -> list[Reply]:
        """Parse replies; failures (error, no statistics, no reply) go to ``failures``.
        ``sizes``: every client's latest accepted size (:class:`~.guard.ReplyGuard`)."""
        out, seen = [], set()
        for msg in replies:
            node = self.sender(msg)
            seen.add(node)
            r = parse_reply(msg, w_t, self.client_ids)
            r.node = node
            if msg.has_content():
                self.cost.received(r, msg.content)
            who = r.client_id or self.client_of.get(node) or f"node-{node}"
            if r.error:
                failures[who] = r.error
                continue
            # identity claims: named by what the node was before it claimed another partition
            prev = self.client_of.get(node)
            if prev is not None and prev != r.client_id:
                failures[prev] = f"node {node} echoed partition of {r.client_id}, was {prev}"
                continue
            other = self.node_of.get(r.client_id)
            if other is not None and other != node and other in asked:
                who = self.client_of.get(node, f"node-{node}")
                failures[who] = f"partition {r.pid} is claimed by nodes {other} and {node}"
                continue
            self.node_of[r.client_id] = node
            self.client_of[node] = r.client_id
            out.append(r)
        for node in asked:
            if node not in seen:
                who = self.client_of.get(node, f"node-{node}")
                failures[who] = f"no reply in this exchange (timeout {self.timeout:g} s)"
        out = self.guard.refuse_contradictions(out, failures, sizes)
        self.guard.bound_claims(out, sizes)
        return sorted(out, key=reply_order)

    def probe_row(
        self, msg: Message, m: Mapping[str, Any], domains: Sequence[str]
    ) -> tuple[dict, str]:
        """A probe reply as a row, or the reason it cannot be one (a node's bad reply is a
        failure of that node, never of the round)."""
        need = ("partition-id", "num-examples", "loss", "F", "cos-g", "steps", "label-hist", "x")
        lost = [c for c in need if c not in m]
        if lost:
            return {}, f"lacks {lost[0]}"
        x = m["x"]
        if not isinstance(x, list) or len(x) != len(domains):
            return {}, f"x must hold {len(domains)} values, one per domain"
        try:
            pid = int(m["partition-id"])
            cid = self.client_ids[pid] if self.client_ids is not None else str(pid)
            dom = str(msg.content["fedsel"]["domain"]) if "fedsel" in msg.content else ""
            row = {"client_id": cid, "domain": dom, "n_samples": int(m["num-examples"]),
                   "loss": float(m["loss"]), "F": max(float(m["F"]), F_FLOOR),
                   "cos_g": float(m["cos-g"]), "steps": int(m["steps"]), "_pid": pid}  # fmt: skip
            row.update({f"x_{d}": float(v) for d, v in zip(domains, x, strict=True)})
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            return {}, f"malformed ({type(exc).__name__}: {str(exc).splitlines()[0]})"
        if dom not in domains:
            return {}, f"domain {dom!r} is not one of {', '.join(domains)}"
        info = msg.content.config_records.get("fedsel")
        stale = self.guard.stale_model(None if info is None else info.get("model-sha"))
        if stale:
            return {}, f"refused: {stale}"
        values = [row[c] for c in ("loss", "F", "cos_g", *(f"x_{d}" for d in domains))]
        if not np.isfinite(values).all() or row["n_samples"] < 1:
            return {}, "non-finite statistics or num-examples < 1"
        return row, ""

    def probe(
        self,
        replies: Iterable[Message],
        nodes: Sequence[int],
        *,
        t: int,
        k: int,
        base_acc: Mapping[str, float],
        val_sizes: Mapping[str, int],
        hist: dict[str, np.ndarray],
        sizes: Mapping[str, int],
        failures: dict[str, str],
    ):
        """``probe`` / ``predicted``: the probe replies of ``nodes`` (sent the server's
        per-domain validation gradients at w_t, whose accuracy and sizes are ``base_acc`` and
        ``val_sizes``) as the model's :class:`RoundInputs`. ``hist`` (client id -> label
        histogram) takes the nodes' histograms; ``sizes``: every client's latest accepted
        size."""
        from selection.information import RoundInputs

        domains = tuple(base_acc)
        rows, seen = [], set()
        for msg in replies:
            node = self.sender(msg)
            seen.add(node)
            who = self.client_of.get(node, f"node-{node}")
            if msg.has_error() or not msg.has_content():
                failures[who] = "probe: " + (
                    one_line(msg.error.reason) if msg.has_error() else "empty"
                )
                continue
            m = first_metrics(msg.content) or {}
            self.cost.probe_reply(msg.content, m)
            row, why = self.probe_row(msg, m, domains)
            if why:
                failures[who] = f"probe reply: {why}"
                continue
            cid = row["client_id"]
            self.node_of[cid], self.client_of[node] = node, cid
            hist[cid] = np.asarray(m["label-hist"], dtype=np.float64)
            rows.append(row)
        for node in nodes:
            if node not in seen:
                who = self.client_of.get(node, f"node-{node}")
                failures[who] = f"no reply in this exchange (timeout {self.timeout:g} s)"
        if not rows:
            why = "; ".join(f"{c}: {r}" for c, r in list(failures.items())[:3])
            more = f" (+{len(failures) - 3} more)" if len(failures) > 3 else ""
            raise FlowerRunError(f"round {t}: no node answered the probe ({why}{more})")
        claims = {row["client_id"]: int(row["n_samples"]) for row in rows}
        for cid, (n, why) in self.guard.size_caps(claims, sizes).items():
            self.guard.suspect(cid, why)
            for row in rows:
                if row["client_id"] == cid:
                    row["n_samples"], row["suspect"] = n, why
        probe = pd.DataFrame(rows).sort_values("_pid", kind="stable").drop(columns="_pid")
        glob = sum(hist.values())
        probe["B"] = [js_divergence(hist[c], glob) for c in probe["client_id"]]
        probe = probe.reset_index(drop=True)
        return RoundInputs(
            t=t,
            k=k,
            clients=probe[["client_id", "domain", "n_samples"]],
            domains=domains,
            probe=probe,
            base_acc=base_acc,
            val_sizes=val_sizes,
        )
