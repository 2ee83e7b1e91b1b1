"""The ``fedsel`` console script.

Builds one typer app from the selection commands (:mod:`selection.cli`) and the oracle-side
commands, each module contributing through a ``register(app)`` function. Modules that need
torch import it inside their commands, so ``fedsel solve`` never loads torch.

Every bad input becomes one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Sequence

import typer

try:  # typer >= 0.21 raises its own usage errors; older typer (pinned by flwr) raises click's
    from typer.exceptions import TyperException as _UsageError
except ImportError:  # pragma: no cover - depends on the installed typer
    from click.exceptions import ClickException as _UsageError

from selection.cli import app

# Modules that add commands with ``register(app)``; missing ones are skipped while built.
_COMMAND_MODULES = (
    "fl_oracle.cli.data",  # fedsel data ...
    "fl_oracle.cli.oracle",  # fedsel oracle
    "fl_oracle.cli.train",  # fedsel train, fedsel demo
    "fl_oracle.cli.study",  # fedsel study
    "fl_oracle.cli.flower",  # fedsel flower (needs the flower extra)
)
_registered = False
_interrupt_hint: list[str] = []


_argv: list[str] = []


def command_line() -> str:
    """The running fedsel command as typed (for run records): ``fedsel demo --out ...``."""
    import shlex

    return shlex.join(["fedsel", *_argv])


def interrupt_hint(text: str) -> None:
    """What the user reads after Ctrl-C (or SIGTERM) stops the running command: how to go on."""
    _interrupt_hint[:] = [text]


def _interrupted() -> None:
    _fail("interrupted" + (f"; {_interrupt_hint[0]}" if _interrupt_hint else ""), 130)


def _sigterm(signum, frame) -> None:  # noqa: ARG001 - the signal handler's signature
    raise KeyboardInterrupt


def build_app():
    """The full typer app with every command registered (idempotent)."""
    global _registered
    if not _registered:
        for name in _COMMAND_MODULES:
            try:
                mod = importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name != name:
                    raise
                continue
            mod.register(app)
        _registered = True
    return app


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
    cli = build_app()
    _interrupt_hint.clear()
    _argv[:] = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    try:
        signal.signal(signal.SIGTERM, _sigterm)  # stop like Ctrl-C: workers ended, lock freed
    except ValueError:  # not the main thread (e.g. a test runner's worker thread)
        pass
    try:
        code = cli(args=list(argv) if argv is not None else None, standalone_mode=False)
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
