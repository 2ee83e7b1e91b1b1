"""A run plan, built once at the edge (issue 64).

A driver (``fedsel train``, the study's runner, the oracle run, a benchmark) turns its
settings into one frozen :class:`RunPlan` with :func:`plan_run`, the one place where a run's
settings are checked, and hands it to :func:`fl_oracle.experiments.loop.run_training`, which
checks only what needs the oracle (K against its clients, the methods a selector needs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fl_oracle.experiments.privacy import StatsPrivacy
from fl_oracle.experiments.round_step import SelectorLike
from selection.errors import SelectionError
from selection.information import Information, driver_information, make_information
from selection.selectors import Selector, as_selector

__all__ = ["RECORDS", "RunPlan", "check_information", "plan_run"]


#: the simulator's own records a run may skip (:attr:`RunPlan.records`)
RECORDS = ("global", "predictions", "local")


def check_information(text: str) -> Information:
    """The information model of a run, parsed: a registered model a spec may name, or
    ``rule`` (:class:`~selection.information.Rule`); ValueError naming the valid ones.

    Examples:
        >>> from fl_oracle.experiments.plan import check_information
        >>> check_information("pool:3"), check_information("rule")
        ('pool:3', 'rule')
        >>> check_information("rule").model.rule_reads
        True
        >>> check_information("bogus")
        Traceback (most recent call last):
        ...
        ValueError: stats mode 'bogus': unknown information model 'bogus' (one of fresh, ...)
    """
    try:
        return driver_information(text)  # a spec's parsed model comes back as it is
    except SelectionError as exc:
        raise ValueError(f"stats mode {text!r}: {exc}") from None


@dataclass(frozen=True)
class RunPlan:
    """One run's settings, checked (made by :func:`plan_run`; arguments documented there).

    Attributes:
        selector: a :class:`~selection.selectors.Selector` (a plain callable
            ``(round_stats, k) -> ids`` given to :func:`plan_run` is wrapped once, as a
            ``CallableSelector``).
        k: clients per round K >= 1.
        rounds: number of rounds R >= 1.
        name: the selector's spec, written to the ``selector`` column.
        stats_mode: the information model, parsed (``rule``: a baseline rule's own reads).
        seed: the run's seed, written to the ``seed`` column.
        rule_view: what the simulator measures for a baseline rule.
        records: the simulator's own records to compute (a subset of :data:`RECORDS`).
        privacy: the privacy mode of what clients report; None: off.
        measure: predicate on the round t (False: the round only trains); None: every round.
        keep_metrics: further keys of ``oracle.step``'s result to copy into the row.

    Examples:
        >>> from fl_oracle.experiments.plan import plan_run
        >>> plan = plan_run(lambda table, k: [], rounds=2, k=3, name="none")
        >>> plan.rounds, plan.k, plan.stats_mode, plan.records
        (2, 3, 'fresh', ('global', 'predictions', 'local'))
    """

    selector: Selector
    k: int
    rounds: int
    name: str
    stats_mode: Information
    seed: int = 0
    rule_view: str = "probe"
    records: tuple[str, ...] = RECORDS
    privacy: StatsPrivacy | None = None
    measure: Callable[[int], bool] | None = None
    keep_metrics: tuple[str, ...] = ()


def plan_run(
    selector: SelectorLike,
    *,
    rounds: int,
    k: int,
    name: str | None = None,
    seed: int = 0,
    stats_mode: str = "fresh",
    rule_view: str = "probe",
    records: Sequence[str] | None = None,
    privacy: StatsPrivacy | None = None,
    measure: Callable[[int], bool] | None = None,
    keep_metrics: Sequence[str] = (),
) -> RunPlan:
    """The checked plan of one run: the only place a run's settings are checked.

    Args:
        selector: a :class:`~selection.selectors.Selector` (its spec's surrogate judges
            the round's problem; its verified picks get the oracle's evaluator) or any
            callable ``(round_stats, k) -> ids``; an ``aggregation_q`` attribute switches on
            q-FFL weights.
        rounds: number of rounds R >= 1.
        k: clients per round, 1 <= K <= N (N is checked by the run, against its oracle).
        name: the selector's spec, written to the ``selector`` column; None: a Selector's
            canonical spec, a callable's ``__name__``.
        seed: the run's seed, written to the ``seed`` column.
        stats_mode: the information model (``fresh``, ``stale``, ``probe``, ``pool:P``,
            ``predicted``) or ``rule`` (:mod:`fl_oracle.experiments.loop`).
        rule_view: what the simulator measures for a baseline rule (``stats_mode="rule"``):
            ``probe`` (what the rule reads, exactly) or ``fresh`` (every client's true
            statistics in the stats table, for fronts drawn from the run); the rule's
            choices and its charge are the same either way.
        records: the simulator's own records to compute (:data:`RECORDS`), None = all of
            them. ``global``: ``global_loss`` and ``B_dissimilarity`` of every new model (a
            probe pass of every client that nothing else may need); ``predictions``: a
            baseline rule's choice predicted by the probe model (``pred_*``: the probe pass,
            the server's passes and the picks' statistics, where the rule may read only
            sizes); ``local``: ``U_local`` of every measured client (a pass over its
            hold-out; no selector reads it). What is skipped is absent from the row
            (``global``), from the statistics (``U_local``) or NaN (``pred_*``); the choices,
            accuracies and costs are the same.
        privacy: the privacy mode of what clients report (:mod:`.privacy`): their probe
            fields clipped and noised, the run's ε spent so far in ``dp_epsilon`` (and the
            noise multiplier in ``dp_z``); secure aggregation refuses the information models
            that evaluate one client's update at the server. None: off, no columns.
        measure: predicate on the round t; rounds where it is false only train
            (:mod:`fl_oracle.experiments.loop`; needs ``stats_mode`` ``fresh`` or ``rule``
            and an oracle with a ``clients`` table). None = measure every round (and no
            ``measured`` column).
        keep_metrics: further keys of ``oracle.step``'s result to copy into the row.

    Returns:
        The frozen plan.

    Raises:
        ValueError: an unknown information model or record, rounds not an integer >= 1,
            training-only rounds with an information model other than ``fresh`` or
            ``rule``.

    Examples:
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.plan import plan_run
        >>> plan = plan_run(make_selector("stratified", seed=0), rounds=2, k=2,
        ...                 stats_mode="pool:3.0", records=["local"])
        >>> plan.name, plan.stats_mode, plan.records
        ('stratified', 'pool:3', ('local',))
        >>> plan_run(make_selector("stratified"), rounds=0, k=2)
        Traceback (most recent call last):
        ...
        ValueError: rounds=0 must be an integer >= 1
        >>> plan_run(make_selector("stratified"), rounds=2, k=2, stats_mode="stale",
        ...          measure=lambda t: t % 2 == 0)
        Traceback (most recent call last):
        ...
        ValueError: training-only rounds (measure=...) need stats_mode 'fresh' or 'rule'
    """
    stats_mode = check_information(stats_mode)
    records = RECORDS if records is None else tuple(records)
    unknown = sorted(set(records) - set(RECORDS))
    if unknown:
        raise ValueError(f"records: {unknown[0]!r} is not one of {', '.join(RECORDS)}")
    if isinstance(rounds, bool) or int(rounds) != rounds or rounds < 1:
        raise ValueError(f"rounds={rounds!r} must be an integer >= 1")
    rule = stats_mode.model.rule_reads
    if measure is not None and not rule and not make_information(stats_mode).upper_bound:
        raise ValueError("training-only rounds (measure=...) need stats_mode 'fresh' or 'rule'")
    selector = as_selector(selector, name)  # a plain callable wrapped once, here
    if name is None:
        name = str(selector.spec.canonical)
    return RunPlan(
        selector,
        k=k,
        rounds=int(rounds),
        name=name,
        seed=seed,
        stats_mode=stats_mode,
        rule_view=rule_view,
        records=records,
        privacy=privacy,
        measure=measure,
        keep_metrics=tuple(keep_metrics),
    )
