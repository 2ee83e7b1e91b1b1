"""From a command line to what the library solves: the method's solver class, the plane it is
drawn in, and the round's problem with its logits (a file, a folder, or the ``logits/`` folder
beside the stats table)."""

from __future__ import annotations

from pathlib import Path

from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError, unknown_name

__all__ = ["solver_class", "default_plane", "load_problem", "default_logits"]


def solver_class(method: str):
    """The registered solver class of ``method`` (SelectionError listing the registry)."""
    from selection.solvers.registry import solvers

    known = solvers()
    if method not in known:
        raise SelectionError(unknown_name("method", method, known))
    return known[method]


def default_plane(method: str) -> tuple[str, str]:
    """The plane a method's front is drawn in: the one it optimizes (its ``plane``) when that
    is an accuracy plane, else (utility, gap) (fisher-fair: Σ F_z is no accuracy)."""
    plane = solver_class(method).plane
    return plane if plane[0] == "utility" else ("utility", "gap")


def load_problem(
    stats,
    k: int,
    round_: int | None,
    surrogate: str = DEFAULT_SURROGATE,
    logits: Path | None = None,
):
    """One round's problem judged by ``surrogate``; its logits from ``logits`` (a file or a
    folder) or, for a surrogate that needs them, the ``logits/`` folder beside ``stats``."""
    from selection.logits import read_run_logits
    from selection.problem import SelectionProblem
    from selection.schema import read_stats
    from selection.surrogates import get_surrogate

    lg = None
    if logits is not None or get_surrogate(surrogate).needs_logits:
        table = read_stats(stats) if not hasattr(stats, "columns") else stats
        r = int(table["round"].max()) if round_ is None else int(round_)
        where = logits
        if where is None:
            if hasattr(stats, "columns"):
                raise SelectionError(f"the {surrogate} surrogate needs --logits")
            where = Path(stats).parent / "logits"
            if not where.is_dir():
                raise SelectionError(
                    f"the {surrogate} surrogate needs the round's validation logits: pass "
                    f"--logits (no {where} beside {Path(stats).name})"
                )
        lg = read_run_logits(where, r)
        stats = table
    return SelectionProblem.from_stats(stats, k, round_, surrogate=surrogate, logits=lg)


def default_logits(stats: Path, surrogate: str, logits: Path | None) -> Path | None:
    """``logits`` as given; unset, for a surrogate other than the mean, the ``logits/`` folder
    beside ``stats`` when there is one (so that every round of a sweep reads it), else None."""
    if logits is None and surrogate != DEFAULT_SURROGATE:
        return stats.parent / "logits" if (stats.parent / "logits").is_dir() else None
    return logits
