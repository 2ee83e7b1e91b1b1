"""What the commands add to a front and say about it: the surrogate column, the realized
columns of ``sweep --realize`` (the glue to the registered realizer), the routes its points
took (``--verbose``) and the guarantee a time-limited or tolerant front still carries."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = [
    "record_surrogate",
    "realize_front",
    "route_lines",
    "say_routes",
    "certificate",
    "certified_within",
]


def record_surrogate(front, problem):
    """Record the surrogate that made a table's predictions (its last column)."""
    front["surrogate"] = problem.surrogate
    return front


def realize_front(front, problem, table, realizer, folder: Path):
    """``front`` with realized_* columns: its feasible points replayed on the true aggregate
    of round ``problem.round`` (NaN for the others); the drift of the replay is reported."""
    import numpy as np
    import pandas as pd

    from selection.realize import realized_columns
    from selection.solvers.result import point_rows

    ok = np.flatnonzero(point_rows(front))
    sels = [tuple(str(front["selected"].iloc[i]).split(";")) for i in ok]
    print(
        f"fedsel: replaying round {problem.round} of {folder} for {len(sels)} realized points",
        file=sys.stderr,
    )
    real = realizer(folder, problem.round, sels, table[table["round"] == problem.round])
    cols = realized_columns(real, problem.domains)
    cols.index = front.index[ok]
    if real.drift == real.drift and real.drift > 0.05:
        print(
            f"fedsel: warning: this host reproduces round {problem.round} only approximately "
            f"(single-client U up to {real.drift:.2f} pp from the stored table)",
            file=sys.stderr,
        )
    return pd.concat([front, cols.reindex(front.index)], axis=1)


def route_lines(front) -> list[str]:
    """--verbose: each route a front's points took, how many, and why (one line each)."""
    if "route_reason" not in front or not len(front):
        return []
    lines = []
    for (backend, why), g in front.groupby(["backend", "route_reason"], sort=False):
        if backend:
            said = f" ({why})" if why else ""
            lines.append(f"fedsel: route {backend}{said}: {len(g)} point(s)")
    return lines


def say_routes(front) -> None:
    """--verbose: :func:`route_lines` on stderr."""
    for line in route_lines(front):
        print(line, file=sys.stderr)


def certificate(
    front, cls, whole: bool, tolerance: float = 0.0, finished: bool = False, slack: float = 0.0
) -> str:
    """The guarantee a front with time-limited or tolerant points still carries (its
    ``bound`` column); with ``tolerance`` on the complete sweep, also in the gap."""
    from selection.solvers.result import Status
    from selection.solvers.sweeps import max_off

    obj = cls.bound_objective
    if not obj:
        return f"fedsel: {cls.name} proves no bound; nothing is certified"
    off = max_off(front, obj)
    if off != off:  # NaN
        return "fedsel: a point has no proven bound: the front is not certified"
    unit = "" if obj == "sum_Fz" else " pp"
    where = "at any ε the sweep passed" if whole else "at any of its points"
    last = front.iloc[-1] if len(front) else None
    if whole and last is not None and not str(last.get("selected", "") or ""):
        if str(last.get("status")) == Status.TIME_LIMIT:  # stopped, no incumbent: nothing below
            where = f"down to {last['param']} (nothing is known below it)"
    text = (
        f"fedsel: certified: {where}, the exact front's {obj} is at most {off:.4g}{unit} above "
        "this front's (front.csv: bound)"
    )
    stopped = (front["status"].astype(str) == str(Status.TIME_LIMIT)).any() if len(front) else False
    if whole and tolerance > 0 and finished and not stopped:
        text += (
            f"; every exact front point (U*, gap*) has a point here with U >= U* - {off:.4g} pp "
            f"and gap <= gap* + {max(slack, tolerance):.4g} pp"
        )
    return text


def certified_within(c: float, tolerance: float, finished: bool) -> str:
    """The bi-objective search's certificate (``attrs["certified"]``, the largest over the
    fronts): how far the true front may lie from the returned one, in both objectives."""
    text = (
        f"fedsel: certified: every exact front point (U*, gap*) has a point here with "
        f"U >= U* - {c:.4g} pp and gap <= gap* + {c:.4g} pp (front.csv: bound = U + {c:.4g})"
    )
    if not finished:
        text += "; the search stopped at --time-limit" + (
            f" before --tolerance {tolerance:g}" if tolerance > 0 else ""
        )
    return text
