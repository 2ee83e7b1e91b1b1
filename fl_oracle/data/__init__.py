"""Digits-4 data: real files from a user's folder, or generated stand-ins.

Public API::

    DOMAINS, DataError, DomainData, load_domain, load_digits, describe_sources

Importing this package imports torch (the loaders return tensors); the ``fedsel data``
command module (:mod:`fl_oracle.data.cli`) does not import it at module level.
"""

from .api import DEFAULT_N, MODES, describe_sources, load_digits, load_domain
from .base import DOMAINS, SPLITS, DataError, DomainData

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
