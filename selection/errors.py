"""Error types of the selection layer.

Every error subclasses the builtin ``ValueError`` as well, so callers that do not know
fedsel can still catch them; the CLI turns each into one line on stderr and exit code 2.
"""

from __future__ import annotations

__all__ = [
    "SelectionError",
    "StatsError",
    "InfeasibleError",
    "TooLargeError",
    "did_you_mean",
    "unknown_name",
]


class SelectionError(ValueError):
    """Base class of every error fedsel raises on bad input or an unsolvable request."""


class StatsError(SelectionError):
    """A round-stats table violates the contract (missing column, NaN, out of range, ...)."""


class InfeasibleError(SelectionError):
    """No selection satisfies the constraints (e.g. an epsilon below the smallest gap)."""


class TooLargeError(SelectionError):
    """An exact method refuses an instance whose enumeration exceeds its configured limit."""


def did_you_mean(word: str, choices) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to a mistyped ``word`` (difflib's, as
    a bad selector spec is answered), ``""`` where none is close.

    Examples:
        >>> from selection.errors import did_you_mean
        >>> did_you_mean("maxmn", ["eps", "maxmin"]), did_you_mean("zzz", ["eps"])
        ("; did you mean 'maxmin'?", '')
    """
    import difflib

    near = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {near[0]!r}?" if near else ""


def unknown_name(what: str, word: str, choices) -> str:
    """The one line that refuses an unknown name: the closest choice, then every choice.

    Examples:
        >>> from selection.errors import unknown_name
        >>> unknown_name("method", "maxmn", ["eps", "maxmin"])
        "unknown method 'maxmn'; did you mean 'maxmin'? (choose one of eps, maxmin)"
        >>> unknown_name("method", "zzz", ["eps", "maxmin"])
        "unknown method 'zzz'; choose one of eps, maxmin"
    """
    names = ", ".join(str(c) for c in choices)
    hint = did_you_mean(word, choices)
    if hint:
        return f"unknown {what} {word!r}{hint} (choose one of {names})"
    return f"unknown {what} {word!r}; choose one of {names}"
