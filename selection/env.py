"""The environment variables fedsel reads, declared and checked in one place, as its flags are.

:data:`ENVIRONMENT` lists each one: what it sets, the kind of value it takes and its default.
:func:`env_value` is how a module reads one (None when it is unset or empty), and a bad value
is an :class:`EnvError` naming the variable and the value, which the command line turns into
one line and exit code 2 like a bad flag; :func:`check_environment` checks every one before a
command runs, so a bad value is refused before any work, whichever module would read it. The
conventions page of the documentation lists them (``docs/reference/conventions.md``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from selection.errors import SelectionError

__all__ = ["EnvVar", "EnvError", "ENVIRONMENT", "env_value", "check_environment"]


class EnvError(SelectionError):
    """An environment variable fedsel reads holds a value it cannot take."""


@dataclass(frozen=True)
class EnvVar:
    """One environment variable.

    Attributes:
        kind: ``number`` (a finite float), ``integer`` or ``folder`` (a path that is a folder
            or does not exist yet).
        lo: the smallest value a number or integer takes.
        sets: what it sets, one line.
        default: what holds when it is unset.
        reader: the module that reads it.
    """

    kind: str
    lo: float | None
    sets: str
    default: str
    reader: str


#: every environment variable fedsel reads
ENVIRONMENT: dict[str, EnvVar] = {
    "FEDSEL_STORE_MEMORY_MB": EnvVar(
        "number", 0, "MiB of client images a process keeps in memory; beyond, an unlinked "
        "temporary file", "256", "fl_oracle.sim.store",
    ),
    "FEDSEL_DATA_WORKERS": EnvVar(
        "integer", 1, "processes generating the Digits-4 stand-ins", "half the CPUs (at most "
        "8) for 4,000 images or more, else 1", "fl_oracle.sim.data.generate",
    ),
    "FEDSEL_PROGRESS_SECONDS": EnvVar(
        "number", 0, "seconds between two progress lines where no bar is drawn (not a "
        "terminal)", "30", "selection.progress",
    ),
    "FEDSEL_CACHE": EnvVar(
        "folder", None, "the cache of generated stand-in images", "$XDG_CACHE_HOME/fedsel, "
        "else ~/.cache/fedsel", "fl_oracle.sim.data.cache",
    ),
    "XDG_CACHE_HOME": EnvVar(
        "folder", None, "the cache's parent folder when FEDSEL_CACHE is unset", "~/.cache",
        "fl_oracle.sim.data.cache",
    ),
}  # fmt: skip


def env_value(name: str, environ: Mapping[str, str] | None = None) -> float | int | Path | None:
    """The value of one of :data:`ENVIRONMENT`, checked (None when unset or empty).

    Raises:
        EnvError: naming the variable, its value and what it takes.
    """
    var = ENVIRONMENT[name]
    text = (os.environ if environ is None else environ).get(name, "")
    if not text.strip():
        return None
    text = text.strip()
    if var.kind == "folder":
        path = Path(text).expanduser()
        if path.exists() and not path.is_dir():
            raise EnvError(f"{name}={text!r} is a file; it must name a folder")
        for parent in path.parents:  # a path under a file can never be made
            if parent.exists() and not parent.is_dir():
                raise EnvError(f"{name}={text!r} lies under the file {parent}")
        return path
    lo = var.lo if var.lo is not None else -math.inf
    if var.kind == "integer":
        try:
            value: float | int = int(text)
        except ValueError:
            raise EnvError(f"{name}={text!r} is not an integer (>= {lo:g})") from None
    else:
        try:
            value = float(text)
        except ValueError:
            raise EnvError(f"{name}={text!r} is not a number (>= {lo:g})") from None
        if not math.isfinite(value):
            raise EnvError(f"{name}={text!r} must be a finite number (>= {lo:g})")
    if value < lo:
        raise EnvError(f"{name}={text!r} must be at least {lo:g}")
    return value


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Check every variable of :data:`ENVIRONMENT` that is set (EnvError on the first bad one)."""
    for name in ENVIRONMENT:
        env_value(name, environ)
