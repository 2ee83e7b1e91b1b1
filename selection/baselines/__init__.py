"""Baseline selection rules, one module each, registered with ``@register``
(:mod:`selection.baselines.base`): adding a baseline means adding one module."""

import importlib
import pkgutil

from selection.baselines.base import Baseline, baselines, get_baseline, register

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base" and not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["Baseline", "baselines", "get_baseline", "register"]
