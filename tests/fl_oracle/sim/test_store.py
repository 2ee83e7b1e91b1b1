"""Compact client images (fl_oracle.sim.store) and domains loaded one at a time
(fl_oracle.sim.data.stream): the same values as float copies, memory that does not hold them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.data.api import decode_images, load_digits
from fl_oracle.sim.data.stream import DomainStream
from fl_oracle.sim.partition import build_federation
from fl_oracle.sim.store import BlockWriter, ClientImages, Paired

SMALL = dict(
    seed=1,
    clients_per_domain=3,
    samples_per_client={"mnist": 20, "usps": 12, "svhn": 25, "syn": 10},
    val_per_domain=30,
    local_holdout=5,
    test_per_domain=40,
    data_mode="generated",
)


def _blocks(rng, n=7):
    return [rng.integers(0, 256, (int(rng.integers(1, 9)), 32, 32, 3), dtype=np.uint8)
            for _ in range(n)]  # fmt: skip


@pytest.mark.parametrize("limit", [10**9, 0, 40_000])  # memory, a file, moved to a file midway
def test_blocks_read_back_exactly_wherever_they_are_kept(limit, tmp_path):
    rng = np.random.default_rng(0)
    blocks = _blocks(rng)
    w = BlockWriter(limit=limit, folder=str(tmp_path))
    for b in blocks:
        w.add(b)
    assert len(w) == len(blocks) and w.nbytes == sum(b.nbytes for b in blocks)
    assert w.on_disk == (sum(b.nbytes for b in blocks) > limit)
    for i, b in enumerate(blocks):
        assert np.array_equal(w.block(i), b)
    assert not list(tmp_path.iterdir())  # the file is unlinked: nothing left behind
    with pytest.raises(TypeError, match="uint8"):
        w.add(np.zeros((1, 32, 32, 3), dtype=np.float32))


def test_client_images_decode_bit_for_bit_as_the_whole_split_sliced():
    rng = np.random.default_rng(1)
    split = rng.integers(0, 256, (30, 32, 32, 3), dtype=np.uint8)
    cuts = [np.sort(rng.choice(30, 7, replace=False)) for _ in range(4)]
    whole = decode_images(split)
    w = BlockWriter(limit=0)
    for c in cuts:
        w.add(split[c])
    imgs = ClientImages(w, decode_images)
    assert len(imgs) == 4 and imgs.sizes() == [7, 7, 7, 7]
    for i, c in enumerate(cuts):
        assert torch.equal(imgs[i], whole[torch.as_tensor(c)])
    pooled = imgs.mapped(lambda x: x[:, :, ::2, ::2])
    assert torch.equal(pooled[-1], whole[torch.as_tensor(cuts[-1])][:, :, ::2, ::2])
    pairs = Paired(imgs, [torch.arange(7)] * 4)
    x, y = pairs[2]
    assert torch.equal(x, imgs[2]) and len(pairs) == 4 and len(pairs[1:3]) == 2
    with pytest.raises(IndexError):
        imgs[4]


@pytest.mark.parametrize("memory_mb", ["1000", "0"])
def test_a_compact_federation_holds_the_float_federations_values(monkeypatch, memory_mb, tmp_path):
    """The same partition from the uint8 pixels (in memory or in a file) and from float
    copies: every client's images, hold-out, validation and test set bit for bit."""
    monkeypatch.setenv("FEDSEL_STORE_MEMORY_MB", memory_mb)
    cfg = OracleConfig(**SMALL)
    need = cfg.train_needed()
    kw = dict(mode="generated", n_train=need, n_test=60, seed=0, cache_dir=tmp_path)
    floats = load_digits(cfg.domains, **kw)
    compact = load_digits(cfg.domains, compact=True, **kw)
    assert compact["svhn"]["train"].images.dtype == torch.uint8
    assert compact["svhn"]["train"].image_shape == floats["svhn"]["train"].image_shape
    a = build_federation(cfg, floats, "cpu")
    stream = DomainStream(cfg.domains, lambda d: compact[d], keep_bytes=0)
    b = build_federation(cfg, stream, "cpu")
    assert stream.loads == 4  # each domain asked for once
    assert isinstance(b.xs, ClientImages) and a.client_ids == b.client_ids
    for i in range(len(a.xs)):
        assert torch.equal(a.xs[i], b.xs[i]) and torch.equal(a.ys[i], b.ys[i])
        assert torch.equal(a.local[i][0], b.local[i][0])
        assert torch.equal(a.local[i][1], b.local[i][1])
    for d in cfg.domains:
        for s in ("val", "test"):
            assert torch.equal(getattr(a, s)[d][0], getattr(b, s)[d][0])
    assert b.xs.blocks.on_disk == (memory_mb == "0")
    # the record survives without the pixels
    hollow = stream.hollow("mnist")
    assert hollow["train"].sha256 == compact["mnist"]["train"].sha256
    assert hollow["train"].images.numel() == 0 and len(hollow["train"]) == need["mnist"]


def test_the_stream_keeps_small_domains_and_drops_large_ones():
    calls = []

    def load(d):
        calls.append(d)
        x = torch.zeros((10, 32, 32, 3), dtype=torch.uint8)
        from fl_oracle.sim.data.base import DomainData

        dd = DomainData(d, "train", x, torch.zeros(10, dtype=torch.int64), "generated",
                        encoding="uint8-standardize")  # fmt: skip
        return {"train": dd, "test": dd}

    keep = DomainStream(("a", "b"), load)
    keep["a"], keep["b"], keep["a"]
    assert calls == ["a", "b"]  # small: held, loaded once
    calls.clear()
    drop = DomainStream(("a", "b"), load, keep_bytes=0)
    drop["a"], drop["b"], drop["a"]
    assert calls == ["a", "b", "a"]  # large: one domain at a time
    with pytest.raises(KeyError):
        drop["c"]


def test_an_oracle_on_a_file_store_reports_what_one_in_memory_does(monkeypatch, tmp_path):
    from fl_oracle.sim.oracle import Oracle

    runs = []
    for mb in ("1000", "0"):
        monkeypatch.setenv("FEDSEL_STORE_MEMORY_MB", mb)
        o = Oracle(OracleConfig(**SMALL, threads=1), cache_dir=tmp_path)
        assert o._fed.xs.blocks.on_disk == (mb == "0")
        st = o.round_stats()
        o.step(list(st.client_id[:4]))
        runs.append((st, o._w.clone(), o.provenance))
    assert runs[0][0].equals(runs[1][0])
    assert torch.equal(runs[0][1], runs[1][1]) and runs[0][2] == runs[1][2]
