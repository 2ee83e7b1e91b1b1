"""Error types of the FL oracle.

Every error subclasses the builtin ``ValueError``, so the CLI turns it into one line on stderr
and exit code 2, and callers that do not know fedsel can still catch it.
"""

from __future__ import annotations

__all__ = ["OracleError", "ConfigError", "CheckpointError", "UnknownClientError"]


class OracleError(ValueError):
    """Base class of every error the oracle raises on bad input or an inconsistent state."""


class ConfigError(OracleError):
    """An :class:`~fl_oracle.sim.config.OracleConfig` field holds an invalid value."""


class CheckpointError(OracleError):
    """A checkpoint or run folder is missing, corrupt or belongs to another configuration."""


class UnknownClientError(OracleError):
    """A selection names a client id that is not part of the federation."""
