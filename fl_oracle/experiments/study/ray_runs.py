"""Study runs as Ray tasks: a study that outgrows one machine runs on a lab's cluster.

:func:`run_all_ray` has the contract of :func:`fl_oracle.experiments.runner.run_all`:
it yields ``(task, run_one(...))`` as runs finish and the caller (the driver) writes every file,
so a study on Ray is resumable exactly as a local one (finished runs are on disk; a stopped
study continues with the runs that are not). Each run is one task of ``cpus_per_run`` CPUs; a
task whose worker process dies (a killed node, an out-of-memory kill) is retried by Ray up to
``max_retries`` times, and a run is deterministic in its seed, so a retry gives the history the
first attempt would have. Progress is reported per finished run (its rounds at once).

``address`` None starts a Ray instance on this machine (or joins the one ``RAY_ADDRESS`` names);
``"auto"`` or ``host:port`` joins a running cluster (``ray start --head`` on one machine,
``ray start --address=host:port`` on the others). The workers import fedsel from their own
environment: install it on every node (and put a ``--model module:factory`` module on every
node's ``PYTHONPATH``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fl_oracle.experiments.runner import _ORACLES, RunTask, run_one

__all__ = ["check_ray", "run_all_ray"]

_NO_RAY = "--executor ray needs Ray (installed with fedsel[flower]): pip install 'ray>=2.9'"


def check_ray() -> None:
    """Ray importable here (ValueError in one line otherwise): checked before a study writes
    anything, so a study that cannot run on Ray leaves no folder behind."""
    try:
        import ray  # noqa: F401 - imported here anyway when the runs start
    except ImportError:
        raise ValueError(_NO_RAY) from None


def _ray_run(make_oracle, make_selector, task: RunTask) -> tuple:
    """One run in a Ray worker (oracles of a seed kept per worker process, as in the pool)."""
    return run_one(make_oracle, make_selector, task, _ORACLES)


def run_all_ray(
    make_oracle: Callable[[int], Any],
    make_selector: Callable[..., Callable],
    tasks: list[RunTask],
    *,
    address: str | None = None,
    cpus_per_run: float = 1.0,
    max_retries: int = 3,
    tick: Callable[[], None] | None = None,
) -> Iterator[tuple[RunTask, tuple]]:
    """Run every task on Ray; yields ``(task, result)`` as runs finish (module docstring)."""
    try:
        import ray
    except ModuleNotFoundError:
        raise ValueError(_NO_RAY) from None
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
                configure_logging=False,
            )
        except ConnectionError as exc:
            raise ValueError(f"--address {address}: no Ray cluster there ({exc})") from None
    remote = ray.remote(num_cpus=cpus_per_run, max_retries=max_retries)(_ray_run)
    oracle_ref, selector_ref = ray.put(make_oracle), ray.put(make_selector)
    pending = {remote.remote(oracle_ref, selector_ref, t): t for t in tasks}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in done:
                task = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:  # the run's own error, one line
                    cause = exc.cause if exc.cause is not None else exc
                    text = str(cause).strip().splitlines()
                    raise RuntimeError(
                        f"run {task.label} (seed {task.seed}) failed: {type(cause).__name__}: "
                        f"{text[0] if text else ''}"
                    ) from None
                except ray.exceptions.WorkerCrashedError:
                    raise RuntimeError(
                        f"run {task.label} (seed {task.seed}): its worker died {max_retries + 1} "
                        "times; the finished runs are kept"
                    ) from None
                if tick is not None:
                    for _ in range(task.rounds):
                        tick()
                yield task, result
    except BaseException:  # a failed run, Ctrl-C: cancel what is left, keep what finished
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()
