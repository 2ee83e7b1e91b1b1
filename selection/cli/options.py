"""The options several selection commands share (one declaration, one wording) and the parsers
of their values.

Parsers raise :class:`~selection.errors.SelectionError` naming the option and the bad item
(the console script turns it into one line on stderr and exit code 2). Nothing heavy is
imported here at module level: the registries are read inside the parsers, when a command runs.
"""

from __future__ import annotations

import math
import sys

import typer

from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError, unknown_name

__all__ = [
    "METHOD_HELP",
    "STATS",
    "K",
    "ROUND",
    "SEED",
    "OVERWRITE",
    "refuse_earlier",
    "BACKEND",
    "VERBOSE",
    "NO_PROGRESS",
    "TOL",
    "TL",
    "FMIN",
    "BMAX",
    "SURR",
    "LOGITS",
    "OBJS",
    "GRID",
    "backend_help",
    "surrogate_help",
    "parse_floats",
    "compact_help",
    "shown_type",
    "SHORT_METAVARS",
    "parse_grids",
    "parse_weight_grid",
    "parse_objectives",
    "parse_rounds",
    "one_grid",
    "only",
]

METHOD_HELP = (
    "A registered formulation: weighted, eps, maxmin, nsga2, exhaustive, ... (fedsel methods)."
)


def backend_help() -> str:
    """The help text of ``--backend``: the routes a MILP point can take. It names no backend:
    the registry is read when a command runs (importing it here would load every solver
    library for ``fedsel --help``), and ``fedsel methods`` lists what is registered."""
    return "auto (measured portfolio), enum, or a registered MILP backend (fedsel methods)."


def surrogate_help() -> str:
    """The help text of ``--surrogate`` (names none: ``fedsel methods`` lists the registry)."""
    return (
        "Surrogate of U(S), U_d(S): mean (the problem statement's) or a registered one (fedsel methods; "
        "those that read logits need --logits)."
    )


def renamed(old: str, new: str, old_value, new_value, *, unset=None):
    """The value of a flag that was renamed so that one flag means one thing in every
    command (``--stats`` is a round-stats file, ``--rounds`` a count of rounds, ``--workers``
    parallel processes): the new flag's, or the old spelling's with a note on stderr; both
    given is bad input.

    Examples:
        >>> from selection.cli.options import renamed
        >>> renamed("--jobs", "--workers", None, 4)
        4
        >>> renamed("--jobs", "--workers", 2, None)  # with a note on stderr
        2
    """
    if old_value is unset:
        return new_value
    if new_value is not unset:
        raise typer.BadParameter(f"give {new} (the name of {old} here), not both", param_hint=old)
    print(f"fedsel: note: {old} is {new} in this command (renamed: one flag, one meaning)",
          file=sys.stderr)  # fmt: skip
    return old_value


# ---------------------------------------------------------------- declarations
STATS = typer.Option(..., "--stats", "-s", help="Round-stats table (CSV or Parquet).")
WORKERS = typer.Option(
    None, "--workers", "-w", min=1, help="Parallel processes solving grid points.", show_default="1"
)
JOBS_OLD = typer.Option(None, "--jobs", min=1, hidden=True)  # --workers' old name
K = typer.Option(..., "--k", "-k", help="Number of clients to select.")
ROUND = typer.Option(
    None, "--round", help="Round to take.", show_default="the last round in the file"
)
SEED = typer.Option(0, "--seed", help="Seed of NSGA-II and the MILP solvers.")


def _known_backend(backend: str) -> str:
    """``--backend`` checked as it is parsed: a route name, else one line with the closest."""
    from selection.solvers.milp.portfolio import backends
    from selection.solvers.params import FRONT_ROUTE

    allowed = tuple(dict.fromkeys((*backends(), FRONT_ROUTE)))
    if backend not in allowed:
        raise SelectionError(f"--backend: {unknown_name('backend', backend, allowed)}")
    return backend


BACKEND = typer.Option("auto", "--backend", help=backend_help(), callback=_known_backend)
VERBOSE = typer.Option(
    False, "--verbose", "-v", help="Say which route solved the points and why (stderr)."
)
#: every long-running command's switch (fedsel's own commands and fl_oracle's alike)
NO_PROGRESS = typer.Option(False, "--no-progress", help="Draw no progress bar.")
#: a report writer's switch: replace the files an earlier run wrote in --out
OVERWRITE = typer.Option(
    False, "--overwrite", help="Replace the files an earlier run wrote in --out."
)
TOL = typer.Option(
    0.0,
    "--tolerance",
    help="Exact routes: stop each point within this much of its optimum (points; Σ F_z for "
    "fisher-fair; certified: front.csv's bound); the complete ε sweep also steps its gap by "
    "it, and its front is certified within it in both objectives.",
    show_default="0, proven optimal",
)
TL = typer.Option(
    None,
    "--time-limit",
    help="Seconds per MILP solve (keeps the incumbent, status time_limit); inf for none. "
    "With sweep --complete --backend bb: seconds for the whole front (it keeps the "
    "certificate it reached).",
    show_default="none; 60 per point in the complete ε sweep",
)
FMIN = typer.Option(
    None,
    "--fisher-min",
    help="eps: also require Σ F_z >= this (sum of the selected clients' Fisher z-scores).",
    show_default="no constraint",
)
BMAX = typer.Option(
    None,
    "--b-max",
    help="eps: also require Σ B <= this (nats, label divergence of the selected clients).",
    show_default="no constraint",
)
SURR = typer.Option(DEFAULT_SURROGATE, "--surrogate", help=surrogate_help())
LOGITS = typer.Option(
    None,
    "--logits",
    help="Validation logits of the round: an .npz or a folder of them (fedsel oracle's logits/).",
    show_default="the logits/ folder beside --stats, when the surrogate needs them",
)
OBJS = typer.Option(
    None,
    "--objectives",
    help="Objectives, the first plotted vertically, e.g. utility,worst. nsga2/exhaustive "
    "also solve in them; other methods are drawn in them (also mean_minus_worst, var_d, "
    "sum_B, sum_Fz, sum_cos; fedsel methods).",
    show_default="utility,gap; utility,worst for maxmin",
)
GRID = typer.Option(
    None,
    "--grid",
    help="A grid for any formulation's parameter, PARAM=values (repeatable): alpha=0,0.5,1 "
    "for eps-rel, eps=5,10, delta=0,2; weights take ';'-separated vectors.",
    show_default="each formulation's own grid",
)


# ---------------------------------------------------------------- parsers
def refuse_earlier(out, names: tuple[str, ...], command: str, overwrite: bool) -> None:
    """Refuse (SelectionError) an ``--out`` that holds any of ``names`` from an earlier run,
    unless ``overwrite``: checked before any work, so nothing written earlier is lost.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> d = Path(tempfile.mkdtemp())
        >>> (d / "front.csv").write_text("x")
        1
        >>> refuse_earlier(d, ("front.csv", "front.html"), "sweep", False)
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: ... holds front.csv from an earlier fedsel sweep; pass --overwrite to replace it, or choose another --out
        >>> refuse_earlier(d, ("front.csv",), "sweep", True)  # replaced on purpose
    """
    from pathlib import Path

    held = [n for n in names if (Path(out) / n).exists()]
    if held and not overwrite:
        raise SelectionError(
            f"{out} holds {held[0]} from an earlier fedsel {command}; pass --overwrite to "
            "replace it, or choose another --out"
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


def one_grid(grids: dict[str, list], **given: str | None) -> None:
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


def parse_rounds(text: str, available: list[int]) -> list[int]:
    """``all``, ``3-7`` or ``0,4,8`` -> the rounds of the table it names (SelectionError else:
    a round the table lacks, or a range reaching past its first or last round).

    Examples:
        >>> from selection.cli.options import parse_rounds
        >>> parse_rounds("1-2", [0, 1, 2]), parse_rounds("0,2", [0, 1, 2])
        ([1, 2], [0, 2])
        >>> parse_rounds("0-9", [0, 1, 2])
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: --per-round '0-9': round(s) [9] not in the stats table (rounds 0, 1, 2)
    """
    t = str(text).strip().lower()
    if t == "all":
        return list(available)
    try:
        if "-" in t and "," not in t:
            a, b = (int(v) for v in t.split("-", 1))
            want = [r for r in available if a <= r <= b]
        else:
            a = b = None
            want = sorted({int(v) for v in t.split(",") if v.strip()})
    except ValueError:
        raise SelectionError(
            f"--per-round {text!r}: give all, a range such as 2-8, or rounds such as 0,4,8"
        ) from None
    if a is not None and available:  # a range reaching past the table: refused as a round is
        past = [r for r in (a, b) if not min(available) <= r <= max(available)]
        if past or a > b:
            raise SelectionError(
                f"--per-round {text!r}: "
                + (f"round(s) {past} not in the stats table" if past else f"{a} is after {b}")
                + f" (rounds {', '.join(map(str, available))})"
            )
    missing = [r for r in want if r not in available]
    if missing or not want:
        raise SelectionError(
            f"--per-round {text!r}: round(s) {missing or 'none'} not in the stats table "
            f"(rounds {', '.join(map(str, available))})"
        )
    return want


def only(method: str, **given) -> None:
    """Reject options that do not apply to ``method`` (name -> (value, methods))."""
    for name, (value, methods) in given.items():
        if value is not None and value is not False and method not in methods:
            raise SelectionError(f"--{name} does not apply to method {method!r}")


#: the type ``--help`` shows for an option of this value type (typer's defaults, ``INTEGER
#: RANGE`` before typer 0.29 and ``<int range>`` after, take a third of an 80-column help and say
#: less than the range that follows them; a flag shows none, not ``<bool>``)
SHORT_METAVARS = {"integer": "N", "integer range": "N", "float": "X", "float range": "X"}
_SHORT_TYPES = {int: "N", float: "X", str: "TEXT"}


def shown_type(param) -> str | None:
    """The type ``--help`` shows for ``param`` after :func:`compact_help` (None: none), under
    either of typer's help renderers (click's types before typer 0.29, its own after)."""
    if hasattr(param, "type_descriptor"):
        return param.display_type_rich(ctx=None)
    return param.metavar


def compact_help(command) -> None:
    """Give every option of ``command`` and its subcommands that names no metavar of its own a
    short type (``N`` for integers, ``X`` for numbers; the range stays; a flag none), so
    ``--help`` spends its 80 columns on the help texts. Typer renders help with click's types
    before 0.29 and with its own after; both are handled (the test suite runs one of them).

    Examples:
        >>> import typer
        >>> from typer.main import get_command
        >>> from selection.cli.options import compact_help, shown_type
        >>> app = typer.Typer()
        >>> @app.command()
        ... def go(k: int = typer.Option(1, min=1), lr: float = 0.1, on: bool = False): ...
        >>> cmd = get_command(app)
        >>> compact_help(cmd)
        >>> [(p.name, shown_type(p)) for p in cmd.params][:3]
        [('k', 'N'), ('lr', 'X'), ('on', None)]
    """
    for param in getattr(command, "params", ()):
        if getattr(param, "metavar", None) is not None:
            continue
        if hasattr(param, "type_descriptor"):  # typer >= 0.29: its own types, shown by it
            desc = param.type_descriptor
            if getattr(param, "is_flag", False) or desc.annotation is bool:
                short = None
            elif desc.annotation in _SHORT_TYPES:
                short = _SHORT_TYPES[desc.annotation]
            elif getattr(desc, "is_path", False):
                short = "PATH"
            else:
                continue
            param.display_type_rich = lambda ctx=None, _short=short: _short
        else:  # click's types, their metavar shown
            short = SHORT_METAVARS.get(getattr(getattr(param, "type", None), "name", ""))
            if short and not getattr(param, "is_flag", False):
                param.metavar = short
    for child in getattr(command, "commands", {}).values():
        compact_help(child)
