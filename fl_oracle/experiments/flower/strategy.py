"""``FedselStrategy``: Flower FedProx whose ``configure_train`` picks K nodes with a fedsel selector.

Why this module is longer than the project's ~450 lines: much of it is this text, the class's
arguments and its runnable example; the code is Flower's hooks, the checks of a selector and a
stats mode before a run, and the round state the hooks share (the statistics rows and table,
the pending selection, the history); the stock-client inference (:mod:`.stock`), the reply checks
(:mod:`.guard`), the node exchanges with the probe phase (:mod:`.probe`) and what the server holds
beside the nodes (:mod:`.server_side`) have their own modules.

A drop-in strategy for a Flower ServerApp on the Message API (``flwr.serverapp``)::

    strategy = FedselStrategy("maxmin:2", k=5, proximal_mu=0.01,
                              server=ServerSide(evaluate_candidates=my_val_accuracies))
    strategy.start(grid=grid, initial_arrays=ArrayRecord(model.state_dict()), num_rounds=10)

Every round t (Flower's ``server_round`` = t + 1):

1. **Measure.** ``stats="fresh"`` (default): every connected node gets a train message with
   ``config["fedsel-phase"] = "measure"`` at w_t and replies with its update and statistics.
   ``stats="pool:P"``: P nodes drawn ∝ their sample counts get it. ``stats="stale"``: only
   nodes never measured before get it; the others keep the statistics of their last training
   reply (measured at the model they trained from, so up to several rounds old).
   ``stats="probe"`` / ``"predicted"``: every node gets a ``probe`` message (w_t and the
   server's per-domain validation gradients, ``ServerSide.validation_gradients``) and answers its probe
   statistics without training; the information model predicts U, U_<domain> from them,
   calibrated on the nodes that trained in earlier rounds.
2. **Select.** The statistics of the connected nodes become a round-stats table
   (``docs/contract.md``) and the selector (any :func:`selection.selectors.make_selector` spec,
   or a callable ``(table, k) -> ids``) picks K client ids; an infeasible ε falls back to the
   smallest-gap point, as in ``fedsel train``.
3. **Commit.** ``fresh`` and ``pool:P``: the K chosen nodes' measured updates are committed
   (nobody trains twice). ``stale``: the K nodes get ``fedsel-phase = "commit"`` (and FedProx's
   ``proximal-mu``). The new model is w_t + Σ α_i Δ_i over the updates that arrived, α ∝ n_i
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from flwr.app import (
    Array,
    ArrayRecord,
    ConfigRecord,
    Message,
    MessageType,
    MetricRecord,
    RecordDict,
)
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedProx

from fl_oracle.experiments.flower.codec import (
    PHASE_KEY,
    ROUND_KEY,
    MessageCost,
    Phase,
    Reply,
    first_metrics,
    flatten,
    reply_order,
    unflatten_like,
)
from fl_oracle.experiments.flower.guard import ClaimGuard, ReplyGuard
from fl_oracle.experiments.flower.probe import Exchange, FlowerRunError
from fl_oracle.experiments.flower.server_side import ServerSide
from fl_oracle.experiments.flower.stock import BACK, StockClients
from fl_oracle.experiments.round_step import (
    GLOBAL_KEYS,
    choose_round,
    domain_metrics,
    history_row,
    selector_state,
)
from fl_oracle.sim.stats import b_dissimilarity, cosine_to, js_divergence
from selection.baselines.reads import VECTOR_READS, Reads, VectorSource
from selection.defaults import DEFAULT_SURROGATE
from selection.schema import F_FLOOR

__all__ = ["FedselStrategy", "FlowerRunError", "flatten", "unflatten_like", "PHASE_KEY"]

# Reply metrics that are bookkeeping, not statistics columns.
_INTERNAL = {
    "partition-id", "num-examples", "label-hist", "gamma-achieved", "train-samples",
    "probe-samples",
}  # fmt: skip
# What fedsel's client side reports (kept out of the clients' own aggregated metrics).
_FEDSEL_METRICS = _INTERNAL - {"num-examples"} | {"F", "B", "loss", "steps", "U", "U_local"}


def check_flower_selector(selector: Any, spec: Any) -> None:
    """Refuse, before any work, what the strategy cannot supply: a surrogate that needs the
    candidates' validation logits (``ensemble``) and verified picks (an evaluator of the true
    aggregate), neither of which the Message API's replies carry.

    Examples:
        >>> from fl_oracle.experiments.flower.strategy import check_flower_selector
        >>> from selection.selectors import make_selector
        >>> check_flower_selector(make_selector("maxmin:2"), "maxmin:2") is None  # accepted
        True
        >>> check_flower_selector(make_selector("eps:5@verify"), "eps:5@verify")
        Traceback (most recent call last):
            ...
        ValueError: selector eps:5@verify: verified picks need the true aggregate of ...
    """
    from selection.surrogates import get_surrogate

    sur = str(getattr(selector, "surrogate", DEFAULT_SURROGATE))
    if get_surrogate(sur).needs_logits:
        raise ValueError(
            f"selector {spec}: the {sur} surrogate needs every candidate's validation logits, "
            "which Flower's replies do not carry; use mean or weighted in Flower"
        )
    if getattr(selector, "verify", 0):
        raise ValueError(
            f"selector {spec}: verified picks need the true aggregate of candidates evaluated "
            "in-process; run it in fedsel train or fedsel study"
        )
    if getattr(selector, "reads", None) == Reads.PROBE_GRADIENTS:
        raise ValueError(
            f"selector {spec}: it reads every node's probe gradient, which fedsel's Flower "
            "messages do not carry; use the updates (divfl:stale, divfl:fresh) in Flower, or "
            "run it in fedsel train or fedsel study"
        )


def flower_information(
    selector: Any, stats: str | None = None, *, n: int | None = None, k: int | None = None
) -> str:
    """The information model a Flower run reads: ``stats`` or the selector spec's own
    ``@MODEL``, checked as every driver checks it
    (:meth:`selection.specs.Spec.run_information`: a registered model, not contradicting the
    spec, feeding its surrogate; with ``n`` nodes and ``k``, against them by arithmetic).
    A baseline rule without a model, or a callable selector without ``stats``, reads the
    statistics of every node (``fresh``), as the strategy has always measured them.

    Examples:
        >>> from fl_oracle.experiments.flower.strategy import flower_information
        >>> flower_information("eps:5@stale"), flower_information("random", "pool:8")
        ('stale', 'pool:8')
        >>> flower_information("maxmin:2"), flower_information(lambda table, k: [])
        ('fresh', 'fresh')
        >>> flower_information("eps:5@stale", "probe")
        Traceback (most recent call last):
            ...
        selection.errors.SelectionError: --stats probe contradicts the spec's @stale ...
    """
    from selection.information import RULE, default_information
    from selection.specs import parse_spec

    if isinstance(selector, str):
        info = parse_spec(selector).run_information(stats, n=n, k=k)
    else:
        info = check_stats(default_information() if stats is None else stats)[0]
    return default_information() if info == RULE else info


def check_stats(stats: str) -> tuple[str, int | None]:
    """The strategy's information model, canonical (a name of the registry of
    :mod:`selection.information`), and the pool's P (None when not a pool); ValueError in one
    line for anything else.

    Examples:
        >>> from fl_oracle.experiments.flower.strategy import check_stats
        >>> check_stats("pool: 8"), check_stats("stale")
        (('pool:8', 8), ('stale', None))
        >>> check_stats("bogus")
        Traceback (most recent call last):
            ...
        ValueError: stats mode 'bogus': unknown information model 'bogus' (one of fresh, ...)
    """
    from selection.errors import SelectionError
    from selection.information import Information

    try:
        canon = Information(stats)  # a spec's parsed model is not parsed again
    except SelectionError as exc:
        raise ValueError(f"stats mode {stats!r}: {exc}") from None
    model, p = canon.model, canon.arg
    # the strategy's message phases, by what the model declares: every node measured (the
    # upper bound), unseen nodes (remembered rows), a drawn pool, or a probe message
    if not (model.upper_bound or model.remembers or model.probes or p):
        raise ValueError(f"stats mode {str(canon)!r} has no Flower message phase")
    return canon, p


@dataclass
class _Pending:
    t: int
    ids: list[str]
    nodes: dict[str, int]
    pred: dict[str, float]
    solve_seconds: float
    fallback: str
    table: pd.DataFrame
    weights: dict[str, float] | None
    w_t: np.ndarray
    clocks: tuple[float, float]
    failures: dict[str, str]
    reuse: bool = False  # fresh: the measured updates are committed, nobody trains again
    inputs: Any = None  # probe, predicted: the round's inputs, for the model's observe
    route: str = ""  # the backend that answered the round's problem ("" for a rule)
    state: dict[str, float] | None = None  # a stateful selector's state after the choice


class FedselStrategy(FedProx):
    """FedProx whose training nodes are chosen by a fedsel selector (module docstring).

    Args:
        selector: a selector spec (``eps:5``, ``maxmin:2``, ``nsga2:knee``, ``random``, ...) or
            a callable ``(round_stats, k) -> ids`` (optionally with ``.choose(problem)``).
        k: nodes trained per round.
        seed: seed of the selector's own random stream.
        stats: ``fresh``, ``stale``, ``pool:P``, ``probe`` or ``predicted`` (module
            docstring); None (default): the selector spec's own ``@MODEL``, else ``fresh``.
            One that contradicts the spec's is refused (:func:`flower_information`).
        proximal_mu: FedProx μ, sent in every train message's config.
        client_ids: fedsel client id of each partition id (default ``str(partition_id)``).
        server: what the server holds beside the nodes (:class:`.server_side.ServerSide`:
            candidate evaluation, global evaluation, validation gradients, declared sizes,
            planned steps); None: nothing, the nodes report their statistics.
        aggregation: ``samples`` (α ∝ n) or ``uniform``; q-FFL selectors override it.
        timeout: seconds to wait for the replies of one exchange.
        wait_for_nodes: seconds to wait for K nodes to connect before failing.
        train_config: extra entries for every train message's config (lr, local epochs, ...).
        on_round: called with (history row, stats table) once a round is complete.
        fraction_evaluate: fraction of nodes asked for their loss at w_{t+1} (0 = none).
        name: the selector's name in the history (default the spec).
        on_missing: what to do when nodes do not report a statistic the selector reads (a
            stock ClientApp without :func:`~fl_oracle.experiments.flower.mod.fedsel_stats_mod`
            sends no F and no label histogram): ``"fallback:<spec>"`` (default
            ``fallback:proportional``) selects with that spec in such rounds, ``"error"``
            stops the run. Statistics the selector does not read are filled with neutral
            values (F = 1, B = 0) and the run goes on.
        min_evaluate_nodes: as in Flower's FedAvg.
        weighted_by_key: as in Flower's FedAvg: the key of the weight of the clients' own
            metrics (a stock client's ``train_loss``, ``eval_loss``, ``eval_acc``).
        train_metrics_aggr_fn: as in Flower's FedAvg: aggregates the clients' train metrics
            (default: the mean weighted by ``weighted_by_key``) into the round's
            ``MetricRecord`` and Flower's ``Result``.
        evaluate_metrics_aggr_fn: the same for the evaluation metrics.
        clip_updates: scale an update whose norm lies beyond the round's others down to the
            largest norm within them (it is named either way).

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
        selector: str | Callable,
        k: int,
        *,
        seed: int = 0,
        stats: str | None = None,
        proximal_mu: float = 0.0,
        client_ids: Sequence[str] | None = None,
        server: ServerSide | None = None,
        aggregation: str = "samples",
        timeout: float = 600.0,
        wait_for_nodes: float = 30.0,
        train_config: Mapping[str, Any] | None = None,
        on_round: Callable[[dict, pd.DataFrame], None] | None = None,
        fraction_evaluate: float = 1.0,
        name: str | None = None,
        on_missing: str = "fallback:proportional",
        min_evaluate_nodes: int = 0,
        weighted_by_key: str = "num-examples",
        train_metrics_aggr_fn: Callable[[list[RecordDict], str], MetricRecord] | None = None,
        evaluate_metrics_aggr_fn: Callable[[list[RecordDict], str], MetricRecord] | None = None,
        clip_updates: bool = False,
    ) -> None:
        from selection.selectors import make_selector

        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"k={k!r} must be an integer >= 1")
        # the spec's own @MODEL unless stats names it again (a contradiction is refused)
        stats, self._pool = check_stats(flower_information(selector, stats, k=int(k)))
        if self._pool is not None and self._pool < k:
            raise ValueError(f"stats mode {stats}: the pool must hold at least K={k} nodes")
        from selection.information import make_information
        from selection.information.probe import Calibrated

        # what the model declares (the upper bound, what a client uploads)
        self._declared = make_information(stats, seed=seed)
        self._info = None  # the probe phase's information model (probe, predicted, boosted)
        if isinstance(self._declared, Calibrated):  # its view is the probe pass's, as the loop's
            if server is None or not server.calibrates:
                raise ValueError(
                    f"stats mode {stats} needs the server's validation_gradients and "
                    "evaluate_candidates (the digits server supplies both)"
                )
            self._info = make_information(stats, seed=seed)
        #: the server's callbacks and knowledge (validation data, the partition)
        self.server = server if server is not None else ServerSide()
        if aggregation not in ("samples", "uniform"):
            raise ValueError(f"aggregation {aggregation!r} must be 'samples' or 'uniform'")
        if not (timeout > 0 and wait_for_nodes >= 0):
            raise ValueError("timeout must be > 0 and wait_for_nodes >= 0 seconds")
        self.selector = (
            make_selector(selector, seed=seed) if isinstance(selector, str) else selector
        )
        check_flower_selector(self.selector, selector)
        self.name = name or (selector if isinstance(selector, str) else type(selector).__name__)
        super().__init__(
            fraction_train=1.0,
            fraction_evaluate=fraction_evaluate,
            min_train_nodes=int(k),
            min_evaluate_nodes=int(min_evaluate_nodes),
            min_available_nodes=int(k),
            weighted_by_key=weighted_by_key,
            train_metrics_aggr_fn=train_metrics_aggr_fn,
            evaluate_metrics_aggr_fn=evaluate_metrics_aggr_fn,
            proximal_mu=float(proximal_mu),
        )
        self.k = int(k)
        self.seed = int(seed)
        self.stats_mode = stats
        self.client_ids = None if client_ids is None else [str(c) for c in client_ids]
        self.aggregation = aggregation
        self.timeout = float(timeout)
        self.wait_for_nodes = float(wait_for_nodes)
        self.train_config = dict(train_config or {})
        self.on_round = on_round
        self.history: list[dict] = []
        self.tables: list[pd.DataFrame] = []
        self._rows: dict[str, dict] = {}  # client id -> its latest statistics row
        self._hist: dict[str, np.ndarray] = {}  # client id -> label histogram
        self._pending: _Pending | None = None
        self._stock: dict[str, set[str]] = {}  # client id -> statistics it does not report
        if on_missing != "error" and not on_missing.startswith("fallback:"):
            raise ValueError(f"on_missing={on_missing!r} must be 'error' or 'fallback:<spec>'")
        self.on_missing = on_missing
        fallback = None if on_missing == "error" else make_selector(on_missing[9:], seed=seed)
        # stock nodes: domains inferred, missing statistics filled in or a fallback (.stock)
        self._stock_clients = StockClients(
            self.selector,
            name=self.name,
            seed=self.seed,
            k=self.k,
            on_missing=on_missing,
            fallback=fallback,
            evaluate_candidates=self.server.evaluate_candidates,
        )
        self._like: ArrayRecord | None = None
        self._measured: dict[str, Reply] = {}  # fresh: this round's measured replies
        #: client id -> the update last aggregated from it (a rule reading ``updates``)
        self._committed: dict[str, np.ndarray] = {}
        # the replies' checks (.guard) and the exchanges with the nodes (.probe)
        self._guard = ReplyGuard(
            ClaimGuard(self.server.declared_sizes, clip=clip_updates),
            lr=self.train_config.get("lr"),
            max_steps=self.server.max_steps,
        )
        self._ex = Exchange(
            self._construct_messages,
            client_ids=self.client_ids,
            timeout=self.timeout,
            guard=self._guard,
        )

    # ------------------------------------------------------------------ Flower API
    def summary(self) -> None:
        from logging import INFO

        from flwr.supercore import log

        weighted = {
            "samples": "num-examples (n_i)",
            "uniform": "uniform",
        }[self.aggregation]
        if getattr(self.selector, "aggregation_q", None) is not None:
            weighted = f"q-FFL, n_i·loss_i^{self.selector.aggregation_q:g}"
        log(INFO, "\t├──> fedsel selection: %s, K=%d, stats %s", self.name, self.k, self.stats_mode)
        log(INFO, "\t│\t├── Train: the K selected nodes of each round (after a measure "
            "message to %s)", {"fresh": "every node", "stale": "unseen nodes"}.get(
                self.stats_mode, f"{self._pool} nodes drawn ∝ their samples" if self._pool
                else "every node, a probe without training"))  # fmt: skip
        log(
            INFO, "\t│\t├── Evaluate: fraction %.2f of the nodes, at random", self.fraction_evaluate
        )
        log(INFO, "\t│\t├── Aggregation weighted by: %s", weighted)
        log(INFO, "\t│\t├── Missing statistics: %s", self.on_missing)
        log(INFO, "\t│\t└── Proximal mu: %s", self.proximal_mu)

    def prepare_privacy(self, privacy) -> None:
        """Fit the run's information models to a privacy mode
        (:meth:`fl_oracle.experiments.privacy.StatsPrivacy.prepare`, as the loop does)."""
        privacy.prepare(self._declared)
        if self._info is not None:
            privacy.prepare(self._info)
        if privacy.on:  # a noised F is no evidence against an update's norm
            self._guard.lr = None

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Measure (fresh: all nodes; stale: unseen ones), select K, return their train messages."""
        clocks = (time.perf_counter(), time.process_time())
        t = int(server_round) - 1
        nodes = self._connected(grid)
        w_t = flatten(arrays)
        self._guard.start_round(w_t)
        failures: dict[str, str] = {}
        self._ex.cost = MessageCost(probe_floats=self._declared.probe_floats)
        self._measured = {}
        inputs = None
        if self._info is not None:
            measure = []
            inputs = self._probe_phase(nodes, arrays, config, grid, w_t, t, failures)
        elif self._declared.upper_bound:  # every node, every round
            measure = nodes
        elif self._pool is not None:
            measure = self._draw_pool(nodes, t)
        else:
            measure = [n for n in nodes if n not in self._ex.client_of]
        if measure:
            msgs = self._messages(measure, arrays, config, Phase.MEASURE, t)
            replies = grid.send_and_receive(msgs, timeout=self.timeout)
            got = self._ex.collect(replies, measure, w_t, failures, self._sizes())
            self._ingest(got, w_t, t)
            self._measured = {r.client_id: r for r in got}
        table = self._table(nodes, t) if inputs is None else self._info.view(inputs)
        if len(table) < self.k:
            detail = "; ".join(f"{c}: {r}" for c, r in failures.items()) or "none failed"
            raise FlowerRunError(
                f"round {t}: only {len(table)} of {len(nodes)} connected nodes have statistics, "
                f"fewer than K={self.k} ({detail})"
            )
        # the selector sees the neutral fill-ins; the stored table keeps what was measured
        solved, selector, note = self._stock_clients.complete(table)
        # the loop's own round step, judged by the selector's surrogate (no logits reach
        # Flower: check_flower_selector refuses surrogates that need them)
        choice = choose_round(
            selector,
            solved,
            self.k,
            name=self.name,
            where=f"round {t}",
            surrogate=str(getattr(self.selector, "surrogate", DEFAULT_SURROGATE)),
            q=getattr(self.selector, "aggregation_q", None),
            weights_table=table,
            error=FlowerRunError,
            vectors=self._rule_vectors(list(solved["client_id"]), len(w_t)),
        )
        ids, pred, weights = choice.ids, choice.pred, choice.weights
        solve_seconds, fallback = choice.solve_seconds, choice.fallback
        if note:
            fallback = note + (f"; {fallback}" if fallback else "")
        self._pending = _Pending(
            t,
            ids,
            {c: self._ex.node_of[c] for c in ids},
            pred,
            solve_seconds,
            fallback,
            table,
            weights,
            w_t,
            clocks,
            failures,
            # fresh, pool: the measured updates are the commit; stale too where every pick
            # was measured this round (round 0, or nodes seen for the first time)
            reuse=(self._info is None and not self._declared.remembers)
            or (self._declared.remembers and all(c in self._measured for c in ids)),
            inputs=inputs,
            route=choice.route,
            state=selector_state(self.selector),
        )
        if self._pending.reuse:  # the K measured updates are the commit: nobody trains again
            self._like = arrays
            return []
        return self._messages([self._ex.node_of[c] for c in ids], arrays, config, Phase.COMMIT, t)

    def _rule_vectors(self, ids: list[str], size: int) -> tuple[list[str], np.ndarray] | None:
        """The update vectors a rule reading them sees (:data:`selection.baselines.reads.VECTOR_READS`): the
        updates last aggregated from each node (``updates``; NaN rows for nodes never
        aggregated) or this round's measured updates (``fresh-updates``); None otherwise."""
        source = VECTOR_READS.get(str(getattr(self.selector, "reads", None)))
        if source is None:
            return None
        nan = np.full(size, np.nan, dtype=np.float32)
        if source == VectorSource.FRESH:
            kept = {c: r.delta for c, r in self._measured.items() if r.delta is not None}
        else:
            kept = self._committed
        return ids, np.stack([np.asarray(kept.get(c, nan), dtype=np.float32) for c in ids])

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """w_t + Σ α_i Δ_i over the selected nodes that replied; the history row."""
        p = self._pending
        if p is None or p.t != int(server_round) - 1:
            raise FlowerRunError(f"aggregate_train of round {server_round} without its selection")
        if p.reuse:
            ok = [self._measured[c] for c in p.ids if c in self._measured]
        else:
            got = self._ex.collect(
                replies, list(p.nodes.values()), p.w_t, p.failures, self._sizes()
            )
            ok = [r for r in got if r.client_id in p.nodes]
        if self._declared.remembers and ok:
            self._ingest(ok, p.w_t, p.t)
        if self._info is not None and ok:  # the picks' true statistics, from their updates
            self._ingest(ok, p.w_t, p.t)
            rows = pd.DataFrame([self._rows[r.client_id] for r in ok]).drop(
                columns=["_pid", "_missing"], errors="ignore"
            )
            self._info.observe(p.t, rows, p.inputs)
        new_arrays, new_w = None, p.w_t
        if getattr(self.selector, "reads", None) == Reads.UPDATES:
            self._committed.update({r.client_id: r.delta for r in ok if r.delta is not None})
        if ok:
            D = torch.as_tensor(np.stack([r.delta for r in ok]), dtype=torch.float32)
            alpha = torch.as_tensor(self._alpha(ok, p.weights), dtype=torch.float32)
            w = torch.as_tensor(p.w_t, dtype=torch.float32)
            new_w = (w + (alpha.unsqueeze(1) * D).sum(0)).numpy()
            new_arrays = unflatten_like(new_w, self._like)
        accuracies: dict[str, float] = {}
        if self.server.evaluate_global is not None:
            metrics = dict(self.server.evaluate_global(new_w))
            accuracies = domain_metrics(metrics, self._stock_clients.domain_list(metrics))
        row = history_row(
            t=p.t,
            name=self.name,
            seed=self.seed,
            stats_mode=self.stats_mode,
            k=self.k,
            ids=p.ids,
            accuracies=accuracies,
            pred=p.pred,
            surrogate=str(getattr(self.selector, "surrogate", DEFAULT_SURROGATE)),
            solve_seconds=p.solve_seconds,
            fallback=p.fallback,
            clocks=p.clocks,
            route=p.route,
            state=p.state,
            cost=self._ex.cost.columns(),
            upper_bound=self._declared.upper_bound,
        )
        row.update(
            mu=float(self.proximal_mu),
            engine="flower",
            n_aggregated=len(ok),
            failed=";".join(p.failures),
            failures=" | ".join(f"{c}: {r}" for c, r in p.failures.items()),
            suspects=" | ".join(f"{c}: {why}" for c, why in self._guard.suspects.items()),
        )
        if not ok:
            row["fallback"] = (row["fallback"] + "; " if row["fallback"] else "") + (
                "no selected node replied: the model is unchanged"
            )
        table = p.table.assign(chosen=p.table["client_id"].isin(p.ids))
        self.history.append(row)
        self.tables.append(table)
        self._pending = None
        if self.fraction_evaluate == 0.0 and self.on_round is not None:
            self.on_round(row, table)
        out = self._client_metrics([r.content for r in ok], self.train_metrics_aggr_fn)
        out.update({"n-aggregated": len(ok), "n-failed": len(p.failures), ROUND_KEY: p.t})
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

    # ------------------------------------------------------------------ helpers
    def _connected(self, grid: Grid) -> list[int]:
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

    def _draw_pool(self, nodes: Sequence[int], t: int) -> list[int]:
        """``pool:P``: P of the connected nodes drawn ∝ their sample counts, as FedAvg draws
        (the counts they reported; a node not heard from yet counts as the mean of those
        known, so round 0 draws uniformly), seeded by (seed, round)."""
        if self._pool > len(nodes):
            raise FlowerRunError(
                f"round {t}: pool:{self._pool} exceeds the {len(nodes)} connected nodes"
            )
        known = {
            n: self._rows[c]["n_samples"] for n, c in self._ex.client_of.items() if c in self._rows
        }
        mean = float(np.mean(list(known.values()))) if known else 1.0
        # the pool model's own draw (selection.information.pool), over the connected nodes
        clients = pd.DataFrame(
            {"client_id": [str(i) for i in range(len(nodes))],
             "n_samples": [float(known.get(n, mean)) for n in nodes]}
        )  # fmt: skip
        drawn = self._declared.trains_before(t, clients, self.k)
        return [nodes[int(i)] for i in drawn]

    def _messages(
        self,
        nodes: Sequence[int],
        arrays: ArrayRecord,
        config: ConfigRecord,
        phase: Phase,
        t: int,
        extra: Mapping[str, ArrayRecord] | None = None,
    ) -> list[Message]:
        """The train messages of one exchange (``phase``, round ``t``), sent through
        :meth:`.probe.Exchange.messages`."""
        self._like = arrays
        cfg = ConfigRecord(dict(config))
        for key, value in self.train_config.items():
            cfg[key] = value
        cfg["server-round"] = t + 1
        cfg[ROUND_KEY] = t
        cfg[PHASE_KEY] = str(phase)
        cfg["proximal-mu"] = float(self.proximal_mu)
        record = RecordDict({self.arrayrecord_key: arrays, self.configrecord_key: cfg})
        for key, rec in (extra or {}).items():
            record[key] = rec
        return self._ex.messages(record, nodes)

    def _probe_phase(
        self,
        nodes: Sequence[int],
        arrays: ArrayRecord,
        config: ConfigRecord,
        grid: Grid,
        w_t: np.ndarray,
        t: int,
        failures: dict[str, str],
    ):
        """``probe`` / ``predicted``: every node's probe pass against the server's per-domain
        validation gradients (no training), as the model's :class:`RoundInputs`
        (:meth:`.probe.Exchange.probe`)."""
        g, acc, val_sizes = self.server.validation_gradients(w_t)
        self._ex.cost.probed = True
        gd = {"fedsel-gd": ArrayRecord({"g": Array(np.asarray(g, dtype=np.float32))})}
        msgs = self._messages(nodes, arrays, config, Phase.PROBE, t, extra=gd)
        return self._ex.probe(
            grid.send_and_receive(msgs, timeout=self.timeout),
            nodes,
            t=t,
            k=self.k,
            base_acc=acc,
            val_sizes=val_sizes,
            hist=self._hist,
            sizes=self._sizes(),
            failures=failures,
        )

    def _sizes(self) -> dict[str, int]:
        """Every client's latest accepted size (what :class:`.guard.ReplyGuard` bounds claims
        against)."""
        return {c: int(row["n_samples"]) for c, row in self._rows.items()}

    def _ingest(self, replies: list[Reply], w_t: np.ndarray, t: int) -> None:
        """Statistics rows of measured nodes (server part computed here) at round t."""
        if not replies:
            return
        D = np.stack([r.delta for r in replies])
        server: dict[str, np.ndarray] = {}
        if self.server.evaluate_candidates is not None:
            server = {c: np.asarray(v) for c, v in self.server.evaluate_candidates(w_t, D).items()}
        Dt = torch.as_tensor(D, dtype=torch.float32)
        n = torch.as_tensor([r.n for r in replies], dtype=torch.float32)
        cos = cosine_to(Dt, (n.unsqueeze(1) * Dt).sum(0) / n.sum()).numpy()
        for r in replies:
            if "label-hist" in r.metrics:
                self._hist[r.client_id] = np.asarray(r.metrics["label-hist"], dtype=np.float64)
        glob = sum(self._hist.values()) if self._hist else None
        self._stock_clients.infer_domains(replies, server, w_t)
        for j, r in enumerate(replies):
            row: dict[str, Any] = {
                "client_id": r.client_id,
                "domain": r.domain,
                "n_samples": int(r.n),
            }
            mine = {c: float(v[j]) for c, v in server.items()}
            theirs = {
                c: v for c, v in r.metrics.items() if c not in _INTERNAL and not isinstance(v, list)
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
                has = glob is not None and r.client_id in self._hist
                row["B"] = js_divergence(self._hist[r.client_id], glob) if has else np.nan
            if r.missing:
                row["_missing"] = ";".join(sorted(r.missing))
                self._stock.setdefault(r.client_id, set()).update(r.missing)
            row["cos_g"] = float(cos[j])
            if "gamma-achieved" in r.metrics:
                row["gamma_achieved"] = float(r.metrics["gamma-achieved"])
            if r.client_id in self._guard.suspects:  # its claims were bounded (capped or clipped)
                row["suspect"] = self._guard.suspects[r.client_id]
            row["measured_round"] = t
            row["_pid"] = reply_order(r)
            self._rows[r.client_id] = row

    def _table(self, nodes: Sequence[int], t: int) -> pd.DataFrame:
        """The round-stats table of the connected nodes that have statistics (partition order)."""
        rows = []
        for node in nodes:
            cid = self._ex.client_of.get(node)
            row = self._rows.get(cid) if cid is not None else None
            if row is None or (not self._declared.remembers and row["measured_round"] != t):
                continue
            rows.append({"round": t, **row})
        if not rows:
            return pd.DataFrame()
        table = pd.DataFrame(rows).sort_values("_pid", kind="stable").drop(columns="_pid")
        table = table.drop(columns=[c for c in ("_missing",) if c in table.columns])
        table = _order(table.reset_index(drop=True))
        if self._declared.remembers:  # each row's age, as the loop's stale view shows it
            table["age"] = t - table["measured_round"].astype(int)
        return table.assign(predicted=False)

    def _alpha(self, ok: list[Reply], weights: dict[str, float] | None) -> np.ndarray:
        if weights is not None:
            w = np.array([float(weights.get(r.client_id, 0.0)) for r in ok])
        elif self.aggregation == "uniform":
            w = np.ones(len(ok))
        else:
            w = np.array([float(r.n) for r in ok])
        if w.sum() <= 0:
            w = np.ones(len(ok))
        return w / w.sum()


_FRONT = ("round", "client_id", "domain", "n_samples", "U")


def _order(table: pd.DataFrame) -> pd.DataFrame:
    """The oracle's column order: round, client_id, domain, n_samples, U, U_<d>..., rest."""
    cols = list(table.columns)
    doms = [c for c in cols if c.startswith("U_") and c not in BACK]
    front = [c for c in _FRONT if c in cols] + doms + [c for c in BACK if c in cols]
    rest = [c for c in cols if c not in front and c != "measured_round"]
    tail = ["measured_round"] if "measured_round" in cols else []
    return table[front + rest + tail]
