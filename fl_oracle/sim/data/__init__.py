"""Digits-4 data: real files from a user's folder, or generated stand-ins.

Public API::

    DOMAINS, DataError, DomainData, load_domain, load_digits, describe_sources

The loaders return torch tensors, so they are imported lazily (PEP 562): importing this
package, or the ``fedsel data`` command module :mod:`fl_oracle.cli.data`, does not import
torch until a loader is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import DOMAINS, SPLITS, DataError, DomainData

if TYPE_CHECKING:  # pragma: no cover
    from .api import DEFAULT_N, MODES, describe_sources, load_digits, load_domain

__all__ = [
    "DEFAULT_N",
    "DOMAINS",
    "MODES",
    "SPLITS",
    "DataError",
    "DomainData",
    "describe_sources",
    "load_digits",
    "load_domain",
]

_LAZY = {"DEFAULT_N", "MODES", "describe_sources", "load_digits", "load_domain"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
