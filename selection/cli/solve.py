"""``fedsel solve``: one selection problem, printed as JSON (stdout) and a summary (stderr).

Exit code 1 when there is no selection (infeasible, or stopped with none); an infeasible
``--method eps`` is told the gaps it can reach (:mod:`selection.cli.reach`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
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

__all__ = ["solve", "register", "make_solver", "solve_record", "solve_notes", "tidy_floats"]


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

    from selection.solvers.params import Route

    options = {
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
    cls, solver, objs = make_solver(method, options, objectives=objectives, seed=seed)
    problem = load_problem(stats, k, round_, surrogate, logits)
    r = solver.solve(problem)
    out, hint = solve_record(cls, problem, r, f_min=fisher_min, b_max=b_max)
    print(json.dumps(tidy_floats(out), indent=2))
    notes = solve_notes(cls, r, objs, verbose=verbose)
    for line in notes if not json_only else notes[1:2]:  # --json-only: the route alone
        if line:
            print(line, file=sys.stderr)
    if not r.ids:
        # no selection is no answer (infeasible, or stopped with none): the JSON says why,
        # the exit code 1 says there is no selection (2 is bad input); the hint comes last
        print(f"fedsel: no selection: {r.message or r.status}", file=sys.stderr)
    if hint and not json_only:
        print(f"fedsel: {hint}", file=sys.stderr)
    if not r.ids:
        raise typer.Exit(1)


def make_solver(
    method: str, options: dict, *, objectives: str | None = None, seed: int = 0
) -> tuple[type, object, tuple[str, ...]]:
    """``--method`` with the command's options as a solver: (its class, the solver, the
    objectives its summary shows); SelectionError naming an option the method does not take,
    or a parameter it needs and was not given.

    Examples:
        >>> from selection.cli.solve import make_solver
        >>> cls, solver, objs = make_solver("eps", {"eps": 5.0, "delta": None})
        >>> cls.__name__, solver.eps, objs
        ('EpsSolver', 5.0, ('utility', 'gap'))
        >>> make_solver("eps", {"eps": None})
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: --method eps needs --eps ...; fedsel sweep --method eps gives the whole front
    """
    from selection.solvers.base import solver_options

    cls = solver_class(method)
    accepted = solver_options(cls)
    given = dict(options)
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
    if given.get("weights") is not None and given.get("composite") is not None:
        raise SelectionError("give --weights or --composite, not both")
    if cls.param_required and given.get(cls.param) is None:
        raise SelectionError(
            f"--method {method} needs --{cls.param} {cls.param_required}; "
            f"fedsel sweep --method {method} gives the whole front"
        )
    kw = {name: value for name, value in given.items() if value is not None}
    if "seed" in accepted:
        kw["seed"] = seed
    return cls, cls(**kw), objs


def tidy_floats(value, digits: int = 12):
    """``value`` (a JSON-ready dict, list or number) with every float rounded to ``digits``
    significant digits: the arithmetic's last-bit noise (``24.673088800000002``) left out of
    what a user reads, the stored tables keep the full floats.

    Examples:
        >>> from selection.cli.solve import tidy_floats
        >>> tidy_floats({"gap": 24.673088800000002, "ids": [1, 2], "u": [0.1 + 0.2]})
        {'gap': 24.6730888, 'ids': [1, 2], 'u': [0.3]}
        >>> tidy_floats(float("inf")), tidy_floats(True)
        (inf, True)
    """
    if isinstance(value, dict):
        return {k: tidy_floats(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [tidy_floats(v, digits) for v in value]
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{digits}g}")
    return value


def solve_record(
    cls: type, problem, r, *, f_min: float | None = None, b_max: float | None = None
) -> tuple[dict, str]:
    """The JSON record of one solve and, when it is infeasible and the formulation says what
    its parameter reaches, the hint that tells it ("" otherwise).

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.cli.solve import make_solver, solve_record
        >>> problem = small_problem()
        >>> cls, solver, _ = make_solver("eps", {"eps": 1.0})  # {a, c}: a gap of 0
        >>> out, hint = solve_record(cls, problem, solver.solve(problem))
        >>> out["status"], out["selected"], out["objectives"]["gap"], out["bound"], hint
        ('optimal', ['a', 'c'], 0.0, 75.0, '')
    """
    from selection.solvers.result import Status

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
    infeasible = r.status == Status.INFEASIBLE
    rng = cls.reachable(problem, f_min=f_min, b_max=b_max) if infeasible else None
    if rng is not None:  # the formulation tells what its parameter can reach
        out["reachable"] = rng
        hint = range_hint(rng, single=True)
    return out, hint


def solve_notes(cls: type, r, objs: Sequence[str], *, verbose: bool = False) -> list[str]:
    """What ``fedsel solve`` tells on stderr beside the JSON: the summary line (status,
    objectives, seconds, the backend and why it was chosen, the selection), the route again
    (``--verbose``; "" otherwise) and, for an answer not proven optimal, what is proven.

    Examples:
        >>> from selection.example import small_problem
        >>> from selection.cli.solve import make_solver, solve_notes
        >>> problem = small_problem()
        >>> cls, solver, objs = make_solver("maxmin", {"delta": 2.0})
        >>> r = solver.solve(problem)
        >>> solve_notes(cls, r, objs)[0].split(", ")[:2]
        ['maxmin delta=2: optimal', 'U=85.000% gap=25.000pp worst=60.000%']
        >>> " on enum (C(N, K) = 3 <= enum_limit" in solve_notes(cls, r, objs)[0]
        True
    """
    from selection.objectives import OBJECTIVES
    from selection.solvers.params import Route
    from selection.solvers.result import Status

    line = f"{r.method} {r.param}: {r.status}".replace("  ", " ")
    if r.objectives:
        o = r.objectives
        shown = list(dict.fromkeys(["utility", "gap", "worst", *objs]))
        line += ", " + " ".join(
            f"{'U' if n == 'utility' else n}={o[n]:.3f}{OBJECTIVES[n].unit if OBJECTIVES[n].unit in ('%', 'pp') else ''}"
            for n in shown
            if n in o
        )
    route = ""
    if r.backend:  # the backend and why it was chosen, as get-started describes the line
        route = f" on {r.backend}" + (f" ({r.route_reason})" if r.route_reason else "")
    notes = [f"{line}, {r.seconds:.3f}s{route}: {';'.join(r.ids) or '-'}", ""]
    if verbose and r.backend:
        said = f" ({r.route_reason})" if r.route_reason else ""
        notes[1] = f"fedsel: route {r.backend}{said}"
    proven = r.status in (Status.TIME_LIMIT, Status.FEASIBLE) and r.bound == r.bound
    if r.ids and proven and cls.bound_objective:
        stopped = r.status == Status.TIME_LIMIT
        why = "stopped at the time limit" if stopped else "within --tolerance"
        if r.backend == Route.SEARCH:  # a heuristic's answer: the bound is all that is proven
            why = "a local search's answer"
        notes.append(
            f"fedsel: {why}; proven: {cls.bound_objective} <= {r.bound:.6g} "
            f"(this selection: {r.objectives[cls.bound_objective]:.6g})"
        )
    return notes


def register(app: typer.Typer) -> None:
    """Add ``solve`` to the fedsel app."""
    app.command("solve")(solve)
