"""Atomic checkpoints of an oracle run: one file per committed round.

``torch.save`` goes to a temporary file that is renamed over the target, so a kill at any
moment leaves either the old or the new checkpoint, never a torn one. Loading uses
``torch.load(weights_only=True)``: a checkpoint holds only tensors and plain Python values.

Each file starts with a header line ``fedsel-checkpoint 1 sha256=<hex> bytes=<n>`` followed by
the ``torch.save`` bytes; :func:`load_checkpoint` verifies length and SHA-256 before unpickling,
so flipped or truncated bytes are refused instead of resuming from silently wrong weights.
Files without the header (written before it existed) are read unchecked when they are a
``torch.save`` zip archive, and refused otherwise.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from pathlib import Path

import torch

from fl_oracle.errors import CheckpointError
from selection.atomic import atomic_path

__all__ = ["save_checkpoint", "load_checkpoint", "latest_checkpoint", "checkpoint_path"]

_NAME = re.compile(r"^round_(\d{5})\.pt$")
_MAGIC = b"fedsel-checkpoint 1 "
_HEADER = re.compile(rb"^fedsel-checkpoint 1 sha256=([0-9a-f]{64}) bytes=(\d+)\n")
_ZIP = b"PK\x03\x04"  # torch.save's zip archive


def checkpoint_path(folder: str | os.PathLike, round_: int) -> Path:
    """``folder/round_00012.pt``: the state after ``round_`` rounds were committed."""
    return Path(folder) / f"round_{round_:05d}.pt"


def save_checkpoint(state: dict, path: str | os.PathLike) -> Path:
    """Write ``state`` with ``torch.save`` through a temp file and an atomic rename."""
    p = Path(path)
    buf = io.BytesIO()
    torch.save(state, buf)
    body = buf.getvalue()
    header = _MAGIC + f"sha256={hashlib.sha256(body).hexdigest()} bytes={len(body)}\n".encode()
    with atomic_path(p) as tmp, open(tmp, "wb") as fh:
        fh.write(header)
        fh.write(body)
        fh.flush()
        os.fsync(fh.fileno())
    return p


def load_checkpoint(path: str | os.PathLike, *, objects: bool = False) -> dict:
    """Load a checkpoint with ``weights_only=True`` (CheckpointError naming the file).

    ``objects``: the state holds the run's own Python objects (``fedsel train --resume``'s
    selector and information model), unpickled in full — as any pickle, only for a run
    folder that this user's own run wrote."""
    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"checkpoint not found: {p}")
    body = _verified_bytes(p)
    try:
        state = torch.load(io.BytesIO(body), map_location="cpu", weights_only=not objects)
    except Exception as exc:  # unpickling errors come in many types
        raise CheckpointError(f"cannot read checkpoint {p}: {str(exc).splitlines()[0]}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {p} does not hold a state dict")
    return state


def _verified_bytes(p: Path) -> bytes:
    """The ``torch.save`` bytes of checkpoint ``p`` after checking its header's checksum."""
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {p}: {exc.strerror or exc}") from exc
    if not raw:
        raise CheckpointError(f"checkpoint {p} is empty (0 bytes); delete it to resume")
    m = _HEADER.match(raw[:200])
    if m is None:
        if raw.startswith(_ZIP):  # written before checkpoints carried a checksum
            return raw
        raise CheckpointError(f"checkpoint {p} has no valid fedsel header; it is damaged")
    body = raw[m.end() :]
    if len(body) != int(m.group(2)):
        raise CheckpointError(
            f"checkpoint {p} holds {len(body)} bytes, its header says {int(m.group(2))}; "
            "it is truncated or damaged"
        )
    if hashlib.sha256(body).hexdigest() != m.group(1).decode():
        raise CheckpointError(f"checkpoint {p} fails its SHA-256 check; it is damaged")
    return body


def latest_checkpoint(folder: str | os.PathLike) -> Path | None:
    """The checkpoint with the highest round in ``folder`` (None when there is none)."""
    d = Path(folder)
    if not d.is_dir():
        return None
    found = [(int(m.group(1)), f) for f in d.iterdir() if (m := _NAME.match(f.name))]
    return max(found)[1] if found else None
