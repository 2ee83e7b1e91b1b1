"""Checkpoints carry a SHA-256 header: damaged, truncated and empty files are refused."""

from __future__ import annotations

import io

import pytest
import torch

from fl_oracle.errors import CheckpointError
from fl_oracle.sim.checkpoint import load_checkpoint, save_checkpoint

STATE = {"oracle": {"round": 3, "w": torch.arange(1000, dtype=torch.float32)}}


def test_round_trip(tmp_path):
    p = save_checkpoint(STATE, tmp_path / "round_00003.pt")
    assert p.read_bytes().startswith(b"fedsel-checkpoint 1 sha256=")
    back = load_checkpoint(p)
    assert back["oracle"]["round"] == 3 and torch.equal(back["oracle"]["w"], STATE["oracle"]["w"])


@pytest.mark.parametrize("where", [0.5, 0.9, -1])
def test_a_flipped_byte_is_refused(tmp_path, where):
    p = save_checkpoint(STATE, tmp_path / "round_00003.pt")
    raw = bytearray(p.read_bytes())
    i = int(len(raw) * where) if where > 0 else len(raw) - 1
    raw[i] ^= 0x01
    p.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="SHA-256|header"):
        load_checkpoint(p)


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda raw: b"", "is empty"),
        (lambda raw: raw[: len(raw) // 2], "truncated"),
        (lambda raw: raw[:40], "no valid fedsel header"),
        (lambda raw: b"\x00" * 100, "no valid fedsel header"),
        (lambda raw: raw + b"extra", "header says"),
    ],
)
def test_empty_truncated_and_garbage_files_are_refused(tmp_path, damage, match):
    p = save_checkpoint(STATE, tmp_path / "round_00003.pt")
    p.write_bytes(damage(p.read_bytes()))
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(p)


def test_checkpoints_without_header_are_still_read(tmp_path):
    buf = io.BytesIO()
    torch.save(STATE, buf)
    p = tmp_path / "round_00003.pt"
    p.write_bytes(buf.getvalue())
    assert load_checkpoint(p)["oracle"]["round"] == 3
