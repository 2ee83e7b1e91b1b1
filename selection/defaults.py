"""Defaults named once and importable without the heavy packages (the command line's option
table reads them before any solver, surrogate or array library is loaded)."""

from __future__ import annotations

__all__ = ["DEFAULT_SURROGATE"]

#: the surrogate a problem, a spec and a command use unless told otherwise (a registered
#: surrogate's name: :mod:`selection.surrogates.mean`)
DEFAULT_SURROGATE = "mean"
