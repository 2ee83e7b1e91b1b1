"""Atomic checkpoints of an oracle run: one file per committed round.

``torch.save`` goes to a temporary file that is renamed over the target, so a kill at any
moment leaves either the old or the new checkpoint, never a torn one. Loading uses
``torch.load(weights_only=True)``: a checkpoint holds only tensors and plain Python values.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from fl_oracle.errors import CheckpointError
from selection.atomic import atomic_path

__all__ = ["save_checkpoint", "load_checkpoint", "latest_checkpoint", "checkpoint_path"]

_NAME = re.compile(r"^round_(\d{5})\.pt$")


def checkpoint_path(folder: str | os.PathLike, round_: int) -> Path:
    """``folder/round_00012.pt``: the state after ``round_`` rounds were committed."""
    return Path(folder) / f"round_{round_:05d}.pt"


def save_checkpoint(state: dict, path: str | os.PathLike) -> Path:
    """Write ``state`` with ``torch.save`` through a temp file and an atomic rename."""
    p = Path(path)
    with atomic_path(p) as tmp, open(tmp, "wb") as fh:
        torch.save(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    return p


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Load a checkpoint with ``weights_only=True`` (CheckpointError naming the file)."""
    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"checkpoint not found: {p}")
    try:
        state = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling errors come in many types
        raise CheckpointError(f"cannot read checkpoint {p}: {str(exc).splitlines()[0]}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {p} does not hold a state dict")
    return state


def latest_checkpoint(folder: str | os.PathLike) -> Path | None:
    """The checkpoint with the highest round in ``folder`` (None when there is none)."""
    d = Path(folder)
    if not d.is_dir():
        return None
    found = [(int(m.group(1)), f) for f in d.iterdir() if (m := _NAME.match(f.name))]
    return max(found)[1] if found else None
