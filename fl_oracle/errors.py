"""Error types of the FL oracle.

Every error subclasses the builtin ``ValueError``, so the CLI turns it into one line on stderr
and exit code 2, and callers that do not know fedsel can still catch it.
"""

from __future__ import annotations

__all__ = ["OracleError", "ConfigError", "CheckpointError", "UnknownClientError"]


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
