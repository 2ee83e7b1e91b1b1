"""The federation's domains loaded one at a time: a large federation never holds them all.

:class:`DomainStream` is the ``{domain: {"train": DomainData, "test": DomainData}}`` mapping
the partition reads, loading a domain when it is first asked for. While the domains loaded
so far fit ``keep_bytes`` they are all kept (a small federation loads each once, as a dict
would); beyond it only the last one is, so a 1,000-client federation's 1.4 GB of pixels pass
through memory one domain at a time. What the run's record needs of every domain (source,
path, version, size, content hash) is kept apart from the pixels (:meth:`hollow`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence

import torch

from fl_oracle.sim.store import release_free_memory

from .base import DomainData

__all__ = ["DomainStream", "KEEP_BYTES"]

KEEP_BYTES = 256 * 2**20  # domains held at once while their pixels fit this


class DomainStream(Mapping):
    """Domains loaded on access by ``load(domain) -> {"train": DomainData, "test": ...}``.

    Attributes:
        n_classes: the classes of every domain (the partition's label range), stated
            up front so that no domain is loaded to learn it.
        streamed: True (the partition asks each domain once, in order).
    """

    streamed = True

    def __init__(
        self,
        domains: Sequence[str],
        load: Callable[[str], dict[str, DomainData]],
        *,
        n_classes: int = 10,
        keep_bytes: int = KEEP_BYTES,
    ) -> None:
        self.domains = tuple(domains)
        self.n_classes = int(n_classes)
        self._load = load
        self._keep = int(keep_bytes)
        self._held: dict[str, dict[str, DomainData]] = {}
        self._hollow: dict[str, dict[str, DomainData]] = {}
        self.loads = 0  # domains loaded so far (a domain asked for again may load again)

    def __getitem__(self, d: str) -> dict[str, DomainData]:
        if d not in self.domains:
            raise KeyError(d)
        if d in self._held:
            return self._held[d]
        self.release()  # before the next loads: pixels pass one domain at a time
        splits = self._load(d)
        self.loads += 1
        self._hollow[d] = {s: _hollow(v) for s, v in splits.items()}
        self._held[d] = splits
        return splits

    def release(self) -> None:
        """Drop the held pixels if they pass ``keep_bytes`` (the partition is done with them;
        a later access loads the domain again)."""
        if self._held_bytes() > self._keep:
            self._held = {}
            release_free_memory()

    def _held_bytes(self) -> int:
        return sum(_nbytes(v) for sp in self._held.values() for v in sp.values())

    def __contains__(self, d: object) -> bool:  # answered without loading
        return d in self.domains

    def __iter__(self) -> Iterator[str]:
        return iter(self.domains)

    def __len__(self) -> int:
        return len(self.domains)

    def hollow(self, d: str) -> dict[str, DomainData]:
        """Domain ``d``'s splits without their pixels (labels and record fields kept)."""
        if d not in self._hollow:
            self[d]
        return self._hollow[d]


def _nbytes(split: DomainData) -> int:
    return int(split.images.numel() * split.images.element_size())


def _hollow(split: DomainData) -> DomainData:
    return dataclasses.replace(split, images=torch.empty((0,), dtype=split.images.dtype))
