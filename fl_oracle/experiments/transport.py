"""One round of live training, the same for both drivers: the information model's round over
a transport.

A :class:`Transport` is what a round can ask of the clients: who can be asked, train some at
w_t before the choice, run the probe pass, commit the chosen. It is implemented once over the
oracle (:class:`fl_oracle.experiments.loop.OracleTransport`, the in-process ``fedsel train``)
and once over Flower's grid (:class:`fl_oracle.experiments.flower.transport.FlowerRound`, inside
:class:`~fl_oracle.experiments.flower.strategy.FedselStrategy`'s ``configure_train``).
:func:`play_round` owns the rest, for both: the information model decides who trains before
the choice and builds the view the selector sees, the selector chooses
(:func:`.round_step.choose_round`), the model keeps what the committed clients reported, and
the history row is written with the cost the transport measured. What differs between the
drivers (how a client is asked, what a reply costs, the failures of a node) stays in the
transports.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any, Protocol

import pandas as pd

from fl_oracle.experiments.round_step import (
    RoundChoice,
    SelectorLike,
    choose_round,
    history_row,
    selector_state,
)
from selection.baselines.reads import VECTOR_READS, VectorSource
from selection.information import InformationModel, RoundInputs
from selection.problem import SelectionProblem

__all__ = ["Before", "Committed", "RoundPlay", "RoundRun", "Transport", "play_round"]


class Before(StrEnum):
    """What a round measured before its choice (:meth:`Transport.commit` is told).

    Examples:
        >>> from fl_oracle.experiments.transport import Before
        >>> [str(b) for b in Before]
        ['measured', 'lean', 'bare']
    """

    MEASURED = "measured"  # the information model's round (its view of what was measured)
    LEAN = "lean"  # a rule's own problem: sizes, and its probe pass where it reads one
    BARE = "bare"  # a training-only round: the client table alone


@dataclass
class Committed:
    """What committing a round's choice gave (:meth:`Transport.commit`).

    Attributes:
        accuracies: ``acc_<domain>``, ``acc_avg``, ``acc_worst``, ``acc_gap`` of w_{t+1}
            ({} where the driver evaluates nothing).
        observed: the committed clients' true statistics, measured from their updates (what
            the information model keeps); None: nothing to keep.
        cost: the round's deployment cost columns (:mod:`fl_oracle.experiments.cost`).
        columns: the transport's own history columns, written after the shared ones.
        note: why the commit differs from the choice ("" when it does not), appended to
            ``fallback``.

    Examples:
        A Flower round none of whose chosen nodes replied: the model is unchanged, the
        history says why:

        >>> from fl_oracle.experiments.transport import Committed
        >>> done = Committed({}, None, {"cost_train_samples": 0.0}, {"n_aggregated": 0},
        ...                  note="no selected node replied: the model is unchanged")
        >>> done.observed is None, done.columns
        (True, {'n_aggregated': 0})
    """

    accuracies: dict[str, float]
    observed: pd.DataFrame | None
    cost: dict[str, float]
    columns: dict[str, Any] = field(default_factory=dict)
    note: str = ""


class Transport(Protocol):
    """What one round can ask of the clients (module docstring).

    ``domains`` are the federation's domains in report order. A round calls, in this order:
    :meth:`rule_problem` (a baseline rule that reads only sizes or its probe pass gets its
    problem straight from the clients; None: the information model's round), :meth:`clients`,
    :meth:`train` (the clients the model trains before the choice) and :meth:`probe` (where
    the model's view reads the probe pass), :meth:`clients` again (the names learned from the
    replies), :meth:`logits`, :meth:`prepare`, :meth:`vectors` and :meth:`commit`.

    Examples:
        The two implementations (:func:`play_round`'s example writes a third, over a table):

        >>> from fl_oracle.experiments.oracle_transport import OracleTransport
        >>> from fl_oracle.experiments.flower.transport import FlowerTransport
        >>> from fl_oracle.experiments.transport import Transport
        >>> needs = sorted(m for m in vars(Transport) if not m.startswith("_"))
        >>> needs  # and the attributes domains, error
        ['clients', 'commit', 'logits', 'prepare', 'probe', 'rule_problem', 'train', 'vectors']
        >>> [all(hasattr(t, m) for m in [*needs, "error"])
        ...  for t in (OracleTransport, FlowerTransport)]
        [True, True]
    """

    domains: Sequence[str]
    #: the exception a round that cannot proceed raises (a selector's bad answer included)
    error: type[Exception]

    def rule_problem(self, t: int, k: int) -> SelectionProblem | None: ...

    def clients(self, t: int) -> pd.DataFrame:
        """``client_id, domain, n_samples`` of the clients this round can ask (a client not
        heard from yet under a provisional name, its size the mean of those known)."""

    def train(self, t: int, ids: Sequence[str]) -> pd.DataFrame:
        """Train ``ids`` at w_t before the choice: the round-stats rows of those that reported
        (their updates kept for the commit)."""

    def probe(self, t: int) -> tuple[pd.DataFrame, Mapping[str, float], Mapping[str, int]]:
        """Every client's probe pass at w_t: (its table, w_t's validation accuracy per domain,
        the validation sizes)."""

    def logits(self, model: InformationModel, inputs: RoundInputs) -> Any:
        """The view's validation logits (the ``ensemble`` surrogate's input), or None."""

    def prepare(self, t: int, table: pd.DataFrame) -> tuple[pd.DataFrame, SelectorLike, str]:
        """The table and selector the choice reads (a statistic a client does not report
        filled in, or a fallback selector; None: the run's own) and why they differ ("")."""

    def vectors(self, source: VectorSource, table: pd.DataFrame) -> Any:
        """(ids, rows) of the update vectors ``source`` names, for a rule that reads them."""

    def commit(self, t: int, choice: RoundChoice, inputs: RoundInputs, before: Before) -> Committed:
        """Aggregate the chosen clients' updates into w_{t+1} (``before``: what the round
        measured before the choice)."""


@dataclass(frozen=True)
class RoundRun:
    """What stays fixed over a run's rounds: the selector and how the history names it.

    Attributes:
        selector: a :class:`~selection.selectors.Selector` or a callable ``(table, k) -> ids``.
        k: clients committed per round.
        name: the selector's spec in the history.
        seed: the run's seed.
        stats_mode: the information model's spelling in the history.
        surrogate: the surrogate judging the round's problem.
        q: q-FFL's q (aggregation weights), None for none.
        upper_bound: the run measures every client every round (the oracle's upper bound).
        vector_source: whose update vectors the selector reads (a rule's
            :data:`~selection.baselines.reads.VECTOR_READS`), None for none.

    Examples:
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.transport import RoundRun
        >>> run = RoundRun(make_selector("maxmin:2"), k=5, name="maxmin:2", seed=0,
        ...                stats_mode="stale", surrogate="mean")
        >>> run.k, run.q, run.upper_bound  # no q-FFL weights; stale is affordable
        (5, None, False)
    """

    selector: SelectorLike
    k: int
    name: str
    seed: int
    stats_mode: str
    surrogate: str
    q: float | None = None
    upper_bound: bool = False

    @cached_property
    def vector_source(self) -> VectorSource | None:
        return VECTOR_READS.get(str(self.selector.reads))


def play_round(
    model: InformationModel,
    transport: Transport,
    run: RoundRun,
    t: int,
    clocks: tuple[float, float] | None = None,
    *,
    measured: bool = True,
) -> tuple[dict, pd.DataFrame]:
    """One round: the model's view, the choice, the commit, what the model keeps, the row.

    ``measured=False`` plays a training-only round: nothing is measured, the selector chooses
    on the bare client table (``round, client_id, domain, n_samples``; a plain callable is
    called with it), the picks are committed and charged their training alone, the
    ``pred_*`` columns are NaN and the row is no upper bound.

    Returns the history row (:func:`.round_step.history_row`'s columns, then the transport's)
    and the table the selector saw with ``chosen``.

    Examples:
        A transport over a fixed table of three clients (their statistics as every one of
        them reports them at w_t) and the ``fresh`` model: all three train before the choice,
        ``fisher-topk`` takes the two largest F (b, c), and the model keeps their reports:

        >>> import pandas as pd
        >>> from selection.example import small_round
        >>> from selection.information import make_information
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.transport import Committed, RoundRun, play_round
        >>> class Table:
        ...     domains, error = ("x", "y"), ValueError
        ...     def __init__(self, stats):
        ...         self.stats = stats
        ...     def rule_problem(self, t, k):
        ...         return None
        ...     def clients(self, t):
        ...         return self.stats[["client_id", "domain", "n_samples"]]
        ...     def train(self, t, ids):
        ...         return self.stats[self.stats["client_id"].isin(ids)]
        ...     def logits(self, model, inputs):
        ...         return None
        ...     def prepare(self, t, table):
        ...         return table, None, ""
        ...     def vectors(self, source, table):
        ...         return None
        ...     def commit(self, t, choice, inputs, before):
        ...         kept = self.stats[self.stats["client_id"].isin(choice.ids)]
        ...         return Committed({"acc_avg": 50.0}, kept, {"cost_train_samples": 3.0})
        >>> model, selector = make_information("fresh"), make_selector("fisher-topk")
        >>> run = RoundRun(selector, k=2, name="fisher-topk", seed=0, stats_mode="fresh",
        ...                surrogate="mean", upper_bound=True)
        >>> row, table = play_round(model, Table(small_round()), run, t=0)
        >>> row["selected"], row["acc_avg"], row["cost_train_samples"], row["upper_bound"]
        ('b;c', 50.0, 3.0, True)
        >>> table["chosen"].tolist(), sorted(model.memory)
        ([False, True, True], ['b', 'c'])
    """
    play = RoundPlay(model, transport, run, t, clocks, measured=measured)
    to_train = play.to_train()
    trained = transport.train(t, to_train) if to_train is not None else None
    choice = play.choose(trained)
    return play.finish(transport.commit(t, choice, play.inputs, play.before))


class RoundPlay:
    """One round in three steps, for a driver that must hand the exchanges to someone else
    (Flower's ``configure_train`` / ``aggregate_train``): :meth:`to_train` (who trains at w_t
    before the choice), :meth:`choose` (given what they reported: the probe pass where the
    model reads it, the view, the choice) and :meth:`finish` (given the commit: what the model
    keeps, the history row). :func:`play_round` runs the three with the transport's own
    exchanges in between.

    Examples:
        >>> from selection.example import small_round
        >>> from selection.information import make_information
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.transport import RoundPlay, RoundRun
        >>> model = make_information("fresh")
        >>> run = RoundRun(make_selector("fisher-topk"), k=2, name="fisher-topk", seed=0,
        ...                stats_mode="fresh", surrogate="mean", upper_bound=True)
        >>> class Clients:  # what to_train asks of a transport
        ...     domains = ("x", "y")
        ...     def rule_problem(self, t, k):
        ...         return None
        ...     def clients(self, t):
        ...         return small_round()[["client_id", "domain", "n_samples"]]
        >>> RoundPlay(model, Clients(), run, t=0).to_train()  # fresh: every client trains
        ['a', 'b', 'c']
    """

    def __init__(
        self,
        model: InformationModel,
        transport: Transport,
        run: RoundRun,
        t: int,
        clocks: tuple[float, float] | None = None,
        *,
        measured: bool = True,
    ) -> None:
        self.clocks = clocks if clocks is not None else (time.perf_counter(), time.process_time())
        self.model, self.transport, self.run, self.t = model, transport, run, int(t)
        self.k = int(run.k)
        if measured:
            self.lean = transport.rule_problem(self.t, self.k)
            self.before = Before.MEASURED if self.lean is None else Before.LEAN
        else:  # a training-only round: the bare client table, nothing measured
            bare = transport.clients(t)[["client_id", "domain", "n_samples"]]
            bare = bare.reset_index(drop=True)
            bare.insert(0, "round", self.t)
            self.lean = SelectionProblem.from_clients(bare, self.k, tuple(transport.domains), t)
            self.before = Before.BARE
        self.inputs: RoundInputs | None = None
        self.choice: RoundChoice | None = None
        self.table: pd.DataFrame | None = None
        self.note = ""
        self.state: dict[str, float] = {}

    def to_train(self) -> list[str] | None:
        """The ids that train at w_t before the choice (None: nobody)."""
        if self.lean is not None:  # a rule's own problem: nothing measured before the choice
            return None
        return self.model.trains_before(self.t, self.transport.clients(self.t), self.k)

    def choose(self, trained: pd.DataFrame | None) -> RoundChoice:
        """The choice, given the round-stats rows of the clients that trained before it."""
        model, transport, run, t, k = self.model, self.transport, self.run, self.t, self.k
        if self.lean is not None:
            clients, domains = transport.clients(t), tuple(transport.domains)
            self.inputs = RoundInputs(t=t, k=k, clients=clients, domains=domains)
            table, logits = self.lean.table, None
        else:
            probe = base_acc = val_sizes = None
            if model.reads_probe:
                probe, base_acc, val_sizes = transport.probe(t)
            self.inputs = RoundInputs(
                t=t,
                k=k,
                clients=transport.clients(t),
                domains=tuple(transport.domains),  # the probe pass's, where one ran
                measured=trained,
                probe=probe,
                base_acc=base_acc,
                val_sizes=val_sizes,
            )
            table = model.view(self.inputs)
            logits = transport.logits(model, self.inputs)
        solved, selector, self.note = transport.prepare(t, table)
        source = run.vector_source
        self.choice = choose_round(
            run.selector if selector is None else selector,
            solved,
            k,
            name=run.name,
            where=f"round {t}",
            surrogate=run.surrogate,
            logits=logits,
            q=run.q,
            weights_table=table,
            error=transport.error,
            problem=self.lean,
            vectors=None if source is None else transport.vectors(source, solved),
        )
        self.table = table
        self.state = selector_state(run.selector)
        if self.lean is None:  # the view's measured quality (noisy:R), beside the state
            self.state = {**self.state, **model.quality()}
        return self.choice

    def finish(self, committed: Committed) -> tuple[dict, pd.DataFrame]:
        """What the model keeps of the commit, and the round's history row and table."""
        run, choice = self.run, self.choice
        if committed.observed is not None and self.lean is None:  # a lean rule keeps nothing
            self.model.observe(self.t, committed.observed, self.inputs)
        fallback = "; ".join(m for m in (self.note, choice.fallback, committed.note) if m)
        row = {
            **history_row(
                t=self.t,
                name=run.name,
                seed=run.seed,
                stats_mode=run.stats_mode,
                k=self.k,
                ids=choice.ids,
                accuracies=committed.accuracies,
                pred=choice.pred,
                surrogate=run.surrogate,
                solve_seconds=choice.solve_seconds,
                fallback=fallback,
                clocks=self.clocks,
                route=choice.route,
                state=self.state,
                cost=committed.cost,
                upper_bound=run.upper_bound and self.before is not Before.BARE,
                weights=choice.weights,
            ),
            **committed.columns,
        }
        return row, self.table.assign(chosen=self.table["client_id"].isin(choice.ids))
