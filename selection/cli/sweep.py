"""``fedsel sweep``: one formulation over its grid (or the complete ε sweep), for one round or
several; writes DIR/front.csv and DIR/front.html, and says on stderr what the front holds:
its routes, time-limited points, its certificate, the reachable range of an infeasible ε."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import typer

from selection.cli.fronts import (
    certificate,
    certified_within,
    realize_front,
    record_surrogate,
    route_lines,
)
from selection.cli.options import (
    BACKEND,
    BMAX,
    FMIN,
    GRID,
    JOBS_OLD,
    LOGITS,
    METHOD_HELP,
    NO_PROGRESS,
    OBJS,
    OVERWRITE,
    ROUND,
    SEED,
    STATS,
    SURR,
    TL,
    TOL,
    VERBOSE,
    WORKERS,
    K,
    one_grid,
    only,
    parse_floats,
    parse_grids,
    parse_objectives,
    parse_rounds,
    parse_weight_grid,
    refuse_earlier,
    renamed,
)
from selection.cli.reach import range_hint
from selection.cli.resolve import default_logits, default_plane, load_problem, solver_class
from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError
from selection.words import counted

__all__ = [
    "sweep",
    "register",
    "SweepPlan",
    "plan_sweep",
    "sweep_fronts",
    "front_page",
    "sweep_report",
]


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
        "--per-round",
        help="One front per round: all, a range (2-8) or a list (0,4,8); front.csv gets a "
        "round column and front.html overlays the fronts.",
        show_default="one round (--round)",
    ),
    rounds_old: str | None = typer.Option(None, "--rounds", hidden=True),
    backend: str = BACKEND,
    jobs: int | None = WORKERS,
    jobs_old: int | None = JOBS_OLD,
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
    overwrite: bool = OVERWRITE,
) -> None:
    """Sweep one formulation; write DIR/front.csv and DIR/front.html (plot and points)."""
    from selection.atomic import write_table_atomic
    from selection.plotly_js import write_report
    from selection.progress import rich_progress
    from selection.schema import read_stats

    rounds = renamed("--rounds", "--per-round", rounds_old, rounds)
    jobs = renamed("--jobs", "--workers", jobs_old, jobs) or 1
    plan = plan_sweep(
        method, eps=eps, complete=complete, delta=delta, weights=weights, grid=grid,
        fisher_min=fisher_min, b_max=b_max, tolerance=tolerance, objectives=objectives,
        rounds=rounds, round_=round_,
    )  # fmt: skip
    refuse_earlier(out, ("front.csv", "front.html"), "sweep", overwrite)
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
    with rich_progress(enabled=not no_progress) as progress:
        fronts = sweep_fronts(
            plan, problems, backend=backend, n_jobs=jobs, time_limit=time_limit, seed=seed,
            progress=progress, realize=None if realizer is None else (realizer, table, stats),
            per_round=rounds is not None,
        )  # fmt: skip
    front, page = front_page(plan, problems, fronts, stats.name, per_round=rounds is not None)
    write_table_atomic(front, Path(out) / "front.csv")
    write_report(page, Path(out) / "front.html")
    for line in sweep_report(
        plan, problems, fronts, front, out=Path(out), per_round=rounds is not None,
        verbose=verbose,
    ):  # fmt: skip
        print(line, file=sys.stderr)
    from selection.solvers.result import point_rows

    if not point_rows(front).any():  # no answer at any point: as fedsel solve, exit 1
        print("fedsel: no feasible point: no selection satisfies the constraints", file=sys.stderr)
        raise typer.Exit(1)


#: the grid option --complete stands in for (the whole front instead of an --eps grid)
COMPLETE_OF = "eps"


@dataclass(frozen=True)
class SweepPlan:
    """One formulation's sweep as its options ask for it, checked: the solver class, its
    grids (None: the formulation's default, or the complete sweep), the plane drawn and the
    side constraints.
    """

    method: str
    cls: type
    eps: list[float] | None
    delta: list[float] | None
    weights: list | None
    grids: dict[str, list]
    objectives: tuple[str, ...]
    fisher_min: float | None
    b_max: float | None
    tolerance: float


def plan_sweep(
    method: str,
    *,
    eps: str | None = None,
    complete: bool = False,
    delta: str | None = None,
    weights: str | None = None,
    grid: list[str] | None = None,
    fisher_min: float | None = None,
    b_max: float | None = None,
    tolerance: float = 0.0,
    objectives: str | None = None,
    rounds: str | None = None,
    round_: int | None = None,
) -> SweepPlan:
    """The sweep ``fedsel sweep`` options describe, refused in one line (SelectionError) where
    an option does not apply to the formulation or two options say the same thing.

    Examples:
        >>> from selection.cli.sweep import plan_sweep
        >>> plan = plan_sweep("eps", eps="0,5", fisher_min=1.0)
        >>> plan.eps, plan.fisher_min, plan.objectives
        ([0.0, 5.0], 1.0, ('utility', 'gap'))
        >>> plan_sweep("maxmin", fisher_min=1.0)
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: --fisher-min does not apply to method 'maxmin'
    """
    from selection.solvers.base import solver_options

    cls = solver_class(method)
    mine = (method,)
    grid_flags = {"eps": eps, "delta": delta, "weights": weights}  # --NAME: a grid of NAME
    only(
        method,
        **{flag: (value, mine if cls.param == flag else ()) for flag, value in grid_flags.items()},
        # --complete stands for "no --eps grid": it applies where --eps does
        complete=(complete, mine if cls.param == COMPLETE_OF else ()),
        **{
            "fisher-min": (fisher_min, mine if "f_min" in cls.front_constraints else ()),
            "b-max": (b_max, mine if "b_max" in cls.front_constraints else ()),
            "tolerance": (tolerance or None, mine if "tolerance" in solver_options(cls) else ()),
        },
    )
    if eps is not None and complete:
        raise SelectionError("give --eps or --complete, not both")
    if rounds is not None and round_ is not None:
        raise SelectionError("give --round or --per-round, not both")
    eps_grid = parse_floats("--eps", eps)
    delta_grid = parse_floats("--delta", delta)
    w_grid = parse_weight_grid(weights)
    grids = parse_grids(grid, [method])
    one_grid(grids, eps=eps, delta=delta, weights=weights)
    if cls.param in grids and complete:
        raise SelectionError(f"give --grid {cls.param}=… or --complete, not both")
    return SweepPlan(
        method=method,
        cls=cls,
        eps=grids.get("eps", eps_grid),
        delta=delta_grid,
        weights=w_grid,
        grids=grids,
        objectives=tuple(parse_objectives(objectives, default_plane(method))),
        fisher_min=fisher_min,
        b_max=b_max,
        tolerance=tolerance,
    )


def sweep_fronts(
    plan: SweepPlan,
    problems: list,
    *,
    realize: tuple | None = None,
    per_round: bool = False,
    **settings,
) -> list:
    """One front table per problem (a round), the surrogate recorded; with ``realize``
    ``(realizer, table, stats path)`` each point's realized value beside it. ``settings``: the
    sweep's options the command sets (``backend``, ``n_jobs``, ``time_limit``, ``seed``,
    ``progress``: fields of :class:`~selection.solvers.base.SweepOptions`), beside the plan's.

    Examples:
        >>> from selection.cli.sweep import plan_sweep, sweep_fronts
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> problem = SelectionProblem.from_stats(example_stats(), k=5)
        >>> [front] = sweep_fronts(plan_sweep("eps", eps="5,30"), [problem])
        >>> front["param"].tolist(), front["status"].astype(str).tolist()
        (['eps=5', 'eps=30'], ['infeasible', 'optimal'])
    """
    from selection.compare import run_method

    fronts = []
    for problem in problems:
        front = run_method(
            problem,
            plan.method,
            eps=plan.eps,
            delta=plan.delta,
            weights=plan.weights,
            **settings,
            objectives=plan.objectives,
            f_min=plan.fisher_min,
            b_max=plan.b_max,
            grids=plan.grids,
            tolerance=plan.tolerance,
        )
        if realize is not None:
            realizer, table, stats = realize
            front = realize_front(front, problem, table, realizer, Path(stats).parent)
        if per_round:
            front.insert(0, "round", problem.round)
        fronts.append(record_surrogate(front, problem))
    return fronts


def front_page(plan: SweepPlan, problems: list, fronts: list, stats_name: str, *, per_round: bool):
    """The sweep's one table (the fronts stacked) and its page (one front, or one per round)."""
    import pandas as pd

    from selection.report import render_front_html, render_rounds_html

    front = pd.concat(fronts, ignore_index=True)
    p0 = problems[0]
    judged = "" if p0.surrogate == DEFAULT_SURROGATE else f" ({p0.surrogate} surrogate)"
    x, y = plan.objectives[1], plan.objectives[0]
    if not per_round:
        title = f"fedsel sweep: {plan.method}{judged} on {stats_name}, round {p0.round}, K={p0.k}"
        return front, render_front_html(front, title, x=x, y=y)
    title = (
        f"fedsel sweep: {plan.method}{judged} on {stats_name}, rounds {p0.round}.."
        f"{problems[-1].round} ({counted(len(problems), 'front')}), K={p0.k}"
    )
    return front, render_rounds_html(front, title, x=x, y=y)


def sweep_report(
    plan: SweepPlan,
    problems: list,
    fronts: list,
    front,
    *,
    out: Path,
    per_round: bool,
    verbose: bool = False,
) -> list[str]:
    """What ``fedsel sweep`` says on stderr: the points written, the routes (``verbose``),
    time-limited points, the certificate, and the reachable range of an infeasible ε."""
    from selection.solvers.result import Status, point_rows

    cls = plan.cls
    lines = []
    finished = all(bool(f.attrs.get("complete")) for f in fronts)
    slack = max(float(f.attrs.get("gap_slack", 0.0)) for f in fronts)
    n_ok = int(point_rows(front).sum())
    where = f" over {counted(len(problems), 'round')}" if per_round else ""
    lines.append(
        f"{plan.method}: {counted(len(front), 'point')}{where} ({n_ok} feasible) -> {out / 'front.csv'}, "
        "front.html"
    )
    if verbose:
        lines += route_lines(front)
    n_tl = int((front["status"].astype(str) == str(Status.TIME_LIMIT)).sum())
    whole = cls.adaptive_front and plan.eps is None
    if n_tl:
        lines.append(
            f"fedsel: {n_tl} of {counted(len(front), 'point')} stopped at the time limit: each holds the "
            "best selection found, not a proven optimum"
            + (", and the front may miss points near them" if whole else "")
            + "; raise --time-limit (inf for none) to prove them"
        )
    within = [float(f.attrs["certified"]) for f in fronts if "certified" in f.attrs]
    tolerance = plan.tolerance
    if within:  # the bi-objective search (--backend bb): its own certificate
        if max(within) > 0 or not finished:
            lines.append(certified_within(max(within), tolerance, finished))
    elif n_tl or (tolerance and cls.bound_objective):
        lines.append(certificate(front, cls, whole, tolerance, finished, slack))
    if plan.eps is not None and n_ok < len(front):
        # the first round with an infeasible ε tells the reachable range there, where the
        # formulation says what its parameter can reach
        for problem, f in zip(problems, fronts, strict=True):
            bad = int((~point_rows(f)).sum())
            if bad:
                at = f" at round {problem.round}" if per_round else ""
                reach = cls.reachable(problem, f_min=plan.fisher_min, b_max=plan.b_max)
                if reach is not None:
                    hint = range_hint(reach)
                    lines.append(f"fedsel: {bad} of {len(f)} ε infeasible{at}: {hint}")
                break
    return lines


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the fedsel app."""
    app.command("sweep")(sweep)
