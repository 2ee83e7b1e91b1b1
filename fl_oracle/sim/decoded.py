"""Decoded client images kept for reuse, within a byte budget shared by the process.

:class:`~fl_oracle.sim.store.ClientImages` decodes (and pools) a client's compact uint8 block
on every access: at N = 20 that decoding was 7-12 % of a study round
(results/benchmarks/study_round.md), repeated for the same clients round after round.
:class:`DecodedCache` wraps such a sequence and keeps the decoded tensors in one
least-recently-used store per process, bounded by :data:`CACHE_BYTES`, so a small federation
decodes each client once and a 1,000-client one keeps what recent rounds touched. The tensors
are the ones a fresh decode returns (decoding is deterministic), handed out read-only by
convention: the simulator never writes into a client's images.
"""

from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import torch

__all__ = ["CACHE_BYTES", "DecodedCache"]

CACHE_BYTES = 512 * 2**20  # decoded images kept per process, over every cached sequence

_STORE: OrderedDict[tuple[int, int], torch.Tensor] = OrderedDict()
_HELD = [0]  # bytes in _STORE
_TOKENS = itertools.count()


class DecodedCache(Sequence):
    """``images[i]`` decoded once and then served from the process's store while it fits.

    Args:
        images: a per-client tensor sequence that decodes on access (``ClientImages``).
        budget: bytes the process-wide store may hold (default :data:`CACHE_BYTES`).
    """

    def __init__(self, images: Sequence, budget: int | None = None) -> None:
        self.images = images
        self.budget = CACHE_BYTES if budget is None else int(budget)
        self._token = next(_TOKENS)  # never reused, unlike id(): no stale entries
        weakref.finalize(self, _purge, self._token)  # a discarded oracle's clients go too

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        key = (self._token, int(i))
        x = _STORE.get(key)
        if x is not None:
            _STORE.move_to_end(key)
            return x
        x = self.images[i]
        size = x.element_size() * x.numel()
        if size <= self.budget:
            _STORE[key] = x
            _HELD[0] += size
            while _HELD[0] > self.budget and _STORE:
                _, old = _STORE.popitem(last=False)
                _HELD[0] -= old.element_size() * old.numel()
        return x

    def __getattr__(self, name: str):  # sizes() and the like: the wrapped sequence's
        if name == "images":
            raise AttributeError(name)
        return getattr(self.images, name)


def _purge(token: int) -> None:
    """Drop the entries of one (discarded) sequence."""
    for key in [k for k in _STORE if k[0] == token]:
        x = _STORE.pop(key)
        _HELD[0] -= x.element_size() * x.numel()


def clear() -> None:
    """Empty the process's store (tests; memory measurements)."""
    _STORE.clear()
    _HELD[0] = 0
