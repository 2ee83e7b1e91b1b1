"""Selection commands of the ``fedsel`` CLI (torch-free): solve, sweep, compare.

Thin: parse, call the library, write files. The console script itself is
:func:`fl_oracle.cli.main`, which adds the oracle/training commands to ``app`` and turns
every input error into one line on stderr and exit code 2.

Conventions shared by every command: the same short flags for the same options (``-s/--stats``,
``-k/--k``, ``-m/--method``, ``-o/--out``, ``-r/--rounds``); switches are flags (``--json``,
never ``--json true``); defaults are shown once, in typer's ``[default: …]``; results go to
stdout, progress and notes to stderr.

One module per command, each adding it with ``register(app)`` (as :mod:`fl_oracle.cli`'s
modules do): :mod:`~selection.cli.version`, :mod:`~selection.cli.methods`,
:mod:`~selection.cli.example`, :mod:`~selection.cli.solve`, :mod:`~selection.cli.sweep`,
:mod:`~selection.cli.compare`, :mod:`~selection.cli.analyze`. What they share:
:mod:`~selection.cli.options` (the shared options and the parsers of their values),
:mod:`~selection.cli.resolve` (method, plane, the round's problem and its logits),
:mod:`~selection.cli.reach` (the gaps ε can reach) and :mod:`~selection.cli.fronts` (what is
added to and said about a front). They are registered here, eagerly: none imports numpy,
pandas or pymoo at module level, so listing the commands stays light.
"""

from __future__ import annotations

import typer

from selection.cli import analyze, compare, example, methods, solve, sweep, version
from selection.cli.version import print_version

__all__ = ["app"]

app = typer.Typer(
    name="fedsel",
    help="Fair client selection in federated learning as multi-objective optimization.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=print_version,
        is_eager=True,
        help="Print fedsel's version and exit.",
    ),
) -> None:
    """Fair client selection in federated learning as multi-objective optimization."""


# in the order `fedsel --help` lists them
for _module in (version, methods, example, solve, sweep, compare, analyze):
    _module.register(app)
del _module
