"""The Flower transport: what a round of :class:`~.strategy.FedselStrategy` asks of its nodes.

:class:`FlowerTransport` implements :class:`fl_oracle.experiments.transport.Transport` over
Flower's grid, so that the strategy plays the same round as ``fedsel train``
(:func:`fl_oracle.experiments.transport.play_round`); the strategy supplies only this transport.
Every exchange is a train message. The one that trains the round's commit is sent by Flower
(the strategy's ``configure_train`` returns it, ``aggregate_train`` receives its replies:
:meth:`~FlowerTransport.measure_messages` / :meth:`~FlowerTransport.measured_from` where the
information model trains every candidate before the choice, else
:meth:`~FlowerTransport.commit_messages` / :meth:`~FlowerTransport.committed_from`); an
exchange before the choice that trains nothing the round commits (the probe pass, ``stale``'s
first reports of new nodes) is sent by the transport with ``grid.send_and_receive``:

* :meth:`~FlowerTransport.train`: ``fedsel-phase = "measure"`` at w_t to the nodes the
  information model trains before the choice; their updates and statistics come back
  (:meth:`~FlowerTransport.ingest` computes the server's part).
* :meth:`~FlowerTransport.probe`: ``fedsel-phase = "probe"`` with the server's per-domain
  validation gradients (:class:`.server_side.ServerSide`); every node answers its probe
  statistics without training.
* :meth:`~FlowerTransport.commit`: the chosen nodes' updates measured this round are committed
  as they are (nobody trains twice); otherwise they get ``fedsel-phase = "commit"`` (and
  FedProx's ``proximal-mu``). The new model is w_t + Σ α_i Δ_i over the updates that arrived.

Why one module past 450 lines: :class:`FlowerTransport` is one object whose exchanges
(measure, probe, commit, each split into its messages and its replies) share the round's state
(w_t, the nodes asked, their failures, the statistics rows); split, each part would pass that
state back and forth.

A node is known by the fedsel client id its replies echo (``partition-id``); one never heard
from is ``node-<id>`` until it replies. A node's failure (an error, a bad reply, no reply in
time) leaves it out of that exchange and is listed in the round's history row.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, RecordDict
from flwr.serverapp import Grid

from fl_oracle.experiments.flower.codec import (
    PHASE_KEY,
    ROUND_KEY,
    MessageCost,
    Phase,
    Reply,
    flatten,
    reply_order,
    unflatten_like,
)
from fl_oracle.experiments.flower.guard import ReplyGuard
from fl_oracle.experiments.flower.probe import Exchange, FlowerRunError
from fl_oracle.experiments.flower.server_side import ServerSide
from fl_oracle.experiments.flower.stock import BACK, StockClients
from fl_oracle.experiments.privacy import RunAccountant
from fl_oracle.experiments.round_step import RoundChoice, domain_metrics
from fl_oracle.experiments.transport import Committed
from fl_oracle.sim.stats import cosine_to, js_divergence
from selection.baselines.reads import Reads, VectorSource
from selection.errors import SelectionError
from selection.information import InformationModel, RoundInputs
from selection.schema import F_FLOOR

__all__ = ["FlowerTransport", "INTERNAL", "message_record"]

#: reply metrics that are bookkeeping, not statistics columns
INTERNAL = {
    "partition-id", "num-examples", "label-hist", "gamma-achieved", "train-samples",
    "probe-samples",
}  # fmt: skip


class FlowerTransport:
    """A strategy's nodes as a round's transport (module docstring).

    Args:
        model: the run's information model (what a reply's statistics are charged as).
        selector: the run's selector (the update vectors a rule reads).
        exchange: the strategy's exchanges with its nodes (who is who, the messages).
        guard: the checks every reply passes.
        stock: the nodes that report no statistics (their domains, the fill-ins).
        server: what the server holds beside the nodes.
        train_config: extra entries for every train message's config (lr, local epochs).
        keys: the strategy's array and config record keys (Flower's ``arrays``, ``config``).
        k: nodes committed per round.
        wait_for_nodes: seconds to wait for K nodes to connect.
        aggregation: ``samples`` (α ∝ n) or ``uniform`` where the choice sets no weights.
        proximal_mu: FedProx μ (the history's ``mu``).
    """

    error = FlowerRunError

    def __init__(
        self,
        model: InformationModel,
        selector: Any,
        *,
        exchange: Exchange,
        guard: ReplyGuard,
        stock: StockClients,
        server: ServerSide,
        train_config: Mapping[str, Any],
        keys: tuple[str, str],
        k: int,
        wait_for_nodes: float,
        aggregation: str,
        proximal_mu: float,
    ) -> None:
        self.model = model
        self.selector = selector
        self.ex = exchange
        self.guard = guard
        self.stock = stock
        self.server = server
        self.train_config = dict(train_config)
        self.keys = keys
        self.k = int(k)
        self.wait_for_nodes = float(wait_for_nodes)
        self.aggregation = aggregation
        self.proximal_mu = float(proximal_mu)
        self.rows: dict[str, dict] = {}  # client id -> its latest statistics row
        self.hist: dict[str, np.ndarray] = {}  # client id -> label histogram
        #: client id -> the update last aggregated from it (a rule reading ``updates``)
        self.committed: dict[str, np.ndarray] = {}
        # the round's state (begin)
        self.grid: Grid | None = None
        self.like: ArrayRecord | None = None
        self.config = ConfigRecord()
        self.w_t = np.zeros(0, dtype=np.float32)
        self.nodes: list[int] = []
        self.failures: dict[str, str] = {}
        self.measured: dict[str, Reply] = {}  # this round's measured replies
        self._asked: list[int] | None = None  # the nodes of the exchange in flight
        self._probed: RoundInputs | None = None
        #: the round's outcome for Flower: the new arrays and the replies aggregated
        self.result: tuple[ArrayRecord | None, list[Reply]] = (None, [])
        self.accountant: RunAccountant | None = None  # a private run's (prepare_privacy)

    # ------------------------------------------------------------------ the round's state
    def begin(self, t: int, grid: Grid, arrays: ArrayRecord, config: ConfigRecord) -> None:
        """Start round t at ``arrays`` (w_t) with the nodes connected to ``grid``; ``config``:
        Flower's config of the round's train messages."""
        self.grid, self.like, self.config = grid, arrays, config
        self.nodes = self.connected(grid)
        try:
            self.model.check_k(len(self.nodes), self.k)  # e.g. pool:P needs P connected nodes
        except SelectionError as exc:
            raise FlowerRunError(f"round {t}: {exc}") from None
        self.w_t = flatten(arrays)
        self.guard.start_round(self.w_t)
        self.failures = {}
        self.ex.cost = MessageCost(probe_floats=self.model.probe_floats)
        self.measured = {}
        self._probed = None
        self.result = (None, [])

    def connected(self, grid: Grid) -> list[int]:
        """The connected node ids, once at least K are (FlowerRunError after
        ``wait_for_nodes`` seconds)."""
        deadline = time.monotonic() + self.wait_for_nodes
        while True:
            nodes = sorted(int(n) for n in grid.get_node_ids())
            if len(nodes) >= self.k:
                return nodes
            if time.monotonic() >= deadline:
                raise FlowerRunError(
                    f"K={self.k} exceeds the {len(nodes)} connected node(s) "
                    f"(waited {self.wait_for_nodes:g} s for more)"
                )
            time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))

    @property
    def domains(self) -> tuple[str, ...]:
        """The probe phase's domains (the server's validation data), else those of the nodes
        heard from."""
        if self._probed is not None:
            return tuple(self._probed.domains)
        return tuple(dict.fromkeys(str(row["domain"]) for row in self.rows.values()))

    def sizes(self) -> dict[str, int]:
        """Every client's latest accepted size (what :class:`.guard.ReplyGuard` bounds claims
        against)."""
        return {c: int(row["n_samples"]) for c, row in self.rows.items()}

    def message(
        self, phase: Phase, t: int, extra: Mapping[str, ArrayRecord] | None = None
    ) -> RecordDict:
        """The record of the round's train messages in ``phase`` (:func:`message_record`)."""
        return message_record(
            self.like,
            self.config,
            phase=phase,
            t=t,
            train_config=self.train_config,
            proximal_mu=self.proximal_mu,
            keys=self.keys,
            extra=extra,
        )

    def _name(self, node: int) -> str:
        return self.ex.client_of.get(node, f"node-{node}")

    def _node(self, name: str) -> int:
        if name in self.ex.node_of:
            return self.ex.node_of[name]
        return int(name.removeprefix("node-"))

    # ------------------------------------------------------------------ before the choice
    def rule_problem(self, t: int, k: int) -> None:
        return None  # every rule reads the statistics its nodes report

    def clients(self, t: int) -> pd.DataFrame:
        """The connected nodes (after the probe phase: those that answered it), partition
        order; a node not heard from yet counts as the mean size of those known, so round 0
        draws a pool uniformly."""
        if self._probed is not None:
            return self._probed.clients
        known = [float(self.rows[c]["n_samples"]) for c in map(self._name, self.nodes)
                 if c in self.rows]  # fmt: skip
        mean = float(np.mean(known)) if known else 1.0
        rows = []
        for node in self.nodes:
            name = self._name(node)
            row = self.rows.get(name, {})
            order = row.get("_pid", (1, node))
            rows.append((order, name, str(row.get("domain", "")), row.get("n_samples", mean)))
        rows.sort(key=lambda r: r[0])
        return pd.DataFrame([r[1:] for r in rows], columns=["client_id", "domain", "n_samples"])

    def train(self, t: int, ids: Sequence[str]) -> pd.DataFrame:
        """``measure`` messages to ``ids`` at w_t: the round-stats rows of those that replied."""
        messages = self.measure_messages(t, ids)
        return self.measured_from(t, self.grid.send_and_receive(messages, timeout=self.ex.timeout))

    def measure_messages(self, t: int, ids: Sequence[str]) -> list[Message]:
        """The ``measure`` messages to ``ids`` at w_t (:meth:`measured_from` reads the replies)."""
        self._asked = [self._node(c) for c in ids]
        return self.ex.messages(self.message(Phase.MEASURE, t, None), self._asked)

    def measured_from(self, t: int, replies: Iterable[Message]) -> pd.DataFrame:
        """The round-stats rows of the nodes that replied to the ``measure`` messages."""
        got = self.ex.collect(replies, self._asked, self.w_t, self.failures, self.sizes())
        self.ingest(got, t)
        self.measured = {r.client_id: r for r in got}
        # none may have replied: a model that remembers (stale) still shows its last reports;
        # one that does not finds fewer than K rows (prepare says so)
        return self.frame([r.client_id for r in sorted(got, key=reply_order)], t)

    def probe(self, t: int) -> tuple[pd.DataFrame, Mapping[str, float], Mapping[str, int]]:
        """``probe`` messages to every node with the server's per-domain validation gradients
        at w_t (no training): their probe statistics (:meth:`.probe.Exchange.probe`)."""
        g, acc, val_sizes = self.server.validation_gradients(self.w_t)
        self.ex.cost.probed = True
        gd = {"fedsel-gd": ArrayRecord({"g": Array(np.asarray(g, dtype=np.float32))})}
        replies = self.grid.send_and_receive(
            self.ex.messages(self.message(Phase.PROBE, t, gd), self.nodes),
            timeout=self.ex.timeout,
        )
        self._probed = self.ex.probe(
            replies,
            self.nodes,
            t=t,
            k=self.k,
            base_acc=acc,
            val_sizes=val_sizes,
            hist=self.hist,
            sizes=self.sizes(),
            failures=self.failures,
        )
        return self._probed.probe, self._probed.base_acc, self._probed.val_sizes

    def logits(self, model: InformationModel, inputs: RoundInputs) -> None:
        return None  # no reply carries validation logits (check_flower_selector)

    def prepare(self, t: int, table: pd.DataFrame) -> tuple[pd.DataFrame, Any, str]:
        """K nodes with statistics or FlowerRunError; a stock node's missing statistics filled
        in, or the ``on_missing`` selector (:meth:`.stock.StockClients.complete`)."""
        if len(table) < self.k:
            raise FlowerRunError(self._too_few(len(table), t))
        return self.stock.complete(table)

    def _too_few(self, n: int, t: int) -> str:
        detail = "; ".join(f"{c}: {r}" for c, r in self.failures.items()) or "none failed"
        return (
            f"round {t}: only {n} of {len(self.nodes)} connected nodes have statistics, "
            f"fewer than K={self.k} ({detail})"
        )

    def vectors(self, source: VectorSource, table: pd.DataFrame) -> tuple[list[str], np.ndarray]:
        """The update vectors ``source`` names: the updates last aggregated from each node
        (``stale``; NaN rows for nodes never aggregated) or this round's measured updates
        (``fresh``)."""
        ids = list(table["client_id"])
        nan = np.full(len(self.w_t), np.nan, dtype=np.float32)
        if source == VectorSource.FRESH:
            kept = {c: r.delta for c, r in self.measured.items() if r.delta is not None}
        else:
            kept = self.committed
        return ids, np.stack([np.asarray(kept.get(c, nan), dtype=np.float32) for c in ids])

    # ------------------------------------------------------------------ the commit
    def commit(self, t: int, choice: RoundChoice, inputs: RoundInputs, before: Any) -> Committed:
        """The chosen nodes' updates: those measured this round as they are, else trained
        now (``commit`` messages); w_{t+1} over the ones that arrived, evaluated by the
        server where it can."""
        messages = self.commit_messages(t, choice)
        replies = self.grid.send_and_receive(messages, timeout=self.ex.timeout) if messages else []
        return self.committed_from(t, choice, replies)

    def commit_messages(self, t: int, choice: RoundChoice) -> list[Message]:
        """The ``commit`` messages of ``choice`` ([] where every pick's update was measured
        this round: those are the commit; :meth:`committed_from` reads the replies)."""
        if all(c in self.measured for c in choice.ids):
            self._asked = None
            return []
        self._asked = [self.ex.node_of[c] for c in choice.ids]
        return self.ex.messages(self.message(Phase.COMMIT, t, None), self._asked)

    def committed_from(self, t: int, choice: RoundChoice, replies: Iterable[Message]) -> Committed:
        """w_{t+1} over the picks' updates that arrived (the replies to :meth:`commit_messages`,
        or this round's measured updates), evaluated by the server where it can."""
        ids = choice.ids
        if self._asked is None:  # the K measured updates are the commit
            ok = [self.measured[c] for c in ids]
        else:
            nodes = self._asked
            got = self.ex.collect(replies, nodes, self.w_t, self.failures, self.sizes())
            chosen = set(ids)
            ok = [r for r in got if r.client_id in chosen]
            self.ingest(ok, t)  # the picks' true statistics, from their updates
        if self.selector.reads == Reads.UPDATES:
            self.committed.update({r.client_id: r.delta for r in ok if r.delta is not None})
        new_arrays, new_w = None, self.w_t
        if ok:
            D = torch.as_tensor(np.stack([r.delta for r in ok]), dtype=torch.float32)
            alpha = torch.as_tensor(self.alpha(ok, choice.weights), dtype=torch.float32)
            w = torch.as_tensor(self.w_t, dtype=torch.float32)
            new_w = (w + (alpha.unsqueeze(1) * D).sum(0)).numpy()
            new_arrays = unflatten_like(new_w, self.like)
        self.result = (new_arrays, ok)
        accuracies: dict[str, float] = {}
        if self.server.evaluate_global is not None:
            metrics = dict(self.server.evaluate_global(new_w))
            accuracies = domain_metrics(metrics, self.stock.domain_list(metrics))
        columns = {
            "mu": self.proximal_mu,
            "engine": "flower",
            "n_aggregated": len(ok),
            "failed": ";".join(self.failures),
            "failures": " | ".join(f"{c}: {r}" for c, r in self.failures.items()),
            "suspects": " | ".join(f"{c}: {why}" for c, why in self.guard.suspects.items()),
        }
        if self.accountant is not None:
            columns.update(dp_epsilon=self.accountant.step(), dp_z=self.accountant.privacy.z)
        note = "" if ok else "no selected node replied: the model is unchanged"
        observed = self.frame([r.client_id for r in ok], t) if ok else None
        return Committed(accuracies, observed, self.ex.cost.columns(), columns, note)

    def alpha(self, ok: list[Reply], weights: Mapping[str, float] | None) -> np.ndarray:
        """The aggregation weights of the replies ``ok``: the choice's, else by samples or
        uniform."""
        if weights is not None:
            w = np.array([float(weights.get(r.client_id, 0.0)) for r in ok])
        elif self.aggregation == "uniform":
            w = np.ones(len(ok))
        else:
            w = np.array([float(r.n) for r in ok])
        if w.sum() <= 0:
            w = np.ones(len(ok))
        return w / w.sum()

    # ------------------------------------------------------------------ statistics rows
    def ingest(self, replies: list[Reply], t: int) -> None:
        """Statistics rows of measured nodes (the server's part computed here) at round t."""
        if not replies:
            return
        w_t = self.w_t
        D = np.stack([r.delta for r in replies])
        server: dict[str, np.ndarray] = {}
        if self.server.evaluate_candidates is not None:
            server = {c: np.asarray(v) for c, v in self.server.evaluate_candidates(w_t, D).items()}
        Dt = torch.as_tensor(D, dtype=torch.float32)
        n = torch.as_tensor([r.n for r in replies], dtype=torch.float32)
        cos = cosine_to(Dt, (n.unsqueeze(1) * Dt).sum(0) / n.sum()).numpy()
        for r in replies:
            if "label-hist" in r.metrics:
                self.hist[r.client_id] = np.asarray(r.metrics["label-hist"], dtype=np.float64)
        glob = sum(self.hist.values()) if self.hist else None
        self.stock.infer_domains(replies, server, w_t)
        for j, r in enumerate(replies):
            row: dict[str, Any] = {
                "client_id": r.client_id,
                "domain": r.domain,
                "n_samples": int(r.n),
            }
            mine = {c: float(v[j]) for c, v in server.items()}
            theirs = {
                c: v for c, v in r.metrics.items() if c not in INTERNAL and not isinstance(v, list)
            }
            u_cols = [c for c in (*mine, *theirs) if c.startswith("U_")]
            for col in ("U", *dict.fromkeys(u_cols)):
                if col in mine or col in theirs:
                    row[col] = mine.get(col, theirs.get(col))
            if f"U_{r.domain}" in row and "U_own" not in theirs:
                row["U_own"] = row[f"U_{r.domain}"]
            for col, v in {**theirs, **mine}.items():
                row.setdefault(col, v)
            row["F"] = max(float(r.metrics["F"]), F_FLOOR) if "F" in r.metrics else np.nan
            if "B" not in theirs:
                has = glob is not None and r.client_id in self.hist
                row["B"] = js_divergence(self.hist[r.client_id], glob) if has else np.nan
            if r.missing:
                row["_missing"] = ";".join(sorted(r.missing))
            row["cos_g"] = float(cos[j])
            if "gamma-achieved" in r.metrics:
                row["gamma_achieved"] = float(r.metrics["gamma-achieved"])
            if r.client_id in self.guard.suspects:  # its claims were bounded (capped or clipped)
                row["suspect"] = self.guard.suspects[r.client_id]
            row["measured_round"] = t
            row["_pid"] = reply_order(r)
            self.rows[r.client_id] = row

    def frame(self, ids: Sequence[str], t: int) -> pd.DataFrame:
        """The round-stats rows of ``ids`` measured at round t, partition order, in the
        oracle's column order."""
        rows = [{"round": t, **self.rows[c]} for c in ids if c in self.rows]
        if not rows:
            return pd.DataFrame()
        table = pd.DataFrame(rows).sort_values("_pid", kind="stable").drop(columns="_pid")
        table = table.drop(columns=[c for c in ("_missing",) if c in table.columns])
        return _order(table.reset_index(drop=True))


_FRONT = ("round", "client_id", "domain", "n_samples", "U")


def _order(table: pd.DataFrame) -> pd.DataFrame:
    """The oracle's column order: round, client_id, domain, n_samples, U, U_<d>..., rest."""
    cols = list(table.columns)
    doms = [c for c in cols if c.startswith("U_") and c not in BACK]
    front = [c for c in _FRONT if c in cols] + doms + [c for c in BACK if c in cols]
    rest = [c for c in cols if c not in front and c != "measured_round"]
    tail = ["measured_round"] if "measured_round" in cols else []
    return table[front + rest + tail]


def message_record(
    arrays: ArrayRecord,
    config: ConfigRecord,
    *,
    phase: Phase,
    t: int,
    train_config: Mapping[str, Any],
    proximal_mu: float,
    keys: tuple[str, str],
    extra: Mapping[str, ArrayRecord] | None = None,
) -> RecordDict:
    """The record of one train message: w_t (``arrays``) and the round's config with
    fedsel's phase and round, the run's train config and FedProx's μ (``keys``: the
    strategy's array and config record keys)."""
    cfg = ConfigRecord(dict(config))
    for key, value in train_config.items():
        cfg[key] = value
    cfg["server-round"] = t + 1
    cfg[ROUND_KEY] = t
    cfg[PHASE_KEY] = str(phase)
    cfg["proximal-mu"] = float(proximal_mu)
    record = RecordDict({keys[0]: arrays, keys[1]: cfg})
    for key, rec in (extra or {}).items():
        record[key] = rec
    return record
