"""``FedselStrategy``: Flower FedProx whose ``configure_train`` picks K nodes with a fedsel selector.

A drop-in strategy for a Flower ServerApp on the Message API (``flwr.serverapp``)::

    strategy = FedselStrategy("maxmin:2", k=5, proximal_mu=0.01,
                              evaluate_candidates=my_val_accuracies)
    strategy.start(grid=grid, initial_arrays=ArrayRecord(model.state_dict()), num_rounds=10)

Every round t (Flower's ``server_round`` = t + 1):

1. **Measure.** ``stats="fresh"`` (default): every connected node gets a train message with
   ``config["fedsel-phase"] = "measure"`` at w_t and replies with its update and statistics.
   ``stats="pool:P"``: P nodes drawn ∝ their sample counts get it. ``stats="stale"``: only
   nodes never measured before get it; the others keep the statistics of their last training
   reply (measured at the model they trained from, so up to several rounds old).
   ``stats="probe"`` / ``"predicted"``: every node gets a ``probe`` message (w_t and the
   server's per-domain validation gradients, ``validation_gradients``) and answers its probe
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
label histogram from the sum of all histograms seen) and, with ``evaluate_candidates``, ``U``,
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
selector's choice does not read them, else ``on_missing`` decides (see the class);
:func:`fl_oracle.experiments.flower.mod.fedsel_stats_mod` adds everything in one line.

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
    MessageCost,
    Reply,
    first_metrics,
    flatten,
    one_line,
    parse_reply,
    reply_order,
    unflatten_like,
)
from fl_oracle.experiments.flower.guard import ClaimGuard, contradiction, model_fingerprint
from fl_oracle.experiments.round_step import (
    GLOBAL_KEYS,
    choose_round,
    domain_metrics,
    history_row,
    run_selector,
)
from fl_oracle.sim.stats import b_dissimilarity, cosine_to, js_divergence
from selection.problem import SelectionProblem
from selection.schema import F_FLOOR

__all__ = ["FedselStrategy", "FlowerRunError", "flatten", "unflatten_like", "PHASE_KEY"]

PHASE_KEY = "fedsel-phase"
ROUND_KEY = "fedsel-round"
STATS_MODES = ("fresh", "stale", "pool:P", "probe", "predicted")
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
    aggregate), neither of which the Message API's replies carry."""
    from selection.surrogates import get_surrogate

    sur = str(getattr(selector, "surrogate", "mean"))
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


def check_stats(stats: str) -> tuple[str, int | None]:
    """The strategy's information model, canonical, and the pool's P (None when not a pool);
    ValueError in one line for anything else."""
    from selection.errors import SelectionError
    from selection.information import parse_information

    try:
        canon = parse_information(str(stats))
    except SelectionError as exc:
        raise ValueError(f"stats mode {stats!r}: {exc}") from None
    name, _, p = canon.partition(":")
    if name not in ("fresh", "stale", "pool", "probe", "predicted"):
        raise ValueError(f"stats mode {canon!r} is not a Flower message phase")
    return canon, (int(p) if p else None)


class FlowerRunError(RuntimeError):
    """A round cannot proceed (too few nodes, too few statistics); the message says why."""


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


class FedselStrategy(FedProx):
    """FedProx whose training nodes are chosen by a fedsel selector (module docstring).

    Args:
        selector: a selector spec (``eps:5``, ``maxmin:2``, ``nsga2:knee``, ``random``, ...) or
            a callable ``(round_stats, k) -> ids`` (optionally with ``.choose(problem)``).
        k: nodes trained per round.
        seed: seed of the selector's own random stream.
        stats: ``fresh``, ``stale``, ``pool:P``, ``probe`` or ``predicted`` (module
            docstring).
        proximal_mu: FedProx μ, sent in every train message's config.
        client_ids: fedsel client id of each partition id (default ``str(partition_id)``).
        evaluate_candidates: ``(w_t, deltas (M, P)) -> {column: (M,) values}`` giving at
            least ``U`` and ``U_<domain>`` on server-held validation data; None = the nodes
            report them.
        evaluate_global: ``w -> {"acc_<domain>": %, ...}`` test accuracy of a model for the
            history (None = no accuracy columns).
        validation_gradients: ``w -> (grads (D, P), {domain: accuracy %}, {domain: size})``,
            the server's per-domain validation gradients, accuracy and sizes at w: what the
            ``probe`` and ``predicted`` phases send and calibrate with.
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
        declared_sizes: each client id's known training-set size (the deployment's
            partition); a node claiming more ``num-examples`` is capped to it. Without it a
            claim far beyond the federation's others is capped (:mod:`.guard`). Either way the
            client is named in the round's ``suspects`` and its statistics row's ``suspect``.
        clip_updates: scale an update whose norm lies beyond the round's others down to the
            largest norm within them (it is named either way).

    ``start`` returns Flower's ``Result`` with fedsel's per-round ``history`` and ``stats``
    tables attached (``result.fedsel_history``, ``result.fedsel_stats``: DataFrames).
    """

    def __init__(
        self,
        selector: str | Callable,
        k: int,
        *,
        seed: int = 0,
        stats: str = "fresh",
        proximal_mu: float = 0.0,
        client_ids: Sequence[str] | None = None,
        evaluate_candidates: Callable[[np.ndarray, np.ndarray], Mapping[str, Any]] | None = None,
        evaluate_global: Callable[[np.ndarray], Mapping[str, float]] | None = None,
        validation_gradients: Callable[[np.ndarray], tuple] | None = None,
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
        declared_sizes: Mapping[str, int] | None = None,
        clip_updates: bool = False,
        max_steps: Callable[[str, int], int] | None = None,
    ) -> None:
        from selection.selectors import make_selector

        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"k={k!r} must be an integer >= 1")
        stats, self._pool = check_stats(stats)
        if self._pool is not None and self._pool < k:
            raise ValueError(f"stats mode {stats}: the pool must hold at least K={k} nodes")
        self._info = None  # the probe phase's information model (probe, predicted)
        if stats in ("probe", "predicted"):
            if validation_gradients is None or evaluate_candidates is None:
                raise ValueError(
                    f"stats mode {stats} needs the server's validation_gradients and "
                    "evaluate_candidates (the digits server supplies both)"
                )
            from selection.information import make_information

            self._info = make_information(stats, seed=seed)
        self.validation_gradients = validation_gradients
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
        self.evaluate_candidates = evaluate_candidates
        self.evaluate_global = evaluate_global
        self.aggregation = aggregation
        self.timeout = float(timeout)
        self.wait_for_nodes = float(wait_for_nodes)
        self.train_config = dict(train_config or {})
        self.on_round = on_round
        self.history: list[dict] = []
        self.tables: list[pd.DataFrame] = []
        self._rows: dict[str, dict] = {}  # client id -> its latest statistics row
        self._hist: dict[str, np.ndarray] = {}  # client id -> label histogram
        self._node_of: dict[str, int] = {}  # client id -> node id
        self._client_of: dict[int, str] = {}  # node id -> client id
        self._pending: _Pending | None = None
        self._sent: list[Message] = []  # the messages of the exchange in flight
        self._stock: dict[str, set[str]] = {}  # client id -> statistics it does not report
        self._reads: dict[str, bool] = {}  # column -> whether the selector's choice reads it
        self._guessed: dict[str, str] = {}  # client id -> the domain inferred for it
        if on_missing != "error" and not on_missing.startswith("fallback:"):
            raise ValueError(f"on_missing={on_missing!r} must be 'error' or 'fallback:<spec>'")
        self.on_missing = on_missing
        self._fallback = None if on_missing == "error" else make_selector(on_missing[9:], seed=seed)
        self._like: ArrayRecord | None = None
        self._domains: list[str] | None = None
        self._cost = MessageCost()  # what the round's train exchanges carried
        self._measured: dict[str, Reply] = {}  # fresh: this round's measured replies
        self._guard = ClaimGuard(declared_sizes, clip=clip_updates)
        self.max_steps = max_steps
        self._sha = ""  # model_fingerprint(w_t) of the round's train messages
        self._suspects: dict[str, str] = {}  # client id -> why its claims were bounded (round)

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

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Measure (fresh: all nodes; stale: unseen ones), select K, return their train messages."""
        clocks = (time.perf_counter(), time.process_time())
        t = int(server_round) - 1
        nodes = self._connected(grid)
        w_t = flatten(arrays)
        self._sha = model_fingerprint(w_t)
        failures: dict[str, str] = {}
        self._cost, self._measured, self._suspects = MessageCost(), {}, {}
        inputs = None
        if self._info is not None:
            measure = []
            inputs = self._probe_phase(nodes, arrays, config, grid, w_t, t, failures)
        elif self.stats_mode == "fresh":
            measure = nodes
        elif self._pool is not None:
            measure = self._draw_pool(nodes, t)
        else:
            measure = [n for n in nodes if n not in self._client_of]
        if measure:
            msgs = self._messages(measure, arrays, config, "measure", t)
            replies = grid.send_and_receive(msgs, timeout=self.timeout)
            got = self._collect(replies, measure, w_t, failures)
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
        solved, selector, note = self._complete(table, t)
        # the loop's own round step, judged by the selector's surrogate (no logits reach
        # Flower: check_flower_selector refuses surrogates that need them)
        choice = choose_round(
            selector,
            solved,
            self.k,
            name=self.name,
            where=f"round {t}",
            surrogate=str(getattr(self.selector, "surrogate", "mean")),
            q=getattr(self.selector, "aggregation_q", None),
            weights_table=table,
            error=FlowerRunError,
        )
        ids, pred, weights = choice.ids, choice.pred, choice.weights
        solve_seconds, fallback = choice.solve_seconds, choice.fallback
        if note:
            fallback = note + (f"; {fallback}" if fallback else "")
        self._pending = _Pending(
            t,
            ids,
            {c: self._node_of[c] for c in ids},
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
            reuse=self.stats_mode not in ("stale", "probe", "predicted")
            or (self.stats_mode == "stale" and all(c in self._measured for c in ids)),
            inputs=inputs,
            route=choice.route,
        )
        if self._pending.reuse:  # the K measured updates are the commit: nobody trains again
            self._like = arrays
            return []
        return self._messages([self._node_of[c] for c in ids], arrays, config, "commit", t)

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
            got = self._collect(replies, list(p.nodes.values()), p.w_t, p.failures)
            ok = [r for r in got if r.client_id in p.nodes]
        if self.stats_mode == "stale" and ok:
            self._ingest(ok, p.w_t, p.t)
        if self._info is not None and ok:  # the picks' true statistics, from their updates
            self._ingest(ok, p.w_t, p.t)
            rows = pd.DataFrame([self._rows[r.client_id] for r in ok]).drop(
                columns=["_pid", "_missing"], errors="ignore"
            )
            self._info.observe(p.t, rows, p.inputs)
        new_arrays, new_w = None, p.w_t
        if ok:
            D = torch.as_tensor(np.stack([r.delta for r in ok]), dtype=torch.float32)
            alpha = torch.as_tensor(self._alpha(ok, p.weights), dtype=torch.float32)
            w = torch.as_tensor(p.w_t, dtype=torch.float32)
            new_w = (w + (alpha.unsqueeze(1) * D).sum(0)).numpy()
            new_arrays = unflatten_like(new_w, self._like)
        accuracies: dict[str, float] = {}
        if self.evaluate_global is not None:
            metrics = dict(self.evaluate_global(new_w))
            accuracies = domain_metrics(metrics, self._domain_list(metrics))
        row = history_row(
            t=p.t,
            name=self.name,
            seed=self.seed,
            stats_mode=self.stats_mode,
            k=self.k,
            ids=p.ids,
            accuracies=accuracies,
            pred=p.pred,
            surrogate=str(getattr(self.selector, "surrogate", "mean")),
            solve_seconds=p.solve_seconds,
            fallback=p.fallback,
            clocks=p.clocks,
            route=p.route,
        )
        row.update(self._cost.columns())
        row.update(
            upper_bound=self.stats_mode == "fresh",
            mu=float(self.proximal_mu),
            engine="flower",
            n_aggregated=len(ok),
            failed=";".join(p.failures),
            failures=" | ".join(f"{c}: {r}" for c, r in p.failures.items()),
            suspects=" | ".join(f"{c}: {why}" for c, why in self._suspects.items()),
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
        out.update({"n-aggregated": len(ok), "n-failed": len(p.failures), "fedsel-round": p.t})
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
            n: self._rows[c]["n_samples"] for n, c in self._client_of.items() if c in self._rows
        }
        mean = float(np.mean(list(known.values()))) if known else 1.0
        w = np.array([float(known.get(n, mean)) for n in nodes])
        rng = np.random.default_rng([self.seed, int(t), 0x706F6F6C])
        pick = rng.choice(len(nodes), self._pool, replace=False, p=w / w.sum())
        return [nodes[i] for i in sorted(pick)]

    def _messages(
        self,
        nodes: Sequence[int],
        arrays: ArrayRecord,
        config: ConfigRecord,
        phase: str,
        t: int,
        extra: Mapping[str, ArrayRecord] | None = None,
    ) -> list[Message]:
        self._like = arrays
        cfg = ConfigRecord(dict(config))
        for key, value in self.train_config.items():
            cfg[key] = value
        cfg["server-round"] = t + 1
        cfg[ROUND_KEY] = t
        cfg[PHASE_KEY] = phase
        cfg["proximal-mu"] = float(self.proximal_mu)
        record = RecordDict({self.arrayrecord_key: arrays, self.configrecord_key: cfg})
        for key, rec in (extra or {}).items():
            record[key] = rec
        self._sent = list(self._construct_messages(record, list(nodes), MessageType.TRAIN))
        self._cost.sent(len(self._sent), arrays)
        for rec in (extra or {}).values():
            self._cost.sent(len(self._sent), rec)
        return self._sent

    def _probe_row(
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
        stale = self._stale_model(None if info is None else info.get("model-sha"))
        if stale:
            return {}, f"refused: {stale}"
        values = [row[c] for c in ("loss", "F", "cos_g", *(f"x_{d}" for d in domains))]
        if not np.isfinite(values).all() or row["n_samples"] < 1:
            return {}, "non-finite statistics or num-examples < 1"
        return row, ""

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
        validation gradients (no training), as the model's :class:`RoundInputs`."""
        from selection.information import RoundInputs

        g, acc, sizes = self.validation_gradients(w_t)
        domains = tuple(acc)
        self._cost.probed = True
        gd = {"fedsel-gd": ArrayRecord({"g": Array(np.asarray(g, dtype=np.float32))})}
        msgs = self._messages(nodes, arrays, config, "probe", t, extra=gd)
        rows, seen = [], set()
        for msg in grid.send_and_receive(msgs, timeout=self.timeout):
            node = self._sender(msg)
            seen.add(node)
            who = self._client_of.get(node, f"node-{node}")
            if msg.has_error() or not msg.has_content():
                failures[who] = "probe: " + (
                    one_line(msg.error.reason) if msg.has_error() else "empty"
                )
                continue
            m = first_metrics(msg.content) or {}
            self._cost.probe_reply(msg.content, m)
            row, why = self._probe_row(msg, m, domains)
            if why:
                failures[who] = f"probe reply: {why}"
                continue
            cid = row["client_id"]
            self._node_of[cid], self._client_of[node] = node, cid
            self._hist[cid] = np.asarray(m["label-hist"], dtype=np.float64)
            rows.append(row)
        for node in nodes:
            if node not in seen:
                who = self._client_of.get(node, f"node-{node}")
                failures[who] = f"no reply in this exchange (timeout {self.timeout:g} s)"
        if not rows:
            raise FlowerRunError(f"round {t}: no node answered the probe")
        claims = {row["client_id"]: int(row["n_samples"]) for row in rows}
        for cid, (n, why) in self._size_caps(claims).items():
            self._suspect(cid, why)
            for row in rows:
                if row["client_id"] == cid:
                    row["n_samples"], row["suspect"] = n, why
        probe = pd.DataFrame(rows).sort_values("_pid", kind="stable").drop(columns="_pid")
        glob = sum(self._hist.values())
        probe["B"] = [js_divergence(self._hist[c], glob) for c in probe["client_id"]]
        probe = probe.reset_index(drop=True)
        return RoundInputs(
            t=t,
            k=self.k,
            clients=probe[["client_id", "domain", "n_samples"]],
            domains=domains,
            probe=probe,
            base_acc=acc,
            val_sizes=sizes,
        )

    def _sender(self, msg: Message) -> int:
        """The node a reply answers for. A SuperLink writes the error reply of a node that
        died with its own node id as the sender; the message it answers names the node."""
        asked = {
            m.metadata.message_id: int(m.metadata.dst_node_id)
            for m in self._sent
            if m.metadata.message_id
        }
        return asked.get(msg.metadata.reply_to_message_id, int(msg.metadata.src_node_id))

    def _collect(
        self,
        replies: Iterable[Message],
        asked: Sequence[int],
        w_t: np.ndarray,
        failures: dict[str, str],
    ) -> list[Reply]:
        """Parse replies; failures (error, no statistics, no reply) go to ``failures``."""
        out, seen = [], set()
        for msg in replies:
            node = self._sender(msg)
            seen.add(node)
            r = parse_reply(msg, w_t, self.client_ids)
            r.node = node
            if msg.has_content():
                self._cost.received(r, msg.content)
            who = r.client_id or self._client_of.get(node) or f"node-{node}"
            if r.error:
                failures[who] = r.error
                continue
            # identity claims: named by what the node was before it claimed another partition
            prev = self._client_of.get(node)
            if prev is not None and prev != r.client_id:
                failures[prev] = f"node {node} echoed partition of {r.client_id}, was {prev}"
                continue
            other = self._node_of.get(r.client_id)
            if other is not None and other != node and other in asked:
                who = self._client_of.get(node, f"node-{node}")
                failures[who] = f"partition {r.pid} is claimed by nodes {other} and {node}"
                continue
            self._node_of[r.client_id] = node
            self._client_of[node] = r.client_id
            out.append(r)
        for node in asked:
            if node not in seen:
                who = self._client_of.get(node, f"node-{node}")
                failures[who] = f"no reply in this exchange (timeout {self.timeout:g} s)"
        out = self._refuse_contradictions(out, failures)
        self._bound_claims(out)
        return sorted(out, key=reply_order)

    def _refuse_contradictions(self, replies: list[Reply], failures: dict[str, str]):
        """The replies whose statistics agree with their update and with this round's model
        (:func:`.guard.contradiction`, ``model-sha``); the others go to ``failures``."""
        caps = self._size_caps({r.client_id: r.n for r in replies})  # steps follow the cap
        keep = []
        for r in replies:
            why = self._stale_model(r.model_sha) or self._contradicts(r, caps)
            if why:
                failures[r.client_id] = f"refused: {why}"
            else:
                keep.append(r)
        return keep

    def _contradicts(self, r: Reply, caps: Mapping[str, tuple[int, str]]) -> str | None:
        """Why a reply's F and steps contradict its update (:func:`.guard.contradiction`), or
        None; judged where the server sent ``lr`` and the node reports F and ``steps``."""
        lr = self.train_config.get("lr")
        if lr is None or r.delta is None or "steps" not in r.metrics or "F" not in r.metrics:
            return None
        steps = r.metrics["steps"]
        if isinstance(steps, bool) or not isinstance(steps, int | float) or steps < 0:
            return f"steps={steps!r} is not a count"
        n = caps.get(r.client_id, (r.n, ""))[0]
        plan = None if self.max_steps is None else self.max_steps(r.client_id, n)
        norm = float(np.linalg.norm(r.delta))
        return contradiction(norm, float(r.metrics["F"]), int(steps), float(lr), plan)

    def _size_caps(self, claims: Mapping[str, int]) -> dict[str, tuple[int, str]]:
        """:meth:`.guard.ClaimGuard.sizes` of this exchange's claims against the other
        clients' latest accepted sizes."""
        known = {c: int(row["n_samples"]) for c, row in self._rows.items() if c not in claims}
        return self._guard.sizes(claims, known)

    def _stale_model(self, sha: Any) -> str | None:
        """Why statistics echoing ``model-sha`` are not for this round's model, or None."""
        if sha is None or sha == self._sha:
            return None
        return f"statistics for model {str(sha)[:16]!r}, this round sent {self._sha}"

    def _bound_claims(self, replies: list[Reply]) -> None:
        """Cap outlying sizes and name (and with ``clip_updates`` clip) outlying updates
        (:mod:`.guard`); the reasons go to this round's suspects."""
        if not replies:
            return
        caps = self._size_caps({r.client_id: r.n for r in replies})
        outliers = self._guard.updates(
            {r.client_id: r.delta for r in replies if r.delta is not None}
        )
        for r in replies:
            if r.client_id in caps:
                r.n, why = caps[r.client_id]
                self._suspect(r.client_id, why)
            if r.client_id in outliers:
                scale, why = outliers[r.client_id]
                if scale != 1.0:
                    r.delta = (r.delta * scale).astype(r.delta.dtype, copy=False)
                self._suspect(r.client_id, why)

    def _suspect(self, cid: str, why: str) -> None:
        old = self._suspects.get(cid)
        if old is None:
            self._suspects[cid] = why
        elif why not in old:
            self._suspects[cid] = f"{old}; {why}"

    def _ingest(self, replies: list[Reply], w_t: np.ndarray, t: int) -> None:
        """Statistics rows of measured nodes (server part computed here) at round t."""
        if not replies:
            return
        D = np.stack([r.delta for r in replies])
        server: dict[str, np.ndarray] = {}
        if self.evaluate_candidates is not None:
            server = {c: np.asarray(v) for c, v in self.evaluate_candidates(w_t, D).items()}
        Dt = torch.as_tensor(D, dtype=torch.float32)
        n = torch.as_tensor([r.n for r in replies], dtype=torch.float32)
        cos = cosine_to(Dt, (n.unsqueeze(1) * Dt).sum(0) / n.sum()).numpy()
        for r in replies:
            if "label-hist" in r.metrics:
                self._hist[r.client_id] = np.asarray(r.metrics["label-hist"], dtype=np.float64)
        glob = sum(self._hist.values()) if self._hist else None
        self._infer_domains(replies, server, w_t)
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
            if r.client_id in self._suspects:  # its claims were bounded (capped or clipped)
                row["suspect"] = self._suspects[r.client_id]
            row["measured_round"] = t
            row["_pid"] = reply_order(r)
            self._rows[r.client_id] = row

    def _table(self, nodes: Sequence[int], t: int) -> pd.DataFrame:
        """The round-stats table of the connected nodes that have statistics (partition order)."""
        rows = []
        for node in nodes:
            cid = self._client_of.get(node)
            row = self._rows.get(cid) if cid is not None else None
            if row is None or (self.stats_mode != "stale" and row["measured_round"] != t):
                continue
            rows.append({"round": t, **row})
        if not rows:
            return pd.DataFrame()
        table = pd.DataFrame(rows).sort_values("_pid", kind="stable").drop(columns="_pid")
        table = table.drop(columns=[c for c in ("_missing",) if c in table.columns])
        table = _order(table.reset_index(drop=True))
        if self.stats_mode == "stale":  # each row's age, as the loop's stale view shows it
            table["age"] = t - table["measured_round"].astype(int)
        return table.assign(predicted=False)

    def _infer_domains(
        self, replies: list[Reply], server: Mapping[str, np.ndarray], w_t: np.ndarray
    ) -> None:
        """A node that reports no domain is given the domain its update lifts most over w_t on
        the server's per-domain validation data (guessed once: a node keeps its domain)."""
        blind = [j for j, r in enumerate(replies) if not r.domain]
        if not blind:
            return
        doms = [c[2:] for c in server if c.startswith("U_") and c not in _BACK]
        if not doms:
            raise FlowerRunError(
                f"{replies[blind[0]].client_id} reports no domain and the server has no "
                "per-domain validation (evaluate_candidates) to infer it: add "
                "fedsel_stats_mod(domain=...) to the ClientApp's mods"
            )
        todo = [j for j in blind if replies[j].client_id not in self._guessed]
        if todo:
            U = np.column_stack([np.asarray(server[f"U_{d}"], dtype=float) for d in doms])
            # the lift over the model the update started from, w_t (a zero update)
            base = self.evaluate_candidates(w_t, np.zeros((1, len(w_t)), dtype=np.float32))
            lift = U - np.array([float(np.asarray(base[f"U_{d}"])[0]) for d in doms])[None, :]
            for j in todo:  # a node keeps its first guess
                self._guessed[replies[j].client_id] = doms[int(np.argmax(lift[j]))]
        for j in blind:
            replies[j].domain = self._guessed[replies[j].client_id]

    def _complete(self, table: pd.DataFrame, t: int):
        """(table, selector, note): statistics stock nodes lack filled in neutrally when the
        selector does not read them; otherwise the ``on_missing`` rule."""
        from logging import INFO, WARNING

        from flwr.supercore import log

        gaps = [c for c in ("F", "B") if c in table.columns and table[c].isna().any()]
        if not gaps:
            return table, self.selector, ""
        neutral = table.fillna({"F": 1.0, "B": 0.0})
        reads = [c for c in gaps if self._selector_reads(neutral, c)]
        lack = table.loc[table[gaps].isna().any(axis=1), "client_id"].tolist()
        if not reads:
            if not self._reads.get("_said_neutral"):
                self._reads["_said_neutral"] = True
                log(INFO, "fedsel: %s does not read %s, which %d node(s) do not report; "
                    "filled in neutrally", self.name, "/".join(gaps), len(lack))  # fmt: skip
            return neutral, self.selector, ""
        what = "/".join(reads)
        line = (
            f"fedsel: {self.name} reads {what}, which {len(lack)} of {len(table)} nodes do not "
            f"report ({', '.join(lack[:5])}{', ...' if len(lack) > 5 else ''}): add "
            "mods=[fedsel_stats_mod(...)] (fl_oracle.experiments.flower.mod) to their ClientApp"
        )
        if self._fallback is None:
            raise FlowerRunError(line)
        if not self._reads.get("_said_fallback"):
            self._reads["_said_fallback"] = True
            log(WARNING, "%s; until then rounds select by %s", line, self.on_missing[9:])
        note = f"{len(lack)} node(s) lack {what}: selected by {self.on_missing[9:]}"
        return neutral, self._fallback, note

    def _selector_reads(self, neutral: pd.DataFrame, column: str) -> bool:
        """Whether the selector's choice changes with ``column`` (decided once per column, on
        copies of the selector, so its own random stream is untouched)."""
        import copy

        if column not in self._reads:
            rng = np.random.default_rng([self.seed, 0x5EE])
            probe = neutral.copy()
            if column == "F":
                probe["F"] = np.exp(rng.normal(0.0, 2.0, len(probe)))
            else:
                probe["B"] = rng.uniform(0.0, 0.69, len(probe))
            if len(neutral) <= self.k:  # every node is chosen: nothing to tell, decide later
                return False
            picks = []
            try:
                for tab in (neutral, probe):
                    problem = SelectionProblem.from_stats(tab, self.k)
                    picks.append(
                        sorted(run_selector(copy.deepcopy(self.selector), tab, problem)[0])
                    )
            except Exception:  # noqa: BLE001 - cannot be copied or probed: assume it reads
                picks = [0, 1]
            self._reads[column] = picks[0] != picks[1]
        return self._reads[column]

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

    def _domain_list(self, metrics: Mapping[str, Any]) -> list[str]:
        if self._domains is None:
            self._domains = [
                k[4:] for k in metrics if k.startswith("acc_") and k[4:] not in _ACC_SUMMARY
            ]
        return self._domains


_ACC_SUMMARY = {"pooled", "avg", "worst", "gap", "std"}
_FRONT = ("round", "client_id", "domain", "n_samples", "U")
_BACK = ("U_own", "U_local", "dU", "F", "B", "cos_g", "loss", "steps", "gamma_achieved")


def _order(table: pd.DataFrame) -> pd.DataFrame:
    """The oracle's column order: round, client_id, domain, n_samples, U, U_<d>..., rest."""
    cols = list(table.columns)
    doms = [c for c in cols if c.startswith("U_") and c not in _BACK]
    front = [c for c in _FRONT if c in cols] + doms + [c for c in _BACK if c in cols]
    rest = [c for c in cols if c not in front and c != "measured_round"]
    tail = ["measured_round"] if "measured_round" in cols else []
    return table[front + rest + tail]
