"""Selection commands of the ``fedsel`` CLI (torch-free): solve, sweep, compare.

Thin: parse, call the library, write files. The console script itself is
:func:`fl_oracle.cli.main`, which adds the oracle/training commands to ``app`` and turns
every input error into one line on stderr and exit code 2.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="fedsel",
    help="Fair client selection in federated learning as multi-objective optimization.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Fair client selection in federated learning as multi-objective optimization."""


@app.command("version")
def version() -> None:
    """Print fedsel's version."""
    from importlib.metadata import version as _v

    print(_v("fedsel"))
