"""Selection commands of the ``fedsel`` CLI (torch-free): solve, sweep, compare.

Thin: parse, call the library, write files. The console script itself is
:func:`fl_oracle.cli.main`, which adds the oracle/training commands to ``app`` and turns
every input error into one line on stderr and exit code 2.

Conventions shared by every command: the same short flags for the same options (``-s/--stats``,
``-k/--k``, ``-m/--method``, ``-o/--out``, ``-r/--rounds``); switches are flags (``--json``,
never ``--json true``); defaults are shown once, in typer's ``[default: …]``; results go to
stdout, progress and notes to stderr.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import typer

from selection.errors import SelectionError
from selection.progress import rich_progress

app = typer.Typer(
    name="fedsel",
    help="Fair client selection in federated learning as multi-objective optimization.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

_METHOD_HELP = (
    "A registered formulation: weighted, eps, maxmin, nsga2, exhaustive, ... (fedsel methods)."
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version as _v

        print(f"fedsel {_v('fedsel')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print fedsel's version and exit.",
    ),
) -> None:
    """Fair client selection in federated learning as multi-objective optimization."""


@app.command("version")
def version() -> None:
    """Print fedsel's version."""
    _print_version(True)


@app.command("methods")
def methods() -> None:
    """List the registered formulations, baselines, information models, objectives and
    surrogates."""
    from selection.objectives import OBJECTIVES
    from selection.solvers.registry import solvers

    print("formulations (--method; selector spec):")
    for name, cls in solvers().items():
        sweep = f"sweeps {cls.param}" if cls.param else "one front"
        print(f"  {name:<12} {cls.spec_form or name:<34} {sweep:<14} {cls.summary}")
    from selection.baselines import baselines

    print("baselines (selector spec; * not counted as a baseline by the study; reads):")
    for name, b in baselines().items():
        mark = "" if b.is_baseline else " *"
        print(f"  {name:<16} {b.spec_form() + mark:<20} {b.summary} [reads {b.reads}]")
    from selection.information import information_models

    print("information models (SPEC@NAME; train --stats; what every client does per round):")
    for name, cls in information_models().items():
        mark = " (the oracle's upper bound)" if cls.upper_bound else ""
        print(f"  {name:<12} {cls.spec_form():<12} {cls.summary}{mark}")
    print("objectives (--objectives):")
    for name, o in OBJECTIVES.items():
        print(f"  {name:<17} {o.sense}  {o.label}")
    from selection.surrogates import surrogates

    print("surrogates of U(S), U_d(S) (--surrogate; SPEC@NAME):")
    for name, cls in surrogates().items():
        print(f"  {name:<12} {cls.structure:<18} {cls.summary}")


# the example round-stats table shipped inside the package (selection/data/), so that an
# installed fedsel has a table to try the selection commands on without the repository
EXAMPLE_STATS = ("data", "example_stats.csv")


def example_stats_bytes() -> bytes:
    """The example round-stats table, read from the installed package (importlib.resources)."""
    from importlib.resources import files

    resource = files("selection")
    for part in EXAMPLE_STATS:
        resource = resource.joinpath(part)
    return resource.read_bytes()


@app.command("example")
def example(
    out: Path = typer.Option(
        Path("example_stats.csv"),
        "--out",
        "-o",
        help="File to write the example round-stats table (CSV) to.",
        show_default="example_stats.csv in the current folder",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the file --out names."),
) -> None:
    """Write an example round-stats table (20 clients, 3 rounds) to try the commands on."""
    out = Path(out)
    if out.is_dir():
        raise SelectionError(f"--out {out} is a folder; name a file, e.g. {out / 'stats.csv'}")
    if out.exists() and not overwrite:
        raise SelectionError(f"{out} exists; pass --overwrite to replace it")
    data = example_stats_bytes()
    from selection.atomic import atomic_path

    with atomic_path(out) as tmp:
        tmp.write_bytes(data)
    print(
        f"wrote {out}; try: fedsel solve --stats {out} --k 5 --method eps --eps 25",
        file=sys.stderr,
    )


def parse_floats(option: str, text: str | None) -> list[float] | None:
    """``"0,2,5,10"`` -> [0.0, 2.0, 5.0, 10.0]; SelectionError naming the option and the item."""
    if text is None:
        return None
    items = [t.strip() for t in str(text).split(",")]
    out = []
    for t in items:
        try:
            v = float(t)
        except ValueError:
            raise SelectionError(f"{option}: {t!r} in {text!r} is not a number") from None
        if math.isnan(v) or v < 0:
            raise SelectionError(f"{option}: {t!r} in {text!r} must be a number >= 0")
        out.append(v)
    return out


_GRID = typer.Option(
    None,
    "--grid",
    help="A grid for any formulation's parameter, PARAM=values (repeatable): alpha=0,0.5,1 "
    "for eps-rel, eps=5,10, delta=0,2; weights take ';'-separated vectors.",
    show_default="each formulation's own grid",
)


def _one_grid(grids: dict[str, list], **given: str | None) -> None:
    """Refuse a parameter given both as its own option and as ``--grid NAME=…``."""
    for name, value in given.items():
        if name in grids and value is not None:
            raise SelectionError(f"give --{name} or --grid {name}=…, not both")


def parse_grids(items: list[str] | None, methods: list[str]) -> dict[str, list]:
    """``["alpha=0,0.5"]`` -> {"alpha": [0.0, 0.5]}; the name must be the parameter one of
    ``methods`` declares (SelectionError naming the item otherwise)."""
    from selection.solvers.registry import solvers

    known = solvers()
    params = {known[m].param: m for m in methods if m in known and known[m].param}
    out: dict[str, list] = {}
    for item in items or []:
        name, sep, values = str(item).partition("=")
        name = name.strip()
        if not sep or not name:
            raise SelectionError(f"--grid {item!r}: write PARAM=values, e.g. alpha=0,0.5,1")
        if name not in params:
            which = ", ".join(f"{p} ({m})" for p, m in params.items()) or "none"
            raise SelectionError(
                f"--grid {item!r}: {name!r} is not a parameter here; parameters: {which}"
            )
        if name in out:
            raise SelectionError(f"--grid: {name} given twice")
        out[name] = (
            parse_weight_grid(values)
            if name == "weights"
            else parse_floats(f"--grid {name}", values)
        )
    return out


def parse_weight_grid(text: str | None) -> list[tuple[float, ...]] | None:
    """``"1,0;0.5,0.5;0,1"`` -> weight vectors (``;`` between vectors, ``,`` inside)."""
    if text is None:
        return None
    from selection.solvers.weighted import parse_weights

    try:
        return [parse_weights(part) for part in str(text).split(";") if part.strip()]
    except ValueError as exc:
        raise SelectionError(f"--weights: {exc}") from None


def parse_objectives(
    text: str | None, default: tuple[str, ...] = ("utility", "gap")
) -> tuple[str, ...]:
    """``"utility,worst"`` -> ("utility", "worst"); at least two distinct known objectives."""
    from selection.objectives import check_objectives

    if text is None:
        return default
    try:
        return check_objectives([t.strip() for t in str(text).split(",")], at_least=2)
    except SelectionError as exc:
        raise SelectionError(f"--objectives {text!r}: {exc}") from None


def _problem(
    stats, k: int, round_: int | None, surrogate: str = "mean", logits: Path | None = None
):
    """One round's problem judged by ``surrogate``; its logits from ``logits`` (a file or a
    folder) or, for a surrogate that needs them, the ``logits/`` folder beside ``stats``."""
    from selection.logits import read_run_logits
    from selection.problem import SelectionProblem
    from selection.schema import read_stats
    from selection.surrogates import get_surrogate

    lg = None
    if logits is not None or get_surrogate(surrogate).needs_logits:
        table = read_stats(stats) if not hasattr(stats, "columns") else stats
        r = int(table["round"].max()) if round_ is None else int(round_)
        where = logits
        if where is None:
            if hasattr(stats, "columns"):
                raise SelectionError(f"the {surrogate} surrogate needs --logits")
            where = Path(stats).parent / "logits"
            if not where.is_dir():
                raise SelectionError(
                    f"the {surrogate} surrogate needs the round's validation logits: pass "
                    f"--logits (no {where} beside {Path(stats).name})"
                )
        lg = read_run_logits(where, r)
        stats = table
    return SelectionProblem.from_stats(stats, k, round_, surrogate=surrogate, logits=lg)


def _realize_front(front, problem, table, realizer, folder: Path):
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


def _record_surrogate(front, problem):
    """Record the surrogate that made a table's predictions (its last column)."""
    front["surrogate"] = problem.surrogate
    return front


def _solver_class(method: str):
    """The registered solver class of ``method`` (SelectionError listing the registry)."""
    from selection.solvers.registry import solvers

    known = solvers()
    if method not in known:
        raise SelectionError(f"unknown method {method!r}; choose one of {', '.join(known)}")
    return known[method]


def _only(method: str, **given) -> None:
    """Reject options that do not apply to ``method`` (name -> (value, methods))."""
    for name, (value, methods) in given.items():
        if value is not None and value is not False and method not in methods:
            raise SelectionError(f"--{name} does not apply to method {method!r}")


def parse_rounds(text: str, available: list[int]) -> list[int]:
    """``all``, ``3-7`` or ``0,4,8`` -> the rounds of the table it names (SelectionError else)."""
    t = str(text).strip().lower()
    if t == "all":
        return list(available)
    try:
        if "-" in t and "," not in t:
            a, b = (int(v) for v in t.split("-", 1))
            want = [r for r in available if a <= r <= b]
        else:
            want = sorted({int(v) for v in t.split(",") if v.strip()})
    except ValueError:
        raise SelectionError(
            f"--rounds {text!r}: give all, a range such as 2-8, or rounds such as 0,4,8"
        ) from None
    missing = [r for r in want if r not in available]
    if missing or not want:
        raise SelectionError(
            f"--rounds {text!r}: round(s) {missing or 'none'} not in the stats table "
            f"(rounds {', '.join(map(str, available))})"
        )
    return want


def default_plane(method: str) -> tuple[str, str]:
    """The plane a method's front is drawn in: the one it optimizes (its ``plane``) when that
    is an accuracy plane, else (utility, gap) (fisher-fair: Σ F_z is no accuracy)."""
    plane = _solver_class(method).plane
    return plane if plane[0] == "utility" else ("utility", "gap")


def eps_range(problem, f_min: float | None = None, b_max: float | None = None) -> dict:
    """What ε can reach on ``problem``: the smallest gap any selection has, the gap at the
    highest reachable U, and that U (under the optional Σ F_z / Σ B constraints); a grid
    inside the range. Empty dict when the constraints alone are infeasible."""
    from selection.solvers.eps import EpsSolver, min_gap_point

    solver = EpsSolver(f_min=f_min, b_max=b_max)
    top = solver.solve(problem)
    if not top.ok:
        return {}
    best = min_gap_point(problem, solver=solver)
    g_min, g_max = float(best.objectives["gap"]), float(top.objectives["gap"])
    up = [math.ceil(v * 100 - 1e-9) / 100 for v in (g_min, g_max)]
    grid = sorted({round(up[0] + (up[1] - up[0]) * i / 3, 2) for i in range(4)})
    return {
        "min_gap": g_min,
        "max_gap": g_max,
        "u_star": float(top.objectives["utility"]),
        "grid": ",".join(format(v, "g") for v in grid),
    }


def _range_hint(rng: dict, *, single: bool = False) -> str:
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


_STATS = typer.Option(..., "--stats", "-s", help="Round-stats table (CSV or Parquet).")
_K = typer.Option(..., "--k", "-k", help="Number of clients to select.")
_ROUND = typer.Option(
    None, "--round", help="Round to take.", show_default="the last round in the file"
)
_SEED = typer.Option(0, "--seed", help="Seed of NSGA-II and the MILP solvers.")
_BACKEND = typer.Option(
    "auto", "--backend", help="auto (measured portfolio), enum, highs, cbc, cpsat or scip."
)
_VERBOSE = typer.Option(
    False, "--verbose", "-v", help="Say which route solved the points and why (stderr)."
)


def _say_routes(front) -> None:
    """--verbose: each route a front's points took, how many, and why."""
    if "route_reason" not in front or not len(front):
        return
    for (backend, why), g in front.groupby(["backend", "route_reason"], sort=False):
        if backend:
            said = f" ({why})" if why else ""
            print(f"fedsel: route {backend}{said}: {len(g)} point(s)", file=sys.stderr)


_TOL = typer.Option(
    0.0,
    "--tolerance",
    help="Exact routes: stop each point within this much of its optimum (points; Σ F_z for "
    "fisher-fair; certified: front.csv's bound); the complete ε sweep also steps its gap by "
    "it, and its front is certified within it in both objectives.",
    show_default="0, proven optimal",
)
_TL = typer.Option(
    None,
    "--time-limit",
    help="Seconds per MILP solve (keeps the incumbent, status time_limit); inf for none.",
    show_default="none; 60 per point in the complete ε sweep",
)
_FMIN = typer.Option(
    None,
    "--fisher-min",
    help="eps: also require Σ F_z >= this (sum of the selected clients' Fisher z-scores).",
    show_default="no constraint",
)
_BMAX = typer.Option(
    None,
    "--b-max",
    help="eps: also require Σ B <= this (nats, label divergence of the selected clients).",
    show_default="no constraint",
)


def _surrogate_help() -> str:
    return "Surrogate of U(S), U_d(S): mean (the seed's), weighted, ensemble (needs --logits)."


_SURR = typer.Option("mean", "--surrogate", help=_surrogate_help())
_LOGITS = typer.Option(
    None,
    "--logits",
    help="Validation logits of the round: an .npz or a folder of them (fedsel oracle's logits/).",
    show_default="the logits/ folder beside --stats, when the surrogate needs them",
)
_OBJS = typer.Option(
    None,
    "--objectives",
    help="Objectives, the first plotted vertically, e.g. utility,worst. nsga2/exhaustive "
    "also solve in them; other methods are drawn in them (also mean_minus_worst, var_d, "
    "sum_B, sum_Fz, sum_cos; fedsel methods).",
    show_default="utility,gap; utility,worst for maxmin",
)


@app.command("solve")
def solve(
    stats: Path = _STATS,
    k: int = _K,
    method: str = typer.Option(..., "--method", "-m", help=_METHOD_HELP),
    eps: float | None = typer.Option(None, "--eps", help="Largest gap, percentage points."),
    delta: float | None = typer.Option(None, "--delta", help="Allowed U loss below U*, points."),
    weights: str | None = typer.Option(None, "--weights", help="w_U,w_R,w_F,w_cos,w_B."),
    composite: str | None = typer.Option(
        None, "--composite", help="weighted: α,β,γ of S_i = α·log(1+F)+β·cos_g+γ·R instead."
    ),
    pick: str = typer.Option("knee", "--pick", help="NSGA-II: knee, max-utility or min-gap."),
    fisher_min: float | None = _FMIN,
    b_max: float | None = _BMAX,
    objectives: str | None = _OBJS,
    backend: str = _BACKEND,
    round_: int | None = _ROUND,
    seed: int = _SEED,
    time_limit: float | None = _TL,
    tolerance: float = _TOL,
    surrogate: str = _SURR,
    logits: Path | None = _LOGITS,
    json_only: bool = typer.Option(False, "--json", help="Print only the JSON (no summary line)."),
    verbose: bool = _VERBOSE,
) -> None:
    """Solve one selection problem; print it as JSON (stdout) and a summary line (stderr)."""
    from selection.solvers.base import solver_options

    cls = _solver_class(method)
    accepted = solver_options(cls)
    given = {
        "eps": eps,
        "delta": delta,
        "weights": weights,
        "composite": composite,
        "pick": None if pick == "knee" else pick,
        "backend": None if backend == "auto" else backend,
        "time_limit": time_limit,
        "f_min": fisher_min,
        "b_max": b_max,
        "tolerance": tolerance or None,
    }
    flag = {"f_min": "fisher-min", "b_max": "b-max"}
    if objectives is not None and "objectives" in accepted:
        given["objectives"] = parse_objectives(objectives)
    _only(
        method,
        **{
            flag.get(name, name): (value, (method,) if name in accepted else ())
            for name, value in given.items()
        },
    )
    objs = parse_objectives(objectives, default_plane(method))
    if weights is not None and composite is not None:
        raise SelectionError("give --weights or --composite, not both")
    if method == "eps" and eps is None:
        raise SelectionError(
            "--method eps needs --eps E, the bound on gap(S) in pp (--eps inf: max U alone); "
            "fedsel sweep --method eps gives the whole front"
        )
    kw = {name: value for name, value in given.items() if value is not None}
    if "seed" in accepted:
        kw["seed"] = seed
    solver = cls(**kw)
    problem = _problem(stats, k, round_, surrogate, logits)
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
    if str(r.status) == "infeasible" and method == "eps":
        rng = eps_range(problem, fisher_min, b_max)
        out["reachable"] = rng
        hint = _range_hint(rng, single=True)
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


def _certificate(
    front, cls, whole: bool, tolerance: float = 0.0, finished: bool = False, slack: float = 0.0
) -> str:
    """The guarantee a front with time-limited or tolerant points still carries (its
    ``bound`` column); with ``tolerance`` on the complete sweep, also in the gap."""
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
        if str(last.get("status")) == "time_limit":  # stopped with no incumbent: below, nothing
            where = f"down to {last['param']} (nothing is known below it)"
    text = (
        f"fedsel: certified: {where}, the exact front's {obj} is at most {off:.4g}{unit} above "
        "this front's (front.csv: bound)"
    )
    stopped = (front["status"].astype(str) == "time_limit").any() if len(front) else False
    if whole and tolerance > 0 and finished and not stopped:
        text += (
            f"; every exact front point (U*, gap*) has a point here with U >= U* - {off:.4g} pp "
            f"and gap <= gap* + {max(slack, tolerance):.4g} pp"
        )
    return text


@app.command("sweep")
def sweep(
    stats: Path = _STATS,
    k: int = _K,
    method: str = typer.Option(..., "--method", "-m", help=_METHOD_HELP),
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
    objectives: str | None = _OBJS,
    fisher_min: float | None = _FMIN,
    b_max: float | None = _BMAX,
    round_: int | None = _ROUND,
    rounds: str | None = typer.Option(
        None,
        "--rounds",
        "-r",
        help="One front per round: all, a range (2-8) or a list (0,4,8); front.csv gets a "
        "round column and front.html overlays the fronts.",
        show_default="one round (--round)",
    ),
    backend: str = _BACKEND,
    jobs: int = typer.Option(1, "--jobs", help="Parallel solves of grid points."),
    seed: int = _SEED,
    time_limit: float | None = _TL,
    tolerance: float = _TOL,
    surrogate: str = _SURR,
    logits: Path | None = _LOGITS,
    grid: list[str] | None = _GRID,
    realize: bool = typer.Option(
        False,
        "--realize",
        help="Also measure each point's realized value (validation accuracy of the "
        "sample-weighted aggregate) by replaying the round of the oracle run --stats came "
        "from; drawn beside the predicted points, realized_* columns in front.csv.",
    ),
    verbose: bool = _VERBOSE,
) -> None:
    """Sweep one formulation; write DIR/front.csv and DIR/front.html (plot and points)."""
    import pandas as pd

    from selection.atomic import write_table_atomic, write_text_atomic
    from selection.compare import run_method
    from selection.report import render_front_html, render_rounds_html
    from selection.schema import read_stats
    from selection.solvers.base import solver_options
    from selection.solvers.result import point_rows

    cls = _solver_class(method)
    mine = (method,)
    _only(
        method,
        eps=(eps, mine if cls.param == "eps" else ()),
        complete=(complete, mine if cls.param == "eps" else ()),
        delta=(delta, mine if cls.param == "delta" else ()),
        weights=(weights, mine if cls.param == "weights" else ()),
        **{
            "fisher-min": (fisher_min, mine if method == "eps" else ()),
            "b-max": (b_max, mine if method == "eps" else ()),
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
    _one_grid(grids, eps=eps, delta=delta, weights=weights)
    if "eps" in grids and complete:
        raise SelectionError("give --grid eps=… or --complete, not both")
    eps_grid = grids.get("eps", eps_grid)
    objs = parse_objectives(objectives, default_plane(method))
    table = read_stats(stats)
    realizer = None
    if realize:
        from selection.realize import realizer_for

        realizer = realizer_for(Path(stats).parent)
    if logits is None and surrogate != "mean":
        logits = stats.parent / "logits" if (stats.parent / "logits").is_dir() else None
    if rounds is None:
        problems = [_problem(table, k, round_, surrogate, logits)]
    else:
        available = sorted(int(r) for r in table["round"].unique())
        problems = [
            _problem(table, k, r, surrogate, logits) for r in parse_rounds(rounds, available)
        ]
    fronts = []
    with rich_progress() as progress:
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
                front = _realize_front(front, problem, table, realizer, Path(stats).parent)
            if rounds is not None:
                front.insert(0, "round", problem.round)
            fronts.append(_record_surrogate(front, problem))
    finished = all(bool(f.attrs.get("complete")) for f in fronts)
    slack = max(float(f.attrs.get("gap_slack", 0.0)) for f in fronts)
    front = pd.concat(fronts, ignore_index=True)
    p0 = problems[0]
    judged = "" if p0.surrogate == "mean" else f" ({p0.surrogate} surrogate)"
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
        _say_routes(front)
    n_tl = int((front["status"].astype(str) == "time_limit").sum())
    whole = method == "eps" and eps_grid is None
    if n_tl:
        print(
            f"fedsel: {n_tl} of {len(front)} points stopped at the time limit: each holds the "
            "best selection found, not a proven optimum"
            + (", and the front may miss points near them" if whole else "")
            + "; raise --time-limit (inf for none) to prove them",
            file=sys.stderr,
        )
    if n_tl or (tolerance and cls.bound_objective):
        print(_certificate(front, cls, whole, tolerance, finished, slack), file=sys.stderr)
    if method == "eps" and eps_grid is not None and n_ok < len(front):
        # the first round with an infeasible ε tells the reachable range there
        for problem, f in zip(problems, fronts, strict=True):
            bad = int((~point_rows(f)).sum())
            if bad:
                at = f" at round {problem.round}" if rounds is not None else ""
                hint = _range_hint(eps_range(problem, fisher_min, b_max))
                print(f"fedsel: {bad} of {len(f)} ε infeasible{at}: {hint}", file=sys.stderr)
                break


@app.command("compare")
def compare(
    stats: Path = _STATS,
    k: int = _K,
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output folder for compare.csv/.html, fronts.csv."
    ),
    round_: int | None = _ROUND,
    seed: int = _SEED,
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
    backend: str = _BACKEND,
    jobs: int = typer.Option(1, "--jobs", help="Parallel solves of grid points."),
    time_limit: float | None = _TL,
    surrogate: str = _SURR,
    logits: Path | None = _LOGITS,
    grid: list[str] | None = _GRID,
    verbose: bool = _VERBOSE,
) -> None:
    """Every formulation on the same round: points, exact-front hits, hypervolume, IGD, time."""
    from rich.console import Console
    from rich.table import Table

    from selection.atomic import write_table_atomic, write_text_atomic
    from selection.compare import compare_methods
    from selection.compare import methods as compared
    from selection.report import render_compare_html

    eps_grid = parse_floats("--eps", eps)
    delta_grid = parse_floats("--delta", delta)
    grids = parse_grids(grid, list(compared()))
    _one_grid(grids, eps=eps, delta=delta)
    objs = parse_objectives(objectives)
    if len(objs) != 2:
        raise SelectionError(f"--objectives {objectives!r}: compare judges in two objectives")
    problem = _problem(stats, k, round_, surrogate, logits)
    with rich_progress() as progress:
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
    if problem.surrogate != "mean":
        plane += f" ({problem.surrogate} surrogate)"
    title = f"fedsel compare{plane} on {stats.name}, round {problem.round}, K={problem.k}"
    page = render_compare_html(c.table, c.fronts, c.reference, title, objectives=objs)
    out = Path(out)
    write_table_atomic(_record_surrogate(c.fronts.copy(), problem), out / "fronts.csv")
    write_text_atomic(page, out / "compare.html")
    write_table_atomic(_record_surrogate(c.table.copy(), problem), out / "compare.csv")
    ref = "the exact front" if c.exact else "the non-dominated union of all methods"
    table = Table(title=f"{title} (reference: {ref}, {len(c.reference)} points)")
    for col in c.table.columns:
        just = "left" if col in ("method", "reference") else "right"
        table.add_column(col, justify=just, no_wrap=True, min_width=len(col))
    for row in c.table.itertuples(index=False):
        table.add_row(*(f"{v:.4f}" if isinstance(v, float) else str(v) for v in row))
    Console(width=max(Console().width, 110)).print(table)
    for note in c.notes:
        print(note, file=sys.stderr)
    if verbose:
        _say_routes(c.fronts)


@app.command("analyze")
def analyze(
    stats: Path = typer.Option(..., "--stats", "-s", help="Round-stats table (.parquet/.csv)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder."),
    boot: int = typer.Option(1000, "--boot", min=0, help="Bootstrap resamples (0 = none)."),
    boot_seed: int = typer.Option(0, "--boot-seed", min=0, help="Seed of the resampling."),
) -> None:
    """Per round and U reading: Spearman rho(F,U), rho(F,U|B), rho(F,B) with bootstrap 95%
    intervals; the pooled value beside its warning; the seed's numbers; figures per round."""
    from selection.analysis import POOLED_WARNING, write_analysis
    from selection.schema import read_stats

    result = write_analysis(read_stats(stats), out, n_boot=boot, seed=boot_seed)
    per = result.per_round

    def ci(r, k: str) -> str:
        lo, hi = r[f"{k}_lo"], r[f"{k}_hi"]
        return f"{r[k]:+.3f} [{lo:+.3f}, {hi:+.3f}]"

    print("round reading   n  rho(F,U) [95% CI]        rho(F,U|B) [95% CI]      rho(F,B) [95% CI]")
    for _, r in per.iterrows():
        if r["round"] == "pooled":
            continue
        print(
            f"{r['round']:>5} {r['reading']:<7} {r['n']:>3}  {ci(r, 'rho_FU'):<24} "
            f"{ci(r, 'rho_FU_given_B'):<24} {ci(r, 'rho_FB')}"
        )
    for _, r in per[per["round"] == "pooled"].iterrows():
        print(f"pooled rho(F,U)={ci(r, 'rho_FU')} ({r['reading']}; see the warning)")
    print(f"warning: {POOLED_WARNING}")
    print("seed: rho(F,U)=-0.550 rho(F,U|B)=-0.547 rho(F,B)=+0.064")
    print(f"wrote {out}/per_round.csv, seed.csv, analysis.csv, .json, .html")
