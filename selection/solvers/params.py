"""Argument checks shared by the solvers and the sweeps (one message style: name and value)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum

import numpy as np

__all__ = [
    "FRONT_ROUTE",
    "Route",
    "check_route_options",
    "check_nonneg",
    "check_finite",
    "check_time_limit",
    "check_int",
    "fmt_param",
    "as_float_list",
]


def check_nonneg(name: str, value: float | None, *, allow_none: bool = True) -> float | None:
    """``value`` as a float >= 0 (``inf`` allowed), or None; ValueError naming it otherwise."""
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"{name} is required")
    if isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be a number")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a number") from None
    if math.isnan(v) or v < 0:
        raise ValueError(f"{name}={value!r} must be >= 0 (percentage points)")
    return v


def check_finite(name: str, value: float | None) -> float | None:
    """``value`` as a finite float, or None."""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a number") from None
    if not math.isfinite(v) or isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be a finite number")
    return v


def check_time_limit(value: float | None) -> float | None:
    """A time limit in seconds (> 0) or None; ``inf`` means none."""
    if value is None:
        return None
    if isinstance(value, (int, float, np.floating)) and value == float("inf"):
        return None
    v = check_finite("time_limit", value)
    if v <= 0:
        raise ValueError(f"time_limit={value!r} must be > 0 seconds")
    return v


class Route(StrEnum):
    """The routes that are not a MILP backend (those are named by their registry:
    :func:`selection.solvers.milp.registry.milp_backends`); a ``str``, so a route is either.

    Examples:
        >>> from selection.solvers.params import Route
        >>> [str(r) for r in Route], Route("enum") is Route.ENUM
        (['auto', 'enum', 'search', 'bb'], True)
    """

    AUTO = "auto"  # the portfolio chooses (selection.solvers.milp.portfolio)
    ENUM = "enum"  # complete enumeration of the C(N, K) selections
    SEARCH = "search"  # a black-box heuristic: a bound, no proof (selection.solvers.black_box)
    BB = "bb"  # the complete ε front in one branch and bound (selection.solvers.bb)


#: the route that computes a complete ε front in one search (:mod:`selection.solvers.bb`):
#: a backend of front sweeps, not of one point
FRONT_ROUTE = Route.BB


def check_route_options(
    *,
    backend: str | None = None,
    time_limit: float | None = None,
    tolerance: float = 0.0,
    seed: int = 0,
    n_jobs: int = 1,
    front: bool = False,
) -> dict:
    """The options every route takes, checked alike before any solver runs (one message style,
    whichever route, command or library function receives them): a known ``backend``
    (:data:`FRONT_ROUTE` only where a whole ``front`` is asked for), a time limit > 0 seconds
    (``inf``: none), a finite ``tolerance`` >= 0, an integer ``seed`` >= 0 and ``n_jobs`` >= 1.

    Returns:
        The normalized values: ``time_limit`` (None for none), ``tolerance``, ``seed``,
        ``n_jobs``.

    Raises:
        ValueError: naming the option and its value.
    """
    # the backend's name is checked against the routes by the route that takes it
    # (selection.solvers.milp.portfolio.check_backend: the MILP backends register there)
    if backend is not None and (not isinstance(backend, str) or not backend):
        raise ValueError(f"backend={backend!r} must be a route's name")
    if backend == FRONT_ROUTE and not front:
        raise ValueError(f"backend {FRONT_ROUTE} computes a whole front, not one point")
    limit = check_time_limit(time_limit)
    tol = check_nonneg("tolerance", tolerance, allow_none=False)
    if not math.isfinite(tol):
        raise ValueError(f"tolerance={tolerance!r} must be finite")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} must be an integer >= 0")
    return {"time_limit": limit, "tolerance": tol, "seed": int(seed),
            "n_jobs": check_int("n_jobs", n_jobs)}  # fmt: skip


def check_int(name: str, value: int | None, lo: int = 1) -> int | None:
    """An integer >= lo, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{name}={value!r} must be an integer >= {lo}")
    return int(value)


def fmt_param(name: str, value: float | None) -> str:
    """``eps=5``, ``delta=0.5``, ``eps=inf`` (None means unconstrained)."""
    return f"{name}={'inf' if value is None or math.isinf(value) else format(value, '.10g')}"


def as_float_list(name: str, values: Sequence[float]) -> list[float]:
    """A non-empty list of floats >= 0 (a sweep grid)."""
    out = [check_nonneg(name, v, allow_none=False) for v in values]
    if not out:
        raise ValueError(f"{name} grid is empty")
    return out
