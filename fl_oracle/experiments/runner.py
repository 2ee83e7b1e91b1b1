"""The run engine of the demo and the study: runs in this process or over worker processes.

One run = one selector trained on one seed's federation from its round-0 state. Runs are
independent, so ``workers > 1`` spreads them over spawned processes (one torch thread each:
on 2 cores two single-threaded runs do about twice the work of one two-threaded run, the
CNN's ops being too small to split well). Each process loads the federation's data once and
keeps one oracle per seed, reset to its round-0 state before every run; results are identical
to the sequential path.
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import queue as _queue
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from fl_oracle.experiments.loop import OracleLike, TrainResult, run_training
from fl_oracle.experiments.oracle_defaults import DEMO_ORACLE
from fl_oracle.experiments.plan import plan_run
from fl_oracle.experiments.privacy import StatsPrivacy
from selection.selectors import Spec

__all__ = ["DEMO_ORACLE", "OracleFactory", "RunTask", "cached_oracle", "run_one", "run_all"]


@dataclass(frozen=True)
class OracleFactory:
    """A picklable ``seed -> Oracle`` factory that loads the data once per process.

    Attributes:
        overrides: :class:`fl_oracle.sim.config.OracleConfig` fields besides ``seed``.
        data: injected domain data (tests); None = ``load_federation_data`` once per process.
    """

    overrides: dict = field(default_factory=dict)
    data: dict | None = None

    def config(self, seed: int):
        from fl_oracle.sim.config import OracleConfig

        return OracleConfig(seed=int(seed), **self.overrides)

    def load(self, *, progress: Any = None) -> dict:
        """The federation's data, loaded (or generated and cached on disk) once per process.

        Call it in the parent before starting workers: generated stand-ins are then made
        once and the workers read them from the disk cache.
        """
        from fl_oracle.sim.loading import load_federation_data

        if self.data is not None:
            return self.data
        config = self.config(0)  # the data do not depend on the seed
        key = config.to_toml()
        if key not in _DATA:
            _DATA[key] = load_federation_data(config, progress=progress)
        return _DATA[key]

    def __call__(self, seed: int):
        from fl_oracle.sim.oracle import Oracle

        return Oracle(self.config(seed), data=self.load())


_DATA: dict[str, dict] = {}  # per process: config (seed 0) -> loaded domain data
_ORACLES: dict[int, tuple[OracleLike, dict]] = {}  # per worker process (one pool): seed -> oracle


@dataclass(frozen=True)
class RunTask:
    """One run: the selector ``spec`` on ``seed`` for ``rounds`` rounds of ``k`` clients.

    Attributes:
        spec: the parsed selector spec; its information model (``spec.information``) is the
            run's.
        seed: the federation's, the initial model's and the selector's seed.
        rounds: training rounds.
        k: clients committed per round (the run's K: the oracle's configuration holds none).
        name: the history's ``selector`` column ("" = ``spec.selector_spec``).
        snapshot_round: the round whose oracle state the run returns (None: none).
        truth: a baseline rule's run measures every client (``run_training``'s
            ``rule_view="fresh"``), so its statistics can be kept.
        records: the simulator's own records the run computes (``run_training``'s
            ``records``; None = all of them).
        privacy: the privacy mode of the clients' reports (``run_training``'s; None: off).
    """

    spec: Spec
    seed: int
    rounds: int
    k: int
    name: str = ""
    snapshot_round: int | None = None
    truth: bool = False
    records: tuple[str, ...] | None = None
    privacy: StatsPrivacy | None = None

    @property
    def label(self) -> str:
        """The run's name in its history and in messages."""
        return self.name or self.spec.selector_spec


def cached_oracle(
    make_oracle: Callable[[int], OracleLike], seed: int, cache: dict
) -> tuple[OracleLike, dict]:
    """The seed's oracle from ``cache`` (built on first use), reset to its round-0 state."""
    if seed not in cache:
        o = make_oracle(seed)
        cache[seed] = (o, copy.deepcopy(o.state_dict()))
    o, init = cache[seed]
    o.load_state_dict(copy.deepcopy(init))
    return o, init


def run_one(
    make_oracle: Callable[[int], OracleLike],
    make_selector: Callable[..., Callable],
    task: RunTask,
    cache: dict,
    tick: Callable[[], None] | None = None,
) -> tuple[TrainResult, dict | None, dict]:
    """Train one run from the seed's round-0 state; ``make_selector(task.spec, seed=...)``
    builds its selector (:func:`selection.selectors.make_selector` takes the typed spec).

    Returns:
        The run, the oracle state at ``task.snapshot_round`` (or None) and the federation's
        description (:func:`fl_oracle.experiments.run_record.describe_setup` needs the oracle).
    """
    from fl_oracle.experiments.run_record import describe_setup

    oracle, init = cached_oracle(make_oracle, task.seed, cache)
    snap: dict = {}
    if task.snapshot_round == 0:
        snap["state"] = init

    def on_round(row: dict, table: Any) -> None:
        if task.snapshot_round is not None and oracle.round == task.snapshot_round:
            snap.setdefault("state", copy.deepcopy(oracle.state_dict()))
        if tick is not None:
            tick()

    selector = make_selector(task.spec, seed=task.seed)
    plan = plan_run(
        selector,
        rounds=task.rounds,
        k=task.k,
        name=task.label,
        seed=task.seed,
        stats_mode=task.spec.information,
        rule_view="fresh" if task.truth else "probe",
        records=task.records,
        privacy=task.privacy,
    )
    res = run_training(oracle, plan, on_round=on_round)
    return res, snap.get("state"), describe_setup(oracle)


_TICKS = None  # per worker process: the queue each finished round is reported on


def _init_worker(ticks) -> None:
    global _TICKS
    _TICKS = ticks


def _worker(make_oracle, make_selector, task: RunTask) -> tuple:
    return run_one(make_oracle, make_selector, task, _ORACLES, tick=lambda: _TICKS.put(1))


def run_all(
    make_oracle: Callable[[int], OracleLike],
    make_selector: Callable[..., Callable],
    tasks: list[RunTask],
    *,
    workers: int = 1,
    cache: dict | None = None,
    tick: Callable[[], None] | None = None,
) -> Iterator[tuple[RunTask, tuple]]:
    """Run every task; yields ``(task, run_one(...))`` as runs finish (any order if parallel).

    ``workers > 1`` needs a picklable ``make_oracle`` (e.g. :class:`OracleFactory`) and
    ``make_selector`` (a module-level function). ``cache`` (seed -> oracle, round-0 state)
    keeps the in-process oracles for the caller.
    """
    if workers <= 1:
        cache = {} if cache is None else cache
        for task in tasks:
            yield task, run_one(make_oracle, make_selector, task, cache, tick)
        return
    ctx = mp.get_context("spawn")
    ticks = ctx.Queue()
    # not a ``with`` block: its exit waits for the pool's threads (shutdown(wait=True)), which
    # can hang once the workers were terminated mid-start-up; a stop must not wait
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(ticks,))
    try:
        pending = {pool.submit(_worker, make_oracle, make_selector, t): t for t in tasks}
        while pending:
            done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            _drain(ticks, tick)
            for fut in done:
                yield pending.pop(fut), fut.result()
    except BaseException:  # a failed run, Ctrl-C or SIGTERM: stop now, not after the runs
        _stop(pool)  # in flight (finished runs were yielded, so the caller has kept them)
        raise
    pool.shutdown(wait=True)
    _drain(ticks, tick)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued runs and terminate the workers (their unfinished runs are lost, which
    is what stopping means; nothing they wrote is partial: runs are written by the parent)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
    # and a worker whose start the signal interrupted (not in the pool's table yet: left
    # alive, the interpreter's exit would wait for its run to end)
    procs += [p for p in mp.active_children() if p not in procs]
    # the queue of calls may still be feeding pickled tasks into a pipe no worker will read
    # again: its feeder thread must not be joined at exit (it would wait forever)
    call_queue = getattr(pool, "_call_queue", None)
    if call_queue is not None:
        call_queue.cancel_join_thread()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=5)


def _drain(q, tick: Callable[[], None] | None) -> None:
    while True:
        try:
            q.get_nowait()
        except (_queue.Empty, EOFError, OSError):
            return
        if tick is not None:
            tick()
