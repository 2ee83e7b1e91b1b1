"""What ε can reach on a round (the ε-range logic): the range an infeasible ``--eps`` is told,
with an ε, or a grid, to try instead."""

from __future__ import annotations

import math

__all__ = ["eps_range", "range_hint"]


def eps_range(problem, f_min: float | None = None, b_max: float | None = None) -> dict:
    """What ε can reach on ``problem``: the smallest gap any selection has, the gap at the
    highest reachable U, and that U (under the optional Σ F_z / Σ B constraints); a grid
    inside the range. Empty dict when the constraints alone are infeasible."""
    from selection.solvers.eps import EpsSolver, min_gap_point

    solver = EpsSolver(f_min=f_min, b_max=b_max)
    top = solver.solve(problem)
    if not top.ok:
        return {}
    best = min_gap_point(problem, solver=solver, highest_u=False)
    g_min, g_max = float(best.objectives["gap"]), float(top.objectives["gap"])
    up = [math.ceil(v * 100 - 1e-9) / 100 for v in (g_min, g_max)]
    grid = sorted({round(up[0] + (up[1] - up[0]) * i / 3, 2) for i in range(4)})
    return {
        "min_gap": g_min,
        "max_gap": g_max,
        "u_star": float(top.objectives["utility"]),
        "grid": ",".join(format(v, "g") for v in grid),
    }


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
