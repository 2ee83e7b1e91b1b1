"""``fedsel solve``: one selection problem, printed as JSON (stdout) and a summary (stderr).

Exit code 1 when there is no selection (infeasible, or stopped with none); an infeasible
``--method eps`` is told the gaps it can reach (:mod:`selection.cli.reach`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from selection.cli.options import (
    BACKEND,
    BMAX,
    FMIN,
    LOGITS,
    METHOD_HELP,
    OBJS,
    ROUND,
    SEED,
    STATS,
    SURR,
    TL,
    TOL,
    VERBOSE,
    K,
    only,
    parse_objectives,
)
from selection.cli.reach import range_hint
from selection.cli.resolve import default_plane, load_problem, solver_class
from selection.errors import SelectionError

__all__ = ["solve", "register"]


def solve(
    stats: Path = STATS,
    k: int = K,
    method: str = typer.Option(..., "--method", "-m", help=METHOD_HELP),
    eps: float | None = typer.Option(None, "--eps", help="Largest gap, percentage points."),
    delta: float | None = typer.Option(None, "--delta", help="Allowed U loss below U*, points."),
    weights: str | None = typer.Option(None, "--weights", help="w_U,w_R,w_F,w_cos,w_B."),
    composite: str | None = typer.Option(
        None, "--composite", help="weighted: α,β,γ of S_i = α·log(1+F)+β·cos_g+γ·R instead."
    ),
    pick: str = typer.Option("knee", "--pick", help="NSGA-II: knee, max-utility or min-gap."),
    fisher_min: float | None = FMIN,
    b_max: float | None = BMAX,
    objectives: str | None = OBJS,
    backend: str = BACKEND,
    round_: int | None = ROUND,
    seed: int = SEED,
    time_limit: float | None = TL,
    tolerance: float = TOL,
    surrogate: str = SURR,
    logits: Path | None = LOGITS,
    json_only: bool = typer.Option(False, "--json", help="Print only the JSON (no summary line)."),
    verbose: bool = VERBOSE,
) -> None:
    """Solve one selection problem; print it as JSON (stdout) and a summary line (stderr)."""
    import json

    from selection.solvers.base import solver_options
    from selection.solvers.params import Route

    cls = solver_class(method)
    accepted = solver_options(cls)
    given = {
        "eps": eps,
        "delta": delta,
        "weights": weights,
        "composite": composite,
        "pick": None if pick == "knee" else pick,
        "backend": None if backend == Route.AUTO else backend,
        "time_limit": time_limit,
        "f_min": fisher_min,
        "b_max": b_max,
        "tolerance": tolerance or None,
    }
    flag = {"f_min": "fisher-min", "b_max": "b-max"}
    if objectives is not None and "objectives" in accepted:
        given["objectives"] = parse_objectives(objectives)
    only(
        method,
        **{
            flag.get(name, name): (value, (method,) if name in accepted else ())
            for name, value in given.items()
        },
    )
    objs = parse_objectives(objectives, default_plane(method))
    if weights is not None and composite is not None:
        raise SelectionError("give --weights or --composite, not both")
    if cls.param_required and given.get(cls.param) is None:
        raise SelectionError(
            f"--method {method} needs --{cls.param} {cls.param_required}; "
            f"fedsel sweep --method {method} gives the whole front"
        )
    kw = {name: value for name, value in given.items() if value is not None}
    if "seed" in accepted:
        kw["seed"] = seed
    solver = cls(**kw)
    problem = load_problem(stats, k, round_, surrogate, logits)
    r = solver.solve(problem)
    out = {
        "method": r.method,
        "param": r.param,
        "surrogate": problem.surrogate,
        "status": str(r.status),
        "round": problem.round,
        "k": problem.k,
        "selected": list(r.ids),
        "objectives": r.objectives,
        "bound": None if r.bound != r.bound else r.bound,
        "route_reason": r.route_reason,
        "seconds": r.seconds,
        "backend": r.backend,
        "message": r.message,
    }
    hint = ""
    infeasible = str(r.status) == "infeasible"
    rng = cls.reachable(problem, f_min=fisher_min, b_max=b_max) if infeasible else None
    if rng is not None:  # the formulation tells what its parameter can reach
        out["reachable"] = rng
        hint = range_hint(rng, single=True)
    print(json.dumps(out, indent=2))
    if not json_only:
        from selection.objectives import OBJECTIVES

        line = f"{r.method} {r.param}: {r.status}".replace("  ", " ")
        if r.objectives:
            o = r.objectives
            shown = list(dict.fromkeys(["utility", "gap", "worst", *objs]))
            line += ", " + " ".join(
                f"{'U' if n == 'utility' else n}={o[n]:.3f}{OBJECTIVES[n].unit if OBJECTIVES[n].unit in ('%', 'pp') else ''}"
                for n in shown
                if n in o
            )
        print(f"{line}, {r.seconds:.3f}s: {';'.join(r.ids) or '-'}", file=sys.stderr)
    if verbose and r.backend:
        said = f" ({r.route_reason})" if r.route_reason else ""
        print(f"fedsel: route {r.backend}{said}", file=sys.stderr)
    if (
        not json_only
        and r.status in ("time_limit", "feasible")
        and r.ids
        and r.bound == r.bound
        and cls.bound_objective
    ):
        why = "stopped at the time limit" if r.status == "time_limit" else "within --tolerance"
        if r.backend == Route.SEARCH:  # a heuristic's answer: the bound is all that is proven
            why = "a local search's answer"
        print(
            f"fedsel: {why}; proven: {cls.bound_objective} <= {r.bound:.6g} "
            f"(this selection: {r.objectives[cls.bound_objective]:.6g})",
            file=sys.stderr,
        )
    if not r.ids:
        # no selection is no answer (infeasible, or stopped with none): the JSON says why,
        # the exit code 1 says there is no selection (2 is bad input); the hint comes last
        print(f"fedsel: no selection: {r.message or r.status}", file=sys.stderr)
        if hint and not json_only:
            print(f"fedsel: {hint}", file=sys.stderr)
        raise typer.Exit(1)
    if hint and not json_only:
        print(f"fedsel: {hint}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add ``solve`` to the fedsel app."""
    app.command("solve")(solve)
