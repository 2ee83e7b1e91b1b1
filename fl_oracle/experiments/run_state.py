"""A ``fedsel train`` run's whole state after its last round, written and read back, so that
``fedsel train --resume`` continues an interrupted run (kill -9 included) to the history an
uninterrupted run writes (:func:`fl_oracle.experiments.loop.run_training`'s ``state_file`` and
``resume``).

The file is a checksummed checkpoint (:mod:`fl_oracle.sim.checkpoint`) holding the run's own
Python objects (the selector, the information model): as any pickle, it is read only from a
run folder this user's own run wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fl_oracle.errors import CheckpointError
from fl_oracle.sim.checkpoint import load_checkpoint, save_checkpoint
from selection.words import counted

__all__ = ["RUN_STATE_FORMAT", "load_run_state", "save_run_state"]

#: the format of :func:`save_run_state`'s file (``fedsel train --resume`` refuses another)
RUN_STATE_FORMAT = "fedsel-train-state-1"


def save_run_state(path, oracle, selector, model, transport, history, tables, meta=None) -> None:
    """Write atomically everything a run needs to continue exactly after its last round: the
    oracle's state (w_t, the round, the kept updates), the selector and the information model
    as they are (their queues, histories, regressions and random streams), what the
    transport keeps across rounds (the accountant, the remembered logits) and the history so
    far, and ``meta`` (what a driver must find again to continue it). A verified selector's
    evaluator (the oracle's method) is left out: a resumed run sets it again.

    Examples:
        Two rounds written after each round, read back, continued to three:

        >>> import tempfile
        >>> from pathlib import Path
        >>> from fl_oracle.experiments.loop import run_training
        >>> from fl_oracle.experiments.plan import plan_run
        >>> from fl_oracle.experiments.run_state import load_run_state
        >>> from fl_oracle.sim.oracle import small_oracle
        >>> from selection.selectors import make_selector
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = Path(d) / "run_state.pt"
        ...     plan = plan_run(make_selector("random", seed=0), rounds=2, k=2, name="random")
        ...     _ = run_training(small_oracle(), plan, state_file=path, state_meta={"seed": 0})
        ...     state = load_run_state(path, {"seed": 0}, rounds=3)
        ...     plan = plan_run(make_selector("random", seed=0), rounds=3, k=2, name="random")
        ...     more = run_training(small_oracle(), plan, resume=state)
        >>> len(state["history"]), list(more.history["round"])
        (2, [0, 1, 2])
    """
    evaluator = selector.evaluator
    if evaluator is not None:
        selector.evaluator = None
    try:
        save_checkpoint(
            {
                "format": RUN_STATE_FORMAT,
                "oracle": oracle.state_dict(),
                "selector": selector,
                "model": model,
                "accountant": transport.accountant,
                "logits": transport._logits,
                "history": list(history),
                "tables": list(tables),
                "meta": dict(meta or {}),
            },
            path,
        )
    finally:
        if evaluator is not None:
            selector.evaluator = evaluator


def load_run_state(path: str | Path, same: dict[str, Any], rounds: int) -> dict | None:
    """The state a resumed run continues from (None: the folder holds nothing finished yet,
    the run starts afresh), refused in one line (CheckpointError) when it is not such a state,
    when its ``meta`` differs from ``same`` (another command's run) or when it has run more
    than ``rounds``."""
    path = Path(path)
    if not path.is_file():
        if (path.parent / "history.csv").is_file():
            raise CheckpointError(
                f"cannot resume {path.parent}: it holds no run_state.pt (a run of an older "
                "fedsel, or a finished one moved); --overwrite starts it again"
            )
        return None
    state = load_checkpoint(path, objects=True)
    if state.get("format") != RUN_STATE_FORMAT:
        raise CheckpointError(f"cannot resume: {path} is not a fedsel train state")
    meta = state.get("meta", {})
    for key, value in same.items():
        if meta.get(key) != value:
            what = "the federation's settings" if key == "config" else key
            raise CheckpointError(
                f"cannot resume {path.parent}: it was run with other {what} "
                f"({meta.get(key)!r} there); give the same command"
            )
    done = len(state["history"])
    if done > rounds:
        raise CheckpointError(
            f"cannot resume {path.parent}: it has run {counted(done, 'round')}, more than --rounds {rounds}"
        )
    return state
