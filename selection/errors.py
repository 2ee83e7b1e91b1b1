"""Error types of the selection layer.

Every error subclasses the builtin ``ValueError`` as well, so callers that do not know
fedsel can still catch them; the CLI turns each into one line on stderr and exit code 2.
"""

from __future__ import annotations

__all__ = ["SelectionError", "StatsError", "InfeasibleError", "TooLargeError"]


class SelectionError(ValueError):
    """Base class of every error fedsel raises on bad input or an unsolvable request."""


class StatsError(SelectionError):
    """A round-stats table violates the contract (missing column, NaN, out of range, ...)."""


class InfeasibleError(SelectionError):
    """No selection satisfies the constraints (e.g. an epsilon below the smallest gap)."""


class TooLargeError(SelectionError):
    """An exact method refuses an instance whose enumeration exceeds its configured limit."""
