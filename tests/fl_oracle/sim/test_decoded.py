"""Decoded client images kept for reuse within a process budget (fl_oracle.sim.decoded)."""

from __future__ import annotations

import gc

import torch

from fl_oracle.sim import decoded
from fl_oracle.sim.decoded import DecodedCache


class _Decoding:
    """A sequence that decodes on every access, counting its decodes."""

    def __init__(self, n: int, size: int) -> None:
        self.n, self.size, self.decodes = n, size, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        self.decodes += 1
        g = torch.Generator().manual_seed(i)
        return torch.rand(self.size, generator=g)

    def sizes(self) -> list[int]:
        return [self.size] * self.n


def test_each_client_is_decoded_once_and_served_equal():
    decoded.clear()
    src = _Decoding(5, 100)
    cache = DecodedCache(src)
    first = [cache[i] for i in range(5)]
    again = [cache[i] for i in range(5)]
    assert src.decodes == 5
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert all(torch.equal(cache[i], src[i]) for i in range(5))
    assert cache.sizes() == [100] * 5 and len(cache) == 5 and cache[-1].shape == (100,)


def test_the_budget_evicts_the_least_recently_used():
    decoded.clear()
    src = _Decoding(4, 100)  # 400 bytes a client
    cache = DecodedCache(src, budget=900)  # two fit
    cache[0], cache[1], cache[0], cache[2]  # 1 is the least recent when 2 comes
    n = src.decodes
    cache[0]
    assert src.decodes == n  # kept
    cache[1]
    assert src.decodes == n + 1  # evicted, decoded again
    assert decoded._HELD[0] <= 900
    none = DecodedCache(_Decoding(2, 100), budget=0)  # a budget of 0 keeps nothing
    none[0], none[0]
    assert none.images.decodes == 2


def test_a_discarded_sequence_leaves_nothing_behind():
    decoded.clear()
    cache = DecodedCache(_Decoding(3, 100))
    [cache[i] for i in range(3)]
    assert decoded._HELD[0] == 3 * 400
    del cache
    gc.collect()
    assert decoded._HELD[0] == 0 and not decoded._STORE
