"""The hint an infeasible ``--eps`` is given: the range ε can reach on the round
(:meth:`selection.solvers.base.Solver.reachable`, the formulation's own), with an ε, or a
grid, to try instead."""

from __future__ import annotations

__all__ = ["range_hint"]


def range_hint(rng: dict, *, single: bool = False) -> str:
    """The reachable gap range and an ε to try: one value for ``solve`` (one ε), the grid for
    ``sweep``."""
    if not rng:
        return "the --fisher-min/--b-max constraints alone leave no selection"
    first = rng["grid"].split(",")[0]
    try_ = (
        f"try --eps {first}, or fedsel sweep --eps {rng['grid']}"
        if single
        else f"try --eps {rng['grid']}"
    )
    return (
        f"reachable gaps run from {rng['min_gap']:.2f} pp (the smallest any selection has) to "
        f"{rng['max_gap']:.2f} pp (at the highest U, U* = {rng['u_star']:.2f} %); {try_}"
    )
