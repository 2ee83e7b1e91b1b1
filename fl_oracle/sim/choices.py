"""Choices the simulator's settings take, stated once and import-light (no numpy, no torch):
the configuration checks them, the data layer dispatches on them and every command's help and
check read them from here."""

from __future__ import annotations

__all__ = ["DATA_MODES", "DATA_HELP"]

DATA_MODES = ("auto", "real", "generated")  # --data: where each domain's images come from
DATA_HELP = " | ".join(DATA_MODES) + "."
