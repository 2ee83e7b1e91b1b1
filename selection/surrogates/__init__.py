"""Surrogates of a selection's value U(S), U_d(S): one module each, found by discovery.

Importing this package imports every module in it; each registers its :class:`Surrogate`
subclass with ``@register``. Adding a surrogate means adding one module here.
"""

import importlib
import pkgutil

from selection.surrogates.base import (
    DEFAULT_SURROGATE,
    STRUCTURES,
    SURROGATES,
    Structure,
    Surrogate,
    SurrogateSpec,
    get_surrogate,
    register,
    surrogates,
)

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base" and not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = [
    "DEFAULT_SURROGATE",
    "STRUCTURES",
    "SURROGATES",
    "Structure",
    "Surrogate",
    "SurrogateSpec",
    "get_surrogate",
    "register",
    "surrogates",
]
