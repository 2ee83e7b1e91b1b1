"""``fedsel compare``: every formulation on the same round, judged against the exact front (or
the union of all methods); writes compare.csv/.html and fronts.csv, prints the table."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from selection.cli.fronts import record_surrogate, say_routes
from selection.cli.options import (
    BACKEND,
    GRID,
    JOBS_OLD,
    LOGITS,
    NO_PROGRESS,
    OVERWRITE,
    ROUND,
    SEED,
    STATS,
    SURR,
    TL,
    VERBOSE,
    WORKERS,
    K,
    one_grid,
    parse_floats,
    parse_grids,
    parse_objectives,
    refuse_earlier,
    renamed,
)
from selection.cli.resolve import load_problem
from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError
from selection.words import counted

__all__ = ["compare", "register"]


def compare(
    stats: Path = STATS,
    k: int = K,
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output folder for compare.csv/.html, fronts.csv."
    ),
    round_: int | None = ROUND,
    seed: int = SEED,
    eps: str | None = typer.Option(
        None, "--eps", help="ε grid (points).", show_default="the complete sweep"
    ),
    delta: str | None = typer.Option(
        None, "--delta", help="δ grid for max-min (points).", show_default="0,0.5,1,2,3,5,8,12"
    ),
    objectives: str | None = typer.Option(
        None,
        "--objectives",
        help="The plane every method is judged in, e.g. utility,worst (the plane max-min "
        "optimizes); NSGA-II and enumeration solve in it.",
        show_default="utility,gap",
    ),
    backend: str = BACKEND,
    jobs: int | None = WORKERS,
    jobs_old: int | None = JOBS_OLD,
    time_limit: float | None = TL,
    surrogate: str = SURR,
    logits: Path | None = LOGITS,
    grid: list[str] | None = GRID,
    verbose: bool = VERBOSE,
    no_progress: bool = NO_PROGRESS,
    overwrite: bool = OVERWRITE,
) -> None:
    """Every formulation on the same round: points, exact-front hits, hypervolume, IGD, time."""
    from rich.console import Console
    from rich.table import Table

    from selection.atomic import write_table_atomic
    from selection.compare import compare_methods
    from selection.compare import methods as compared
    from selection.plotly_js import write_report
    from selection.progress import rich_progress
    from selection.report import render_compare_html

    jobs = renamed("--jobs", "--workers", jobs_old, jobs) or 1
    eps_grid = parse_floats("--eps", eps)
    delta_grid = parse_floats("--delta", delta)
    grids = parse_grids(grid, list(compared()))
    one_grid(grids, eps=eps, delta=delta)
    objs = parse_objectives(objectives)
    refuse_earlier(out, ("compare.csv", "compare.html", "fronts.csv"), "compare", overwrite)
    if len(objs) != 2:
        raise SelectionError(f"--objectives {objectives!r}: compare judges in two objectives")
    problem = load_problem(stats, k, round_, surrogate, logits)
    with rich_progress(enabled=not no_progress) as progress:
        c = compare_methods(
            problem,
            eps=eps_grid,
            delta=delta_grid,
            backend=backend,
            n_jobs=jobs,
            time_limit=time_limit,
            seed=seed,
            progress=progress,
            objectives=objs,
            grids=grids,
        )
    plane = f" in ({objs[0]}, {objs[1]})" if objs != ("utility", "gap") else ""
    if problem.surrogate != DEFAULT_SURROGATE:
        plane += f" ({problem.surrogate} surrogate)"
    title = f"fedsel compare{plane} on {stats.name}, round {problem.round}, K={problem.k}"
    page = render_compare_html(c.table, c.fronts, c.reference, title, objectives=objs)
    out = Path(out)
    write_table_atomic(record_surrogate(c.fronts.copy(), problem), out / "fronts.csv")
    write_report(page, out / "compare.html")
    write_table_atomic(record_surrogate(c.table.copy(), problem), out / "compare.csv")
    ref = "the exact front" if c.exact else "the non-dominated union of all methods"
    table = Table(title=f"{title} (reference: {ref}, {counted(len(c.reference), 'point')})")
    for col in c.table.columns:
        just = "left" if col in ("method", "reference") else "right"
        table.add_column(col, justify=just, no_wrap=True, min_width=len(col))
    for row in c.table.itertuples(index=False):
        table.add_row(*(f"{v:.4f}" if isinstance(v, float) else str(v) for v in row))
    Console(width=max(Console().width, 110)).print(table)
    for note in c.notes:
        print(note, file=sys.stderr)
    print(f"wrote {out / 'compare.csv'}, compare.html, fronts.csv", file=sys.stderr)
    if verbose:
        say_routes(c.fronts)


def register(app: typer.Typer) -> None:
    """Add ``compare`` to the fedsel app."""
    app.command("compare")(compare)
