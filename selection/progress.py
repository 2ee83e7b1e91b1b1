"""Progress reporting: the library calls callbacks, only the command line draws.

Library functions that take a while accept ``progress``: a :data:`ProgressFn` called as
``progress(done, total, label)`` (``total`` None when unknown; the same ``label`` is one
task), or None. :func:`rich_progress` is the one renderer, used by the CLI: rich bars on
stderr, so ``--json`` and piped stdout stay clean. Off a terminal (a log file, CI, ``nohup``)
there is nothing to animate, so it prints a plain line per task instead —
``study: 12/80 (15%), 4m10s elapsed, ETA 23m40s`` — at a steady pace: the first after
``FEDSEL_PROGRESS_SECONDS`` seconds (default 30), then at most one per task per interval, and
a last one when a task that printed finishes; commands done sooner print nothing.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

__all__ = ["ProgressFn", "report", "rich_progress", "plain_progress"]

ProgressFn = Callable[[int, "int | None", str], None]


def report(progress: ProgressFn | None, done: int, total: int | None, label: str) -> None:
    """Call ``progress`` when there is one (anything not callable, e.g. False, is none)."""
    if callable(progress):
        progress(int(done), None if total is None else int(total), label)


@contextlib.contextmanager
def rich_progress(*, enabled: bool = True, transient: bool = True) -> Iterator[ProgressFn | None]:
    """A :data:`ProgressFn` drawing one rich bar per label on stderr (None when disabled)."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    console = Console(file=sys.stderr)
    if not console.is_terminal:  # nothing to animate: plain lines at a steady pace
        yield plain_progress()
        return
    with Progress(*columns, console=console, transient=transient) as bar:
        tasks: dict[str, int] = {}

        def update(done: int, total: int | None, label: str) -> None:
            key = label.split(":", 1)[0]  # "round 3: training" and "round 4: ..." share a bar
            if key not in tasks:
                tasks[key] = bar.add_task(label, total=total)
            bar.update(tasks[key], completed=done, total=total, description=label)

        yield update


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def plain_progress(
    interval: float | None = None, write: Callable[[str], None] | None = None
) -> ProgressFn:
    """A :data:`ProgressFn` printing ``label: done/total (pct), elapsed, ETA`` lines.

    Args:
        interval: seconds between two lines of one task (and before its first); default
            ``FEDSEL_PROGRESS_SECONDS`` from the environment, else 30.
        write: where a line goes (default: stderr, flushed).
    """
    if interval is None:
        from selection.env import env_value

        seconds = env_value("FEDSEL_PROGRESS_SECONDS")  # checked: a finite number >= 0
        interval = 30.0 if seconds is None else float(seconds)
    if write is None:

        def write(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

    start: dict[str, float] = {}
    last: dict[str, float] = {}
    first: dict[str, int] = {}  # done at a task's first call: work finished before (resumed)

    def update(done: int, total: int | None, label: str) -> None:
        key = label.split(":", 1)[0]
        now = time.monotonic()
        t0 = start.setdefault(key, now)
        d0 = first.setdefault(key, done)
        finished = total is not None and done >= total
        if key in last:
            due = finished or now - last[key] >= interval
        else:
            due = now - t0 >= interval
        if not due:
            if finished:
                start.pop(key, None)
                first.pop(key, None)
            return
        last[key] = now
        el = now - t0
        if total:
            line = f"{label}: {done}/{total} ({100.0 * done / total:.0f}%), {_clock(el)} elapsed"
            if done > d0 and not finished:  # the rate of this command, not of resumed work
                line += f", ETA {_clock(el / (done - d0) * (total - done))}"
        else:
            line = f"{label}: {done} done, {_clock(el)} elapsed"
        write(line)
        if finished:
            start.pop(key, None)
            last.pop(key, None)
            first.pop(key, None)

    return update
