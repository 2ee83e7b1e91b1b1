"""The one TOML value writer of the project (configurations, study settings, run records,
data provenance): Python values as TOML text, read back by :mod:`tomllib` to equal values."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["toml_value", "toml_key"]


def toml_key(k: str) -> str:
    """A bare key when it is one (letters, digits, ``-``, ``_``), else a quoted one."""
    return k if k.replace("-", "").replace("_", "").isalnum() else toml_value(str(k))


def toml_value(v: Any, *, strict: bool = False) -> str:
    """``v`` as a TOML value: booleans, integers, floats (``repr``: exact round trip), strings,
    lists/tuples and dicts (inline tables). Anything else is written as the string ``str(v)``,
    or refused with TypeError when ``strict``."""
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        return repr(float(v))  # numpy's repr (np.float64(0.5)) is not TOML
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x, strict=strict) for x in v) + "]"
    if isinstance(v, dict):
        body = ", ".join(
            f"{toml_value(str(a))} = {toml_value(x, strict=strict)}" for a, x in v.items()
        )
        return "{" + body + "}"
    if strict:
        raise TypeError(f"cannot write {v!r} to TOML")
    return toml_value(str(v))
