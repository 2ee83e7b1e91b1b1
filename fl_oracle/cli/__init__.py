"""The ``fedsel`` console script.

Builds one typer app from the selection commands (:mod:`selection.cli`) and the oracle-side
commands, each module contributing through a ``register(app)`` function. Modules that need
torch import it inside their commands, so ``fedsel solve`` never loads torch.

Every bad input becomes one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence

import typer

try:  # typer >= 0.21 raises its own usage errors; older typer (pinned by flwr) raises click's
    from typer.exceptions import TyperException as _UsageError
except ImportError:  # pragma: no cover - depends on the installed typer
    from click.exceptions import ClickException as _UsageError

from selection.cli import app
from selection.cli.options import compact_help
from selection.realize import register_realizer

# `fedsel sweep --realize` replays oracle runs (imported only when a sweep asks for it)
register_realizer(
    "fedsel oracle run",
    "fl_oracle.experiments.realize:is_oracle_run",
    "fl_oracle.experiments.realize:realize_selections",
)

# Modules that add commands with ``register(app)``, with the commands each adds and their
# one-line help (what ``fedsel --help`` lists without importing them: listing the commands
# must not load pandas, pymoo or torch; a test holds these to the commands' own docstrings).
_COMMAND_MODULES: dict[str, dict[str, str]] = {
    "fl_oracle.cli.oracle": {
        "oracle": "Train R federated rounds and write DIR/stats.parquet, stats.csv, rounds.csv, "
        "logits/,\ncheckpoints.",
    },
    "fl_oracle.cli.train": {
        "train": "Train with a selector choosing the K clients of every round.",
        "demo": "Compare selectors on the same federation over several seeds; write report.html "
        "and tables.",
    },
    "fl_oracle.cli.study": {
        "study": "Paired multi-seed comparison of selectors in live training; writes report.html.",
    },
    "fl_oracle.cli.flower": {  # needs the flower extra; skipped when it is missing
        "flower": "Train with a selector choosing the K nodes of every round, on Flower's "
        "simulation engine.",
    },
    "fl_oracle.cli.data": {
        "data": "Inspect the Digits-4 data; write a generated image-folder dataset.",
    },
}
_registered: set[str] = set()
_interrupt_hint: list[str] = []


_argv: list[str] = []


def command_line() -> str:
    """The running fedsel command as typed (for run records): ``fedsel demo --out ...``."""
    import shlex

    return shlex.join(["fedsel", *_argv])


def interrupt_hint(text: str | Callable[[], str]) -> None:
    """What the user reads after Ctrl-C (or SIGTERM) stops the running command: how to go on
    (a callable is asked when the interruption comes, so the text can say what exists then)."""
    _interrupt_hint[:] = [text]


def _interrupted() -> None:
    hint = _interrupt_hint[0] if _interrupt_hint else ""
    hint = hint() if callable(hint) else hint
    _fail("interrupted" + (f"; {hint}" if hint else ""), 130)


def _sigterm(signum, frame) -> None:  # noqa: ARG001 - the signal handler's signature
    raise KeyboardInterrupt


def _register(module: str) -> None:
    if module in _registered:
        return
    _registered.add(module)
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        return
    mod.register(app)


def build_app():
    """The full typer app with every command registered (idempotent)."""
    for module in _COMMAND_MODULES:
        _register(module)
    return app


def _app_for(argv: Sequence[str]):
    """The app a command line needs: its command's module only, or (for ``fedsel --help`` and
    other lines naming no known command) a listing of every command from the table above."""
    words = [a for a in argv if not a.startswith("-")]
    for module, commands in _COMMAND_MODULES.items():
        if words and words[0] in commands:
            _register(module)
            return app
    listing = typer.Typer(
        name=app.info.name,
        help=app.info.help,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    listing.registered_callback = app.registered_callback
    listing.registered_commands = list(app.registered_commands)
    listing.registered_groups = list(app.registered_groups)
    for module, commands in _COMMAND_MODULES.items():
        if module in _registered or importlib.util.find_spec(module) is None:
            continue
        for name, text in commands.items():
            listing.command(name, help=text, add_help_option=False)(_listed_only)
    return listing


def _listed_only() -> None:  # pragma: no cover - a listed command is imported before it runs
    raise RuntimeError("a listed command ran without its module")


def _fail(message: str, code: int = 2) -> None:
    first = str(message).strip().splitlines()[0] if str(message).strip() else "invalid input"
    print(f"fedsel: error: {first}", file=sys.stderr)
    sys.exit(code)


def _warn_line(message, category, filename, lineno, file=None, line=None) -> None:
    """fedsel's own warnings (e.g. ignored stats columns) as one line on stderr."""
    from selection.schema import StatsWarning

    if not issubclass(category, StatsWarning):
        return _show_warning(message, category, filename, lineno, file, line)
    print(f"fedsel: warning: {str(message).splitlines()[0]}", file=sys.stderr)


_show_warning = warnings.showwarning


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI; input errors exit with code 2 and one line on stderr."""
    import signal

    warnings.showwarning = _warn_line
    _interrupt_hint.clear()
    _argv[:] = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    try:  # importing a command may load plugins (its --help lists them): under the handler
        cli = _app_for(_argv)
    except ValueError as exc:  # a plugin that fails to load: SelectionError, one line
        _fail(str(exc) or type(exc).__name__)
    try:
        signal.signal(signal.SIGTERM, _sigterm)  # stop like Ctrl-C: workers ended, lock freed
    except ValueError:  # not the main thread (e.g. a test runner's worker thread)
        pass
    try:
        if not {"--help", "-h", "--version"} & set(_argv):  # a command runs: check them first
            from selection.env import check_environment

            check_environment()  # every variable fedsel reads, as a flag is checked
        command = typer.main.get_command(cli)  # what calling the typer app runs
        compact_help(command)  # short metavars: --help's columns go to the help texts
        code = command(args=list(_argv), prog_name="fedsel", standalone_mode=False)
        if code == 130:  # typer turned a KeyboardInterrupt (Ctrl-C, SIGTERM) into this code
            _interrupted()
        if isinstance(code, int) and code:  # click returns typer.Exit(n)'s code here
            sys.exit(code)
    except typer.Exit as exc:
        if exc.exit_code == 130:  # typer's translation of KeyboardInterrupt (Ctrl-C, SIGTERM)
            _interrupted()
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _interrupted()
    except _UsageError as exc:  # usage errors: bad option, missing argument
        if type(exc).__name__ == "NoArgsIsHelpError":
            print(exc.format_message())
            sys.exit(0)
        _fail(exc.format_message(), exc.exit_code or 2)
    except (
        ValueError,
        OSError,
        KeyError,
    ) as exc:  # SelectionError, StatsError, DataError, ... subclass ValueError
        msg = str(exc)
        if isinstance(exc, KeyError):
            msg = f"missing key {msg}"
        elif isinstance(exc, OSError) and getattr(exc, "filename", None):
            msg = f"{exc.strerror or 'cannot access'}: {exc.filename}"
        _fail(msg or type(exc).__name__)


if __name__ == "__main__":
    main()
