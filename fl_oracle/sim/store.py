"""Client images kept compact and decoded on use: memory that grows with the clients trained.

A federation of 1,000 clients holds about 476,000 training and hold-out images. Kept as
float32 at 3×32×32 they take 5.6 GB (and the pooled copies the model reads another 1.4 GB);
kept as the uint8 pixels they were read or generated as, 1.4 GB; kept in a file and read per
client, what a round touches. :class:`ClientImages` is the per-client image sequence the
oracle trains on: item ``i`` is client ``i``'s float32 tensor, decoded from its uint8 block
(:func:`fl_oracle.sim.data.api.decode_images`, the same operations the loader applies to a
whole split, so the values are bit-for-bit the ones a float copy would hold) and passed
through an optional transform (the model's input pooling). Nothing decoded is kept here; the
oracle keeps decoded clients for reuse within a process budget while the blocks are in memory
(:mod:`fl_oracle.sim.decoded`).

Blocks live in memory while they are small and in an unlinked temporary file beyond
``memory_limit`` bytes (:data:`MEMORY_LIMIT`, ``$FEDSEL_STORE_MEMORY_MB``): the file is read
with ``pread`` per client, so the operating system's page cache holds it, not this process.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Callable, Sequence

import numpy as np
import torch

__all__ = [
    "MEMORY_LIMIT",
    "BlockWriter",
    "ClientImages",
    "Paired",
    "memory_limit",
    "prefer_mmap",
    "release_free_memory",
]

MEMORY_LIMIT = 256 * 2**20  # client blocks beyond this many bytes go to a temporary file


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim``; elsewhere a
    no-op). Many client-sized blocks allocated and freed while a federation is built leave
    the heap fragmented: without this the process keeps several hundred MB it does not use."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes

            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM = None


def prefer_mmap(threshold: int = 2**20) -> None:
    """Serve allocations of ``threshold`` bytes and more by ``mmap`` (glibc ``mallopt``;
    elsewhere a no-op), so that a freed client block goes back to the system at once instead
    of raising the heap's dynamic threshold and staying resident. Set when a federation's
    blocks go to a file (a large federation): its peak memory then stays near what one round
    uses (measured in benchmarks/federation_scale.py)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, int(threshold))  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def memory_limit() -> int:
    """Bytes of client blocks kept in memory: ``$FEDSEL_STORE_MEMORY_MB`` MiB if set (a finite
    number >= 0; anything else an :class:`~selection.env.EnvError` naming it)."""
    from selection.env import env_value

    mb = env_value("FEDSEL_STORE_MEMORY_MB")
    return MEMORY_LIMIT if mb is None else int(mb * 2**20)


class _File:
    """An unlinked temporary file of appended blocks, read back with ``pread``."""

    def __init__(self, folder: str | None = None) -> None:
        fd, path = tempfile.mkstemp(prefix="fedsel-clients-", suffix=".u8", dir=folder)
        os.unlink(path)  # gone with the process, whatever ends it
        self.fd = fd
        self.size = 0
        self._close = weakref.finalize(self, os.close, fd)

    def append(self, block: np.ndarray) -> int:
        data = np.ascontiguousarray(block).tobytes()
        at = self.size
        view = memoryview(data)
        while view:
            view = view[os.pwrite(self.fd, view, at + len(data) - len(view)) :]
        self.size += len(data)
        return at

    def read(self, offset: int, nbytes: int) -> bytes:
        parts, got = [], 0
        while got < nbytes:
            chunk = os.pread(self.fd, nbytes - got, offset + got)
            if not chunk:
                raise OSError("client store: the temporary file ended early")
            parts.append(chunk)
            got += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)


class BlockWriter:
    """Collects uint8 image blocks (n, H, W, C) and keeps them in memory or in a file.

    Blocks are held in memory until their bytes pass ``limit``; from then on every block (the
    ones held so far included) is written to an unlinked temporary file.
    """

    def __init__(self, limit: int | None = None, folder: str | None = None) -> None:
        self.limit = memory_limit() if limit is None else int(limit)
        self.folder = folder
        self._mem: list[np.ndarray] = []
        self._file: _File | None = None
        self._where: list[tuple[int, tuple[int, ...]]] = []
        self._bytes = 0

    def add(self, block: np.ndarray) -> int:
        """Store one block; returns its index."""
        block = np.asarray(block)
        if block.dtype != np.uint8:
            raise TypeError(f"client blocks are uint8, got {block.dtype}")
        self._bytes += block.nbytes
        if self._file is None and self._bytes > self.limit:
            prefer_mmap()
            self._file = _File(self.folder)
            self._where = [(self._file.append(b), b.shape) for b in self._mem]
            self._mem = []
        if self._file is not None:
            self._where.append((self._file.append(block), block.shape))
        else:
            self._mem.append(np.ascontiguousarray(block))
        return len(self) - 1

    def __len__(self) -> int:
        return len(self._where) if self._file is not None else len(self._mem)

    @property
    def on_disk(self) -> bool:
        return self._file is not None

    @property
    def nbytes(self) -> int:
        return self._bytes

    def shape(self, i: int) -> tuple[int, ...]:
        """Shape of block ``i``, without reading it."""
        return self._where[i][1] if self._file is not None else self._mem[i].shape

    def block(self, i: int) -> np.ndarray:
        if self._file is None:
            return self._mem[i]
        offset, shape = self._where[i]
        n = int(np.prod(shape))
        return np.frombuffer(self._file.read(offset, n), dtype=np.uint8).reshape(shape)


class ClientImages(Sequence):
    """Per-client float32 images decoded from compact blocks on every access.

    Args:
        blocks: the :class:`BlockWriter` holding the uint8 blocks.
        decode: uint8 block (n, H, W, C) -> float32 tensor (n, C, H, W) on the device.
        transform: applied to each decoded tensor (e.g. the model's input pooling).
    """

    def __init__(
        self,
        blocks: BlockWriter,
        decode: Callable[[np.ndarray], torch.Tensor],
        transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        self.blocks = blocks
        self.decode = decode
        self.transform = transform

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        x = self.decode(self.blocks.block(i))
        return x if self.transform is None else self.transform(x)

    def mapped(self, transform: Callable[[torch.Tensor], torch.Tensor]) -> ClientImages:
        """The same blocks with ``transform`` applied after the present one."""
        inner = self.transform
        composed = transform if inner is None else (lambda x: transform(inner(x)))
        return ClientImages(self.blocks, self.decode, composed)

    def sizes(self) -> list[int]:
        """Images per client, without decoding."""
        return [self.blocks.shape(i)[0] for i in range(len(self.blocks))]


class Paired(Sequence):
    """Per-client ``(images, labels)`` pairs from an image sequence and a label sequence;
    ``ys`` is read without touching the images."""

    def __init__(self, xs: Sequence, ys: Sequence) -> None:
        if len(xs) != len(ys):
            raise ValueError(f"{len(xs)} image sets for {len(ys)} label sets")
        self.xs, self.ys = xs, ys

    def __len__(self) -> int:
        return len(self.ys)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self.xs[i], self.ys[i]
