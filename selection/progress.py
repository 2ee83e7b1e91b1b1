"""Progress reporting: the library calls callbacks, only the command line draws.

Library functions that take a while accept ``progress``: a :data:`ProgressFn` called as
``progress(done, total, label)`` (``total`` None when unknown; the same ``label`` is one
task), or None. :func:`rich_progress` is the one renderer, used by the CLI: rich bars on
stderr, so ``--json`` and piped stdout stay clean.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

__all__ = ["ProgressFn", "report", "rich_progress"]

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
    if transient and not console.is_terminal:
        # nothing to animate and nothing to keep: no bar, and no blank line left behind
        yield lambda done, total, label: None
        return
    with Progress(*columns, console=console, transient=transient) as bar:
        tasks: dict[str, int] = {}

        def update(done: int, total: int | None, label: str) -> None:
            key = label.split(":", 1)[0]  # "round 3: training" and "round 4: ..." share a bar
            if key not in tasks:
                tasks[key] = bar.add_task(label, total=total)
            bar.update(tasks[key], completed=done, total=total, description=label)

        yield update
