"""``fedsel sweep``: one formulation over its grid (or the complete ε sweep), for one round or
several; writes DIR/front.csv and DIR/front.html, and says on stderr what the front holds:
its routes, time-limited points, its certificate, the reachable range of an infeasible ε."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from selection.cli.fronts import (
    certificate,
    certified_within,
    realize_front,
    record_surrogate,
    say_routes,
)
from selection.cli.options import (
    BACKEND,
    BMAX,
    FMIN,
    GRID,
    LOGITS,
    METHOD_HELP,
    NO_PROGRESS,
    OBJS,
    ROUND,
    SEED,
    STATS,
    SURR,
    TL,
    TOL,
    VERBOSE,
    K,
    one_grid,
    only,
    parse_floats,
    parse_grids,
    parse_objectives,
    parse_rounds,
    parse_weight_grid,
)
from selection.cli.reach import range_hint
from selection.cli.resolve import default_logits, default_plane, load_problem, solver_class
from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError

__all__ = ["sweep", "register"]


def sweep(
    stats: Path = STATS,
    k: int = K,
    method: str = typer.Option(..., "--method", "-m", help=METHOD_HELP),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output folder for front.csv and front.html."
    ),
    eps: str | None = typer.Option(
        None,
        "--eps",
        help="ε grid, e.g. 0,2,5,10 (points); an infeasible grid is told the reachable range.",
        show_default="the complete sweep",
    ),
    complete: bool = typer.Option(
        False, "--complete", help="ε: the whole front (what no --eps means)."
    ),
    delta: str | None = typer.Option(
        None, "--delta", help="δ grid, e.g. 0,1,2,5 (points).", show_default="0,0.5,1,2,3,5,8,12"
    ),
    weights: str | None = typer.Option(
        None,
        "--weights",
        help="Weight vectors (w_U,w_R,w_F,w_cos,w_B) separated by ';', e.g. '1,0;0.5,0.5;0,1'.",
        show_default="11 (w_U, w_R) pairs from (1,0) to (0,1)",
    ),
    objectives: str | None = OBJS,
    fisher_min: float | None = FMIN,
    b_max: float | None = BMAX,
    round_: int | None = ROUND,
    rounds: str | None = typer.Option(
        None,
        "--rounds",
        "-r",
        help="One front per round: all, a range (2-8) or a list (0,4,8); front.csv gets a "
        "round column and front.html overlays the fronts.",
        show_default="one round (--round)",
    ),
    backend: str = BACKEND,
    jobs: int = typer.Option(1, "--jobs", help="Parallel solves of grid points."),
    seed: int = SEED,
    time_limit: float | None = TL,
    tolerance: float = TOL,
    surrogate: str = SURR,
    logits: Path | None = LOGITS,
    grid: list[str] | None = GRID,
    realize: bool = typer.Option(
        False,
        "--realize",
        help="Also measure each point's realized value (validation accuracy of the "
        "sample-weighted aggregate) by replaying the round of the oracle run --stats came "
        "from; drawn beside the predicted points, realized_* columns in front.csv.",
    ),
    verbose: bool = VERBOSE,
    no_progress: bool = NO_PROGRESS,
) -> None:
    """Sweep one formulation; write DIR/front.csv and DIR/front.html (plot and points)."""
    import pandas as pd

    from selection.atomic import write_table_atomic, write_text_atomic
    from selection.compare import run_method
    from selection.progress import rich_progress
    from selection.report import render_front_html, render_rounds_html
    from selection.schema import read_stats
    from selection.solvers.base import Solver, solver_options
    from selection.solvers.result import point_rows

    cls = solver_class(method)
    mine = (method,)
    grid_flags = {"eps": eps, "delta": delta, "weights": weights}  # --NAME: a grid of NAME
    only(
        method,
        **{flag: (value, mine if cls.param == flag else ()) for flag, value in grid_flags.items()},
        complete=(complete, mine if cls.adaptive_front else ()),
        **{
            "fisher-min": (fisher_min, mine if "f_min" in cls.front_constraints else ()),
            "b-max": (b_max, mine if "b_max" in cls.front_constraints else ()),
            "tolerance": (tolerance or None, mine if "tolerance" in solver_options(cls) else ()),
        },
    )
    if eps is not None and complete:
        raise SelectionError("give --eps or --complete, not both")
    if rounds is not None and round_ is not None:
        raise SelectionError("give --round or --rounds, not both")
    eps_grid = parse_floats("--eps", eps)
    delta_grid = parse_floats("--delta", delta)
    w_grid = parse_weight_grid(weights)
    grids = parse_grids(grid, [method])
    one_grid(grids, eps=eps, delta=delta, weights=weights)
    if cls.param in grids and complete:
        raise SelectionError(f"give --grid {cls.param}=… or --complete, not both")
    eps_grid = grids.get("eps", eps_grid)
    objs = parse_objectives(objectives, default_plane(method))
    table = read_stats(stats)
    realizer = None
    if realize:
        from selection.realize import realizer_for

        realizer = realizer_for(Path(stats).parent)
    logits = default_logits(stats, surrogate, logits)
    if rounds is None:
        problems = [load_problem(table, k, round_, surrogate, logits)]
    else:
        available = sorted(int(r) for r in table["round"].unique())
        problems = [
            load_problem(table, k, r, surrogate, logits) for r in parse_rounds(rounds, available)
        ]
    fronts = []
    with rich_progress(enabled=not no_progress) as progress:
        for problem in problems:
            front = run_method(
                problem,
                method,
                eps=eps_grid,
                delta=delta_grid,
                weights=w_grid,
                backend=backend,
                n_jobs=jobs,
                time_limit=time_limit,
                seed=seed,
                progress=progress,
                objectives=objs,
                f_min=fisher_min,
                b_max=b_max,
                grids=grids,
                tolerance=tolerance,
            )
            if realizer is not None:
                front = realize_front(front, problem, table, realizer, Path(stats).parent)
            if rounds is not None:
                front.insert(0, "round", problem.round)
            fronts.append(record_surrogate(front, problem))
    finished = all(bool(f.attrs.get("complete")) for f in fronts)
    slack = max(float(f.attrs.get("gap_slack", 0.0)) for f in fronts)
    front = pd.concat(fronts, ignore_index=True)
    p0 = problems[0]
    judged = "" if p0.surrogate == DEFAULT_SURROGATE else f" ({p0.surrogate} surrogate)"
    if rounds is None:
        title = f"fedsel sweep: {method}{judged} on {stats.name}, round {p0.round}, K={p0.k}"
        page = render_front_html(front, title, x=objs[1], y=objs[0])
    else:
        title = (
            f"fedsel sweep: {method}{judged} on {stats.name}, rounds {p0.round}..{problems[-1].round} "
            f"({len(problems)} fronts), K={p0.k}"
        )
        page = render_rounds_html(front, title, x=objs[1], y=objs[0])
    write_table_atomic(front, Path(out) / "front.csv")
    write_text_atomic(page, Path(out) / "front.html")
    n_ok = int(point_rows(front).sum())
    where = f" over {len(problems)} rounds" if rounds is not None else ""
    print(
        f"{method}: {len(front)} points{where} ({n_ok} feasible) -> {Path(out) / 'front.csv'}, "
        "front.html",
        file=sys.stderr,
    )
    if verbose:
        say_routes(front)
    n_tl = int((front["status"].astype(str) == "time_limit").sum())
    whole = cls.adaptive_front and eps_grid is None
    if n_tl:
        print(
            f"fedsel: {n_tl} of {len(front)} points stopped at the time limit: each holds the "
            "best selection found, not a proven optimum"
            + (", and the front may miss points near them" if whole else "")
            + "; raise --time-limit (inf for none) to prove them",
            file=sys.stderr,
        )
    within = [float(f.attrs["certified"]) for f in fronts if "certified" in f.attrs]
    if within:  # the bi-objective search (--backend bb): its own certificate
        if max(within) > 0 or not finished:
            print(certified_within(max(within), tolerance, finished), file=sys.stderr)
    elif n_tl or (tolerance and cls.bound_objective):
        print(certificate(front, cls, whole, tolerance, finished, slack), file=sys.stderr)
    if eps_grid is not None and n_ok < len(front) and cls.reachable is not Solver.reachable:
        # the first round with an infeasible ε tells the reachable range there
        for problem, f in zip(problems, fronts, strict=True):
            bad = int((~point_rows(f)).sum())
            if bad:
                at = f" at round {problem.round}" if rounds is not None else ""
                hint = range_hint(cls.reachable(problem, f_min=fisher_min, b_max=b_max))
                print(f"fedsel: {bad} of {len(f)} ε infeasible{at}: {hint}", file=sys.stderr)
                break


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the fedsel app."""
    app.command("sweep")(sweep)
