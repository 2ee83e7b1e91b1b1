"""``FedselStrategy``: Flower FedProx whose ``configure_train`` picks K nodes with a fedsel selector.

Why one module past 450 lines: Flower's ``Strategy`` is one class (its configure and
aggregate steps for training and evaluation, ``summary``, ``start``), and its docstring is the
contract a Flower user reads; the round itself lives in :mod:`.transport` and
:mod:`fl_oracle.experiments.transport`.

A drop-in strategy for a Flower ServerApp on the Message API (``flwr.serverapp``)::

    strategy = FedselStrategy("maxmin:2", k=5, proximal_mu=0.01,
                              server=ServerSide(evaluate_candidates=my_val_accuracies))
    strategy.start(grid=grid, initial_arrays=ArrayRecord(model.state_dict()), num_rounds=10)

Every round t (Flower's ``server_round`` = t + 1) is ``fedsel train``'s round
(:class:`fl_oracle.experiments.transport.RoundPlay`) over the strategy's transport
(:class:`.transport.FlowerTransport`): the strategy supplies only how a node is asked. Flower's
contract holds: ``configure_train`` returns the messages of the exchange that trains the
round's commit and ``aggregate_train`` aggregates their replies, so Flower's wrappers compose
with it (e.g. ``DifferentialPrivacyServerSideFixedClipping`` clips the replies it aggregates and
noises the new model; the replies must then carry the model, as a stock ClientApp's do). The information model decides who trains before the choice, builds the view the
selector sees and keeps what the committed nodes report, as in the loop:

1. **Measure.** ``stats="fresh"`` (default): every connected node gets a train message with
   ``config["fedsel-phase"] = "measure"`` at w_t and replies with its update and statistics.
   ``stats="pool:P"``: P nodes drawn ∝ their sample counts get it. ``stats="stale"``: only
   nodes never measured before get it; the others keep the statistics of their last training
   reply (measured at the model they trained from, so up to several rounds old).
   ``stats="probe"`` / ``"predicted"``: every node gets a ``probe`` message (w_t and the server's
   per-domain validation gradients) and answers its probe statistics without training; the
   model predicts U, U_<domain> from them, calibrated on the nodes trained in earlier rounds.
2. **Select.** The statistics of the connected nodes become a round-stats table
   (``docs/contract.md``) and the selector (any :func:`selection.selectors.make_selector` spec,
   or a callable ``(table, k) -> ids``) picks K client ids; an infeasible ε falls back to the
   smallest-gap point, as in ``fedsel train``.
3. **Commit.** Chosen nodes whose updates were measured this round (``fresh``, ``pool:P``) are
   committed as they are (nobody trains twice); the others get ``fedsel-phase = "commit"`` (and
   FedProx's ``proximal-mu``). The new model is w_t + Σ α_i Δ_i over the updates that arrived, α ∝ n_i
   (``aggregation="samples"``), uniform, or q-FFL's n_i·loss_i^q for ``qffl:q`` selectors.
4. **Evaluate** (optional, FedAvg's federated evaluation): nodes report their probe loss (and
   gradient) at w_{t+1}; the history gets ``global_loss`` and ``B_dissimilarity``.

Who computes what. The server computes from the replies: ``cos_g`` (cosine of Δ_i with the
sample-weighted mean update of the nodes measured with it), ``B`` (JS divergence of the node's
label histogram from the sum of all histograms seen) and, with ``ServerSide.evaluate_candidates``, ``U``,
``U_<domain>`` (and any further column it returns) of w_t + Δ_i on server-held validation data.
The node reports the rest in its reply's ``MetricRecord``: ``partition-id`` (echoed back: it
maps the Flower node id to the fedsel client id ``client_ids[partition-id]``),
``num-examples`` (n_samples), ``F``, ``loss``, ``label-hist`` (class counts) or ``B``, and
optionally ``steps``, ``gamma-achieved``, ``U_local``, or ``U``/``U_<domain>`` when the server
has no validation data; its ``ConfigRecord`` ``"fedsel"`` holds ``domain``. The update is the
``ArrayRecord`` ``"delta"`` (Δ_i) when present, otherwise the first ``ArrayRecord`` (the locally
trained model, Δ_i = it − w_t).

A stock ClientApp that reports none of this (Flower's ``quickstart-pytorch``: its model and
``num-examples``) still joins: it is named ``node-<id>``, its domain is the one its update lifts
most on the server's per-domain validation data, and F and B are filled in neutrally when the
selector's choice does not read them, else ``on_missing`` decides (see the class and
:mod:`.stock`); :func:`fl_oracle.experiments.flower.mod.fedsel_stats_mod` adds everything in one
line.

Failures never stop a round and never hang it: a reply carrying an error, a reply without the
statistics, or no reply within ``timeout`` seconds leaves that node out (of the table, or of the
aggregate), and the history row lists it (``failed``, ``failures``). Fewer than K measured
nodes, or fewer than K connected after ``wait_for_nodes`` seconds, raise
:class:`FlowerRunError` with the reason.

``history`` holds one row per round in the contract of ``fedsel train``'s ``history.csv``
(:mod:`fl_oracle.experiments.loop`), plus ``engine``, ``failed``, ``failures`` and
``n_aggregated``; ``stats`` every round's table with ``measured_round`` and ``chosen``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedProx

from fl_oracle.experiments.flower.checks import (
    check_flower_selector,
    check_stats,
    flower_information,
)
from fl_oracle.experiments.flower.codec import (
    PHASE_KEY,
    ROUND_KEY,
    first_metrics,
    flatten,
    unflatten_like,
)
from fl_oracle.experiments.flower.guard import ClaimGuard, ReplyGuard
from fl_oracle.experiments.flower.probe import Exchange, FlowerRunError
from fl_oracle.experiments.flower.server_side import NodePolicy, ServerSide
from fl_oracle.experiments.flower.stock import StockClients
from fl_oracle.experiments.flower.transport import INTERNAL, FlowerTransport
from fl_oracle.experiments.privacy import RunAccountant
from fl_oracle.experiments.round_step import GLOBAL_KEYS
from fl_oracle.experiments.transport import RoundPlay, RoundRun
from fl_oracle.sim.stats import b_dissimilarity
from selection.errors import SelectionError
from selection.selectors import as_selector, make_selector
from selection.specs import Spec, parse_spec

__all__ = [
    "FedselStrategy",
    "FlowerRunError",
    "flatten",
    "unflatten_like",
    "PHASE_KEY",
    # the checks before a run (:mod:`.checks`), re-exported where the strategy's users import them
    "check_flower_selector",
    "check_stats",
    "flower_information",
]

# What fedsel's client side reports (kept out of the clients' own aggregated metrics).
_FEDSEL_METRICS = INTERNAL - {"num-examples"} | {"F", "B", "loss", "steps", "U", "U_local"}


class FedselStrategy(FedProx):
    """FedProx whose training nodes are chosen by a fedsel selector (module docstring).

    Args:
        selector: a selector spec (``eps:5``, ``maxmin:2``, ``nsga2:knee``, ``random``, ...),
            parsed (:class:`selection.specs.Spec`) or its text, or a callable
            ``(round_stats, k) -> ids`` (optionally with ``.choose(problem)``).
        k: nodes trained per round.
        seed: seed of the selector's own random stream.
        stats: ``fresh``, ``stale``, ``pool:P``, ``probe`` or ``predicted`` (module
            docstring); None (default): the selector spec's own ``@MODEL``, else ``fresh``.
            One that contradicts the spec's is refused (:func:`flower_information`).
        server: what the server holds beside the nodes (:class:`.server_side.ServerSide`:
            candidate evaluation, global evaluation, validation gradients, declared sizes,
            planned steps); None: nothing, the nodes report their statistics.
        nodes: how the nodes are asked and what a failure does
            (:class:`.server_side.NodePolicy`: client ids, timeouts, the train config, the
            missing-statistics rule, clipping); None: its defaults.
        aggregation: ``samples`` (α ∝ n) or ``uniform``; a selector's own weights (q-FFL,
            a rule's, ``agg=``) override it.
        on_round: called with (history row, stats table) once a round is complete.
        name: the selector's name in the history (default the spec).
        **fedprox: Flower's own FedProx options, as in Flower: ``proximal_mu`` (sent in every
            train message's config), ``fraction_evaluate`` (default 1.0),
            ``min_evaluate_nodes`` (default 0), ``weighted_by_key`` (the clients' own
            metrics' weight, default ``num-examples``), ``train_metrics_aggr_fn``,
            ``evaluate_metrics_aggr_fn``, ``arrayrecord_key``, ``configrecord_key``. The
            training fraction and node minimums are K's.

    ``start`` returns Flower's ``Result`` with fedsel's per-round ``history`` and ``stats``
    tables attached (``result.fedsel_history``, ``result.fedsel_stats``: DataFrames).

    Examples:
        >>> import numpy as np
        >>> from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord
        >>> from flwr.app import RecordDict
        >>> from fl_oracle.experiments.flower.local_grid import LocalGrid
        >>> from fl_oracle.experiments.flower.strategy import FedselStrategy
        >>> def node(msg, ctx):  # node i: its model w + i + 1 and its statistics, F = i + 1
        ...     i = int(ctx.node_config["partition-id"])
        ...     w = ArrayRecord({"w": Array(msg.content["arrays"]["w"].numpy() + i + 1.0)})
        ...     m = {"partition-id": i, "num-examples": 10, "F": i + 1.0, "loss": 2.0,
        ...          "label-hist": [1.0, 1.0], "U": 10.0 * i, "U_a": 10.0 * i, "U_b": 10.0 * i}
        ...     info = ConfigRecord({"domain": "ab"[i % 2]})
        ...     content = RecordDict({"arrays": w, "metrics": MetricRecord(m), "fedsel": info})
        ...     return Message(content, reply_to=msg)
        >>> strategy = FedselStrategy("fisher-topk", k=2, fraction_evaluate=0.0)
        >>> w0 = ArrayRecord({"w": Array(np.zeros(2, dtype=np.float32))})
        >>> result = strategy.start(grid=LocalGrid(node, 4), initial_arrays=w0, num_rounds=1)
        >>> # the two largest F (nodes 2, 3); w = the mean of their updates, 3 and 4
        >>> result.fedsel_history["selected"].tolist(), result.arrays["w"].numpy().tolist()
        (['2;3'], [3.5, 3.5])
        >>> result.fedsel_stats["chosen"].tolist()
        [False, False, True, True]
    """

    def __init__(
        self,
        selector: str | Spec | Callable,
        k: int,
        *,
        seed: int = 0,
        stats: str | None = None,
        server: ServerSide | None = None,
        nodes: NodePolicy | None = None,
        aggregation: str = "samples",
        on_round: Callable[[dict, pd.DataFrame], None] | None = None,
        name: str | None = None,
        **fedprox: Any,
    ) -> None:
        fixed = sorted(set(fedprox) & {"fraction_train", "min_train_nodes", "min_available_nodes"})
        if fixed:
            raise ValueError(f"{fixed[0]} is K's (k={k!r}): FedselStrategy trains K nodes a round")
        nodes = nodes if nodes is not None else NodePolicy()
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"k={k!r} must be an integer >= 1")
        text = selector if isinstance(selector, str) else None
        if text is not None:  # parsed once, here
            selector = parse_spec(text)
        spec = selector if isinstance(selector, Spec) else None
        # the spec's own @MODEL unless stats names it again (a contradiction is refused)
        stats = check_stats(flower_information(selector, stats, k=int(k)))
        #: the run's information model: the round is fedsel train's (fl_oracle.experiments.
        #: transport.play_round), over this strategy's nodes (.transport.FlowerTransport)
        self.model = stats.make(seed=seed)
        try:  # K against the model's own argument (the connected nodes: every round)
            self.model.check_k(max(int(k), stats.arg or 0), int(k))
        except SelectionError as exc:
            raise ValueError(f"stats mode {stats}: {exc}") from None
        if self.model.reads_probe and (server is None or not server.calibrates):
            raise ValueError(
                f"stats mode {stats} needs the server's validation_gradients and "
                "evaluate_candidates (the digits server supplies both)"
            )
        #: the server's callbacks and knowledge (validation data, the partition)
        self.server = server if server is not None else ServerSide()
        if aggregation not in ("samples", "uniform"):
            raise ValueError(f"aggregation {aggregation!r} must be 'samples' or 'uniform'")
        # a plain callable wrapped once
        self.selector = (
            make_selector(spec, seed=seed) if spec is not None else as_selector(selector, name)
        )
        label = text or (spec.canonical if spec is not None else type(selector).__name__)
        check_flower_selector(self.selector, label)
        self.name = name or label
        super().__init__(
            **{"min_evaluate_nodes": 0, **fedprox},
            fraction_train=1.0,
            min_train_nodes=int(k),
            min_available_nodes=int(k),
        )
        self.k = int(k)
        self.seed = int(seed)
        self.stats_mode = stats
        #: how the nodes are asked (.server_side.NodePolicy)
        self.nodes = nodes
        self.aggregation = aggregation
        self.on_round = on_round
        self.history: list[dict] = []
        self.tables: list[pd.DataFrame] = []
        fallback = None if nodes.fallback is None else make_selector(nodes.fallback, seed=seed)
        # the replies' checks (.guard) and the exchanges with the nodes (.probe)
        guard = ReplyGuard(
            ClaimGuard(self.server.declared_sizes, clip=nodes.clip_updates),
            lr=nodes.train_config.get("lr"),
            max_steps=self.server.max_steps,
        )
        #: what a round asks of the nodes, and what they answered
        self.transport = FlowerTransport(
            self.model,
            self.selector,
            exchange=Exchange(
                self._construct_messages,
                client_ids=None if nodes.client_ids is None else list(nodes.client_ids),
                timeout=nodes.timeout,
                guard=guard,
            ),
            guard=guard,
            # stock nodes: domains inferred, missing statistics filled in or a fallback (.stock)
            stock=StockClients(
                self.selector,
                name=self.name,
                seed=self.seed,
                k=self.k,
                on_missing=nodes.on_missing,
                fallback=fallback,
                evaluate_candidates=self.server.evaluate_candidates,
            ),
            server=self.server,
            k=self.k,
            wait_for_nodes=nodes.wait_for_nodes,
            aggregation=aggregation,
            proximal_mu=self.proximal_mu,
            train_config=nodes.train_config,
            keys=(self.arrayrecord_key, self.configrecord_key),
        )
        self._run = RoundRun(
            self.selector,
            k=self.k,
            name=self.name,
            seed=self.seed,
            stats_mode=stats,
            surrogate=str(self.selector.surrogate),
            q=self.selector.aggregation_q,
            upper_bound=self.model.upper_bound,
        )
        #: the round configure_train opened: (t, its play, whether its exchange measures)
        self._pending: tuple[int, RoundPlay, bool] | None = None

    # ------------------------------------------------------------------ Flower API
    def summary(self) -> None:
        from logging import INFO

        from flwr.supercore import log

        weighted = {
            "samples": "num-examples (n_i)",
            "uniform": "uniform",
        }[self.aggregation]
        if self.selector.aggregation_q is not None:
            weighted = f"q-FFL, n_i·loss_i^{self.selector.aggregation_q:g}"
        log(INFO, "\t├──> fedsel selection: %s, K=%d, stats %s", self.name, self.k, self.stats_mode)
        log(INFO, "\t│\t├── Statistics: %s", type(self.model).summary)
        log(INFO, "\t│\t├── Train: the K selected nodes of each round")
        log(
            INFO, "\t│\t├── Evaluate: fraction %.2f of the nodes, at random", self.fraction_evaluate
        )
        log(INFO, "\t│\t├── Aggregation weighted by: %s", weighted)
        log(INFO, "\t│\t├── Missing statistics: %s", self.nodes.on_missing)
        log(INFO, "\t│\t└── Proximal mu: %s", self.proximal_mu)

    def prepare_privacy(self, privacy) -> None:
        """Fit the information model to a privacy mode (``StatsPrivacy.prepare``, as the loop
        does); every row then records the ε spent and z (``dp_epsilon``, ``dp_z``)."""
        privacy.prepare(self.model)
        self.transport.accountant = RunAccountant(privacy)
        if privacy.on:  # a noised F is no evidence against an update's norm
            self.transport.guard.lr = None

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Round t = ``server_round`` − 1 as ``fedsel train`` plays it
        (:class:`fl_oracle.experiments.transport.RoundPlay`), up to the exchange that trains
        the commit, whose messages are returned for Flower to send: every candidate's
        ``measure`` message where the information model trains them all before the choice
        (``fresh``, ``pool:P``, ``stale``'s first round; the choice is made on their replies in
        :meth:`aggregate_train`), else the picks' ``commit`` messages (the probe pass and
        ``stale``'s first reports of new nodes are exchanged here, before the choice)."""
        clocks = (time.perf_counter(), time.process_time())
        t = int(server_round) - 1
        self.transport.begin(t, grid, arrays, config)
        play = RoundPlay(self.model, self.transport, self._run, t, clocks)
        ids = play.to_train()
        if ids is not None and self._trains_every_candidate(t, ids):
            self._pending = (t, play, True)
            return self.transport.measure_messages(t, ids)
        trained = self.transport.train(t, ids) if ids is not None else None
        choice = play.choose(trained)
        self._pending = (t, play, False)
        return self.transport.commit_messages(t, choice)

    def _trains_every_candidate(self, t: int, ids: list[str]) -> bool:
        """Whether the exchange before the choice trains every client the selector may pick
        (then it is the round's training exchange)."""
        every = set(self.transport.clients(t)["client_id"]) <= set(ids)
        return every or self.model.chooses_among_trained

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The round finished on the replies of the exchange :meth:`configure_train` returned:
        the model it committed (w_t + Σ α_i Δ_i over the selected nodes that replied, None
        where none did) and the clients' own train metrics."""
        t, play, measured = self._pending if self._pending is not None else (None, None, False)
        if t != int(server_round) - 1:
            raise FlowerRunError(f"aggregate_train of round {server_round} without its selection")
        self._pending = None
        transport = self.transport
        if measured:  # the candidates' updates: the choice is made on them now
            choice = play.choose(transport.measured_from(t, replies))
            messages = transport.commit_messages(t, choice)
            replies = (
                transport.grid.send_and_receive(messages, timeout=self.nodes.timeout)
                if messages
                else []
            )
        row, table = play.finish(transport.committed_from(t, play.choice, replies))
        self.history.append(row)
        self.tables.append(table)
        if self.fraction_evaluate == 0.0 and self.on_round is not None:
            self.on_round(row, table)
        new_arrays, ok = self.transport.result
        out = self._client_metrics([r.content for r in ok], self.train_metrics_aggr_fn)
        failed = len(self.transport.failures)
        out.update({"n-aggregated": len(ok), "n-failed": failed, ROUND_KEY: t})
        return new_arrays, out

    def _client_metrics(self, contents: list, aggr) -> MetricRecord:
        """The clients' own metrics aggregated as FedAvg would (fedsel's statistics left out)."""
        from flwr.serverapp.strategy.strategy_utils import aggregate_metricrecords

        own = []
        for c in contents:
            recs = list(c.metric_records.values()) if c is not None else []
            if not recs or self.weighted_by_key not in recs[0]:
                continue
            keep = {k: v for k, v in recs[0].items() if k not in _FEDSEL_METRICS}
            own.append(RecordDict({"metrics": MetricRecord(keep)}))
        if not own:
            return MetricRecord()
        merged = (aggr or aggregate_metricrecords)(own, self.weighted_by_key)
        return MetricRecord({k: v for k, v in merged.items() if k != self.weighted_by_key})

    def start(self, *args: Any, **kwargs: Any):  # noqa: D102 - Flower's, plus fedsel's tables
        if len(args) < 4:  # the exchange Flower sends waits as long as the strategy's own
            kwargs.setdefault("timeout", self.nodes.timeout)
        result = super().start(*args, **kwargs)
        result.fedsel_history = pd.DataFrame(self.history)
        result.fedsel_stats = (
            pd.concat(self.tables, ignore_index=True) if self.tables else pd.DataFrame()
        )
        return result

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Ask the nodes for their loss (and probe gradient) at w_{t+1}."""
        if self.fraction_evaluate == 0.0:
            return []
        nodes = sorted(int(v) for v in grid.get_node_ids())
        n = max(1, int(self.min_evaluate_nodes), int(len(nodes) * self.fraction_evaluate))
        n = min(n, len(nodes))
        # a random sample, as FedAvg draws it (seeded by the strategy's seed and the round)
        rng = np.random.default_rng([self.seed, int(server_round), 0xE7A1])
        # (indices: node ids may exceed int64, which numpy would turn into floats)
        chosen = sorted(nodes[int(i)] for i in rng.choice(len(nodes), size=n, replace=False))
        config[ROUND_KEY] = int(server_round)
        config["server-round"] = int(server_round)
        record = RecordDict({self.arrayrecord_key: arrays, self.configrecord_key: config})
        return self._construct_messages(record, chosen, MessageType.EVALUATE)

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """``global_loss`` (n-weighted probe loss) and ``B_dissimilarity`` at w_{t+1}, and the
        clients' own evaluation metrics aggregated as FedAvg would."""
        replies = list(replies)
        losses, ns, grads = [], [], []
        for msg in replies:
            if msg.has_error() or not msg.has_content():
                continue
            m = first_metrics(msg.content)
            if m is None or "loss" not in m or "num-examples" not in m:
                continue
            losses.append(float(m["loss"]))
            ns.append(float(m["num-examples"]))
            if "grad" in msg.content.array_records:
                grads.append(flatten(msg.content["grad"]))
        out = self._client_metrics(
            [m.content for m in replies if not m.has_error() and m.has_content()],
            self.evaluate_metrics_aggr_fn,
        )
        if losses:
            n = np.asarray(ns)
            out["global_loss"] = float((n * np.asarray(losses)).sum() / n.sum())
            if len(grads) == len(losses):
                g = torch.as_tensor(np.stack(grads))
                out["B_dissimilarity"] = b_dissimilarity(g, torch.as_tensor(n, dtype=torch.float32))
            out["n-evaluated"] = len(losses)
        if self.history and self.history[-1]["round"] == int(server_round) - 1:
            row = self.history[-1]
            for key in GLOBAL_KEYS:
                if key in out:
                    row[key] = float(out[key])
            if self.on_round is not None and self.fraction_evaluate > 0.0:
                self.on_round(row, self.tables[-1])
        return out if len(out) else None
