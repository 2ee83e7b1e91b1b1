"""``LocalGrid``: a Flower ``Grid`` that delivers messages to ClientApps in this process.

No Ray, no SuperLink: ``send_and_receive`` calls ``client_app(message, context)`` for each
message, in order, and turns an exception into an error reply (as the simulation engine does).
It drives the same ServerApp strategy and ClientApp code as ``flwr run``'s simulation, so tests and
``fedsel flower --engine local`` exercise both apps in seconds.

Faults for tests: ``silent`` node ids never reply (the strategy then sees a timeout);
``lost`` node ids are answered as a SuperLink answers for a node that died mid-round: an error
reply whose sender is the SuperLink itself (node id 1), naming the message it answers only in
``reply_to_message_id``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flwr.app import Context, Error, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.serverapp import Grid
from flwr.supercore.task_identity import TaskIdentity

__all__ = ["LocalGrid"]


class LocalGrid(Grid):
    """``num_nodes`` virtual nodes (ids 1001.., partition ids 0..) running ``client_app``.

    Args:
        client_app: a ``flwr.clientapp.ClientApp`` (or any ``(message, context) -> message``).
        num_nodes: number of nodes.
        run_config: the run config every node's context carries.
        silent: node ids that never reply.
        lost: node ids whose replies the SuperLink writes (an error from node id 1).
    """

    def __init__(
        self,
        client_app: Callable[[Message, Context], Message],
        num_nodes: int,
        *,
        run_config: dict | None = None,
        silent: Iterable[int] = (),
        lost: Iterable[int] = (),
    ) -> None:
        # Messages take their sender's identity from the process (set by Flower's runtimes).
        if TaskIdentity._run_id is None:
            TaskIdentity.run_id = 1
            TaskIdentity.task_id = 1
            TaskIdentity.node_id = SUPERLINK_NODE_ID
        self.client_app = client_app
        self.silent = set(silent)
        self.lost = set(lost)
        self.contexts = {
            1001 + i: Context(
                run_id=1,
                node_id=1001 + i,
                node_config={"partition-id": i, "num-partitions": num_nodes},
                state=RecordDict(),
                run_config=dict(run_config or {}),
            )
            for i in range(num_nodes)
        }
        self._run = None
        self._outbox: dict[str, Message] = {}
        self._count = 0
        self.sent: list[Message] = []

    def set_run(self, run) -> None:  # noqa: D102 - Grid API
        self._run = run

    @property
    def run(self):  # noqa: D102 - Grid API
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None) -> Message:  # noqa: D102
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:  # noqa: D102
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:  # noqa: D102
        ids = []
        for msg in messages:
            self._count += 1
            mid = f"m{self._count}"
            msg.metadata.__dict__["_message_id"] = mid
            self.sent.append(msg)
            node = msg.metadata.dst_node_id
            if node in self.silent or node not in self.contexts:
                ids.append(mid)
                continue
            if node in self.lost:
                err = Error(code=ErrorCode.NODE_UNAVAILABLE, reason="node went offline")
                reply = Message(err, reply_to=msg)
                reply.metadata.__dict__["_src_node_id"] = SUPERLINK_NODE_ID
                self._outbox[mid] = reply
                ids.append(mid)
                continue
            try:
                reply = self.client_app(msg, self.contexts[node])
            except Exception as exc:  # the engine's behaviour: an error reply
                reason = f"{type(exc).__name__}: {exc}"
                reply = Message(
                    Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=reason), reply_to=msg
                )
            self._outbox[mid] = reply
            ids.append(mid)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:  # noqa: D102
        return [self._outbox.pop(m) for m in message_ids if m in self._outbox]

    def send_and_receive(self, messages, *, timeout=None) -> Iterable[Message]:  # noqa: D102
        return self.pull_messages(self.push_messages(list(messages)))
