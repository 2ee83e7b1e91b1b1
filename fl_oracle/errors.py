"""Error types of the FL oracle.

Every error subclasses the builtin ``ValueError``, so the CLI turns it into one line on stderr
and exit code 2, and callers that do not know fedsel can still catch it.
"""

from __future__ import annotations

__all__ = [
    "OracleError",
    "ConfigError",
    "CheckpointError",
    "UnknownClientError",
    "hinted_why",
]


class OracleError(ValueError):
    """Base class of every error the oracle raises on bad input or an inconsistent state."""


class ConfigError(OracleError):
    """An :class:`~fl_oracle.sim.config.OracleConfig` field holds an invalid value.

    ``field``, ``value`` and ``why`` say which and why where the error names one field (so a
    command line can name the flag the user typed instead of the field)."""

    def __init__(self, message: str, *, field: str = "", value: object = None, why: str = ""):
        super().__init__(message)
        self.field, self.value, self.why = field, value, why


class CheckpointError(OracleError):
    """A checkpoint or run folder is missing, corrupt or belongs to another configuration."""


class UnknownClientError(OracleError):
    """A selection names a client id that is not part of the federation."""


def hinted_why(exc: ConfigError) -> str:
    """A :class:`ConfigError`'s ``why`` with the closest choice where it lists them (``must be
    one of a, b or c``) and the value is a mistyped one of them.

    Examples:
        >>> from fl_oracle.errors import ConfigError, hinted_why
        >>> exc = ConfigError("bad", field="model", value="resnet19",
        ...                   why="must be one of cnn, resnet18 or module:factory")
        >>> hinted_why(exc)
        "must be one of cnn, resnet18 or module:factory; did you mean 'resnet18'?"
    """
    import re

    from selection.errors import did_you_mean

    head = "must be one of "
    if not exc.why.startswith(head) or not isinstance(exc.value, str):
        return exc.why
    choices = [c for c in re.split(r", | or ", exc.why[len(head) :]) if c]
    return exc.why + did_you_mean(exc.value, choices)
