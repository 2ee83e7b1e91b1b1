"""``fedsel version`` and ``fedsel --version``: print fedsel's version."""

from __future__ import annotations

import typer

__all__ = ["print_version", "version", "register"]


def print_version(value: bool) -> None:
    """Print fedsel's version and exit when ``value`` (the ``--version`` callback)."""
    if value:
        from importlib.metadata import version as _v

        print(f"fedsel {_v('fedsel')}")
        raise typer.Exit()


def version() -> None:
    """Print fedsel's version."""
    print_version(True)


def register(app: typer.Typer) -> None:
    """Add ``version`` to the fedsel app."""
    app.command("version")(version)
