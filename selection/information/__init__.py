"""Information models: what every client does per round and what the selector then sees.

One module each, found by discovery like the formulations, surrogates and baselines: each
registers an :class:`InformationModel` subclass with ``@register``. A selector spec takes one
as a modifier (``eps:5@probe``, ``maxmin:2@weighted+pool:10``); training drivers ask the model
which clients train before the selection, build the selector's table with :meth:`view` and
report what the committed clients measured with :meth:`observe`. Adding an information model
means adding one module here.
"""

import importlib
import pkgutil

from selection.information.base import (
    Information,
    InformationModel,
    RoundInputs,
    default_information,
    driver_information,
    get_information,
    information_models,
    make_information,
    parse_information,
    register,
)
from selection.information.rule import RULE, Rule

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base" and not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = [
    "RULE",
    "Information",
    "InformationModel",
    "RoundInputs",
    "Rule",
    "default_information",
    "driver_information",
    "get_information",
    "information_models",
    "make_information",
    "parse_information",
    "register",
]
