"""``fedsel`` in process, as a test calls it: ``from helpers.cli import run_fedsel``."""

from __future__ import annotations

from fl_oracle.cli import main


def run_fedsel(argv, capsys) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``fedsel *argv`` (arguments str()-ed), pytest's
    ``capsys`` capturing the output."""
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
