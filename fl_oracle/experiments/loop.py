"""Live training with a selector in the loop.

Each round is :func:`fl_oracle.experiments.transport.play_round`, the round the Flower
strategy plays too, over the oracle's transport (:class:`.oracle_transport.OracleTransport`):
each round t the oracle measures client statistics at the global model w_t, the selector picks
K client ids from that table, the oracle commits the aggregation of exactly those clients'
updates (w_{t+1}) and the round is logged:

* ``history``: one row per round with ``round`` (t, the round whose statistics drove the
  choice; the accuracies are those of the new model w_{t+1}), ``selector``, ``seed``,
  ``stats_mode``, ``k``, ``selected`` (ids joined by ``;``), ``acc_<domain>`` (test accuracy %),
  ``acc_avg`` (mean over domains), ``acc_worst`` (their minimum), ``acc_gap`` (max - min),
  ``pred_utility``/``pred_gap``/``pred_worst`` (the linear model of :mod:`selection.objectives`
  on the round's statistics), ``solve_seconds``, ``route`` (the backend that answered the
  round's problem: ``enum``, ``highs``, ``cbc``, ...; empty for a rule that solves nothing),
  ``fallback`` (empty unless the selector failed
  and a fallback point was committed), ``round_seconds`` (wall), ``round_cpu_seconds`` (CPU
  time of this process: about the wall time the round takes alone on a core with one torch
  thread), and the oracle's ``global_loss``, ``B_dissimilarity`` and ``mu`` of the new model
  when it reports them.
* ``stats``: every round's statistics table (the round-stats contract) plus ``measured_round``
  (the round at which that row was measured: older than ``round`` for stale rows) and
  ``chosen`` (whether the selector picked the client that round).

Measured and training-only rounds: with ``measure`` (a predicate on the round t) the rounds
for which it is false only train: the selector gets the bare client table (``round,
client_id, domain, n_samples``) and is called as ``selector(table, k)`` (so it must not need
statistics, e.g. the oracle's proportional sampler), no statistics are computed, the ``pred_*``
columns are NaN and the history row has ``measured`` False. Training does not depend on
measuring: every local update is a function of (seed, round, client) and the oracle's samplers
draw from their own (seed, round) streams, so a measured round's statistics equal those of a
run that measures every round (``tests/fl_oracle/experiments/test_measure_schedule.py``).

Information models (:mod:`selection.information`, ``stats_mode``): ``fresh`` trains and
measures every client every round (the oracle's upper bound); ``stale`` every client in round
0 and afterwards only the committed clients, whose statistics are measured from the updates they
train for the commit (so the selector sees each client's last report, ``measured_round`` and
``age``; a re-measured client's ``cos_g`` is taken against the mean update of the clients
measured with it); ``probe`` and ``predicted`` run every client's probe pass
(``Oracle.probe_table``) and predict U, U_<domain>; ``pool:P`` trains P candidates; ``rule``
(a baseline rule without a model) is charged for what the rule reads. Every history row carries
the round's deployment cost (:mod:`fl_oracle.experiments.cost`) and ``upper_bound``.

Aggregation: the oracle's rule (sample-weighted by default) for every selector except q-FFL
(``qffl:q``), whose selector carries ``aggregation_q``: the selected updates are then weighted
w_i ∝ n_i · loss_i^q (Li et al. 2020, the q-FFL gradient Σ p_k F_k^q ∇F_k with p_k ∝ n_k and
F_k the client's loss at w_t; q = 0 is FedAvg; without q-FedAvg's Lipschitz step-size
normalization).

The round step itself (the problem, the choice, its check, predicted objectives and weights,
the history's first columns) is :mod:`fl_oracle.experiments.round_step`, which the Flower
strategy runs too; this module binds it to an oracle and an information model.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pandas as pd

from fl_oracle.experiments.oracle_transport import OracleTransport
from fl_oracle.experiments.plan import RECORDS, RunPlan, check_information
from fl_oracle.experiments.transport import RoundRun, play_round
from selection.baselines.reads import VectorSource
from selection.errors import SelectionError
from selection.information import default_information, make_information

__all__ = ["RECORDS", "TrainResult", "OracleLike", "run_training", "check_information"]


class OracleLike(Protocol):
    """What the loop needs from :class:`fl_oracle.sim.oracle.Oracle` (a fake in tests).

    Examples:
        The oracle is the implementation (a tiny federation: 2 domains x 2 clients of 8
        generated images, one local step each):

        >>> from fl_oracle.sim.oracle import small_oracle
        >>> oracle = small_oracle()  # 2 domains x 2 clients of 8 generated images
        >>> oracle.round, list(oracle.domains)
        (0, ['svhn', 'syn'])
        >>> stats = oracle.round_stats(["syn-1"], local=False)  # one client's row at w_0
        >>> stats[["client_id", "n_samples", "steps"]].values.tolist()
        [['syn-1', 8, 1]]
        >>> metrics = oracle.step(["svhn-0", "syn-1"], global_stats=False)
        >>> metrics["round"], oracle.round, sorted(metrics)
        (1, 1, ['acc_avg', 'acc_pooled', 'acc_svhn', 'acc_syn', 'acc_worst', 'mu', 'round'])
    """

    round: int
    domains: Sequence[str]

    def round_stats(
        self, clients: Sequence[str] | None = None, *, local: bool = True
    ) -> pd.DataFrame: ...

    def step(
        self,
        selection: Sequence[str],
        *,
        weights: Mapping[str, float] | None = None,
        global_stats: bool = True,
    ) -> dict: ...


@dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`run_training`.

    Attributes:
        history: one row per round (columns in the module docstring).
        stats: every round's statistics, with ``measured_round`` and ``chosen``.

    Examples:
        Two ``stale`` rounds of a plain callable that takes the table's first K: every client
        trains in round 0, afterwards only the 3 committed (8 sample gradients each), and
        round 1's rows are the reports of round 0:

        >>> from fl_oracle.sim.oracle import small_oracle
        >>> oracle = small_oracle()  # 2 domains x 2 clients of 8 generated images
        >>> from fl_oracle.experiments.loop import run_training
        >>> from fl_oracle.experiments.plan import plan_run
        >>> def first(table, k):
        ...     return list(table["client_id"][:k])
        >>> result = run_training(oracle, plan_run(first, rounds=2, k=3, name="first-3",
        ...                                        stats_mode="stale"))
        >>> result.history[["round", "selected", "cost_train_samples"]].values.tolist()
        [[0, 'svhn-0;svhn-1;syn-0', 32], [1, 'svhn-0;svhn-1;syn-0', 24]]
        >>> rows = result.stats.query("round == 1")
        >>> rows[["client_id", "measured_round", "chosen"]].values.tolist()
        [['svhn-0', 0, True], ['svhn-1', 0, True], ['syn-0', 0, True], ['syn-1', 0, False]]
    """

    history: pd.DataFrame
    stats: pd.DataFrame


def run_training(
    oracle: OracleLike,
    plan: RunPlan,
    *,
    on_round: Callable[[dict, pd.DataFrame], None] | None = None,
    before_step: Callable[[], Mapping[str, Any]] | None = None,
    state_file: str | os.PathLike | None = None,
    state_meta: Mapping[str, Any] | None = None,
    resume: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Train ``plan.rounds`` rounds, each committing exactly the selector's K clients.

    Args:
        oracle: an :class:`fl_oracle.sim.oracle.Oracle` (or an object with the same methods).
        plan: the run's checked settings (:func:`fl_oracle.experiments.plan.plan_run`:
            selector, K, rounds, name, seed, information model, records, privacy, ...); here
            only what needs the oracle is checked (K against its clients, the methods the
            selector needs).
        on_round: called after each round with the history row and that round's stats
            (drivers write their files and checkpoints here).
        before_step: called after the selection, before the commit; its items join the
            history row (e.g. global statistics at w_t).
        state_file: after every round, the run's whole state is written here atomically
            (:func:`.run_state.save_run_state`: the oracle's, the selector's and the information model's,
            the history so far, ``state_meta``: what the driver must find again to
            continue it), so that ``resume`` continues it exactly.
        resume: a state written to ``state_file`` by the same run (same oracle
            configuration, selector, seed and settings): the run continues from its round
            to ``rounds`` in total, to the history an uninterrupted run writes.

    Returns:
        The history (R rows) and all statistics (R x N rows).

    Examples:
        Two rounds of the stratified rule (one client per domain) on a tiny federation:

        >>> from fl_oracle.sim.oracle import small_oracle
        >>> oracle = small_oracle()  # 2 domains x 2 clients of 8 generated images
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.loop import run_training
        >>> from fl_oracle.experiments.plan import plan_run
        >>> plan = plan_run(make_selector("stratified", seed=0), rounds=2, k=2, name="stratified")
        >>> result = run_training(oracle, plan)
        >>> result.history[["round", "selected", "stats_mode"]].values.tolist()
        [[0, 'svhn-1;syn-0', 'fresh'], [1, 'svhn-0;syn-0', 'fresh']]
        >>> result.history["cost_train_samples"].tolist()  # fresh: all 4 clients train
        [32, 32]
        >>> oracle.round, len(result.stats), int(result.stats["chosen"].sum())
        (2, 8, 4)
    """
    selector, k, name, seed = plan.selector, plan.k, plan.name, plan.seed
    stats_mode, rule_view, records, privacy = (
        plan.stats_mode, plan.rule_view, plan.records, plan.privacy
    )  # fmt: skip
    measure = plan.measure
    history: list[dict] = []
    tables: list[pd.DataFrame] = []
    surrogate = selector.surrogate
    rule = stats_mode.model.rule_reads  # a baseline rule's own reads: measured by rule_view
    if rule and not callable(getattr(oracle, "probe_table", None)):
        rule_view = default_information()  # an oracle without the probe pass (test fakes)
    model = make_information(rule_view if rule else stats_mode, seed=seed)
    if resume is not None:  # the interrupted run's objects, as they were after its last round
        oracle.load_state_dict(resume["oracle"])
        selector, model = resume["selector"], resume["model"]
        history, tables = list(resume["history"]), list(resume["tables"])
    clients = getattr(oracle, "clients", None)
    if clients is not None:
        model.check_k(len(clients), k)
    if privacy is not None and not rule:  # a rule reads what clients report
        privacy.prepare(model)
    # what a rule reads (``Baseline.reads``) when only that is computed: no prediction of its
    # choice, no statistics of its picks (``records=()``); else None
    reads = None if "predictions" in records else selector.reads
    lean = reads if rule and not model.upper_bound else None
    run = RoundRun(
        selector,
        k=int(k),
        name=name,
        seed=int(seed),
        stats_mode=stats_mode,
        surrogate=surrogate,
        q=selector.aggregation_q,
        upper_bound=model.upper_bound and not rule,
    )
    if run.vector_source is not None:
        if not callable(getattr(oracle, "update_vectors", None)):
            raise SelectionError(
                f"selector {name} reads the clients' update vectors; this oracle has none"
            )
        if privacy is not None and privacy.on:
            raise SelectionError(
                f"selector {name} reads the clients' update vectors, which private statistics "
                "do not cover (--dp-epsilon): run it without them"
            )
        if run.vector_source == VectorSource.STALE:
            oracle.keep_committed = True  # the server keeps what it aggregated
    transport = OracleTransport(
        oracle,
        model,
        selector,
        seed=seed,
        rule=rule,
        lean=lean,
        privacy=privacy,
        stats_kw={} if "local" in records else {"local": False},
        step_kw={} if "global" in records else {"global_stats": False},
        before_step=before_step,
        keep_metrics=plan.keep_metrics,
        measured_column=measure is not None,
    )
    if selector.verify:
        evaluate_aggregate = getattr(oracle, "evaluate_aggregate", None)
        if not callable(evaluate_aggregate):
            raise SelectionError(
                f"selector {name}: verified picks need an oracle with evaluate_aggregate"
            )
        selector.evaluator = evaluate_aggregate
    if resume is not None:
        transport.accountant, transport._logits = resume["accountant"], resume["logits"]
    for _ in range(plan.rounds - len(history)):
        clocks = (time.perf_counter(), time.process_time())
        t = int(oracle.round)
        measured = measure is None or bool(measure(t))
        row, table = play_round(model, transport, run, t, clocks, measured=measured)
        if measured:
            tables.append(table)
        history.append(row)
        if on_round is not None:
            on_round(row, table)
        if state_file is not None:
            from fl_oracle.experiments.run_state import save_run_state

            save_run_state(state_file, oracle, selector, model, transport, history, tables,
                           meta=state_meta)  # fmt: skip
    stats = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
    return TrainResult(pd.DataFrame(history), stats)
