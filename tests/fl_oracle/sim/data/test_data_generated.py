"""Generated stand-ins: determinism, shapes, labels, cache, fonts."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch

from fl_oracle.sim.data import DOMAINS, DataError, load_digits, load_domain
from fl_oracle.sim.data.cache import GENERATOR_VERSION
from fl_oracle.sim.data.fonts import PILLOW_DEFAULT, digit_fonts, font_renders_digits
from fl_oracle.sim.data.gen_handwritten import source_pools
from fl_oracle.sim.data.generate import generate

_TTF = Path(matplotlib.get_data_path()) / "fonts" / "ttf"


@pytest.mark.parametrize("domain", DOMAINS)
def test_deterministic_per_seed_and_prefix_stable(domain):
    a, ya = generate(domain, "train", 12, seed=3)
    b, yb = generate(domain, "train", 12, seed=3)
    c, _ = generate(domain, "train", 12, seed=4)
    assert a.shape == (12, 32, 32, 3) and a.dtype == np.uint8 and ya.dtype == np.int64
    assert np.array_equal(a, b) and np.array_equal(ya, yb)
    assert not np.array_equal(a, c)
    # image i depends only on (seed, domain, split, i): a later window equals a slice
    tail, ytail = generate(domain, "train", 4, seed=3, start=8)
    assert np.array_equal(tail, a[8:]) and np.array_equal(ytail, ya[8:])
    # train and test streams differ
    t, _ = generate(domain, "test", 12, seed=3)
    assert not np.array_equal(a, t)


def test_load_digits_shapes_labels_and_standardization(tmp_path):
    data = load_digits(
        mode="generated",  # auto would serve the bundled genuine MNIST digits for mnist
        n_train=120,
        n_test={"mnist": 30, "usps": 10, "svhn": 10, "syn": 10},
        cache_dir=tmp_path,
        seed=1,
    )
    assert list(data) == list(DOMAINS)
    for name, splits in data.items():
        tr = splits["train"]
        assert tr.name == name and tr.split == "train" and tr.source == "generated"
        assert tr.images.shape == (120, 3, 32, 32) and tr.images.dtype == torch.float32
        assert tr.labels.dtype == torch.int64
        assert set(tr.labels.tolist()) == set(range(10))  # every label in 120 images
        flat = tr.images.reshape(120, -1)
        assert torch.allclose(flat.mean(1), torch.zeros(120), atol=1e-4)
        assert torch.allclose(flat.std(1, unbiased=False), torch.ones(120), atol=1e-3)
    assert len(data["mnist"]["test"]) == 30 and len(data["usps"]["test"]) == 10
    raw = load_domain("svhn", "train", n=120, seed=1, cache_dir=tmp_path, standardize=False)
    assert 0.0 <= float(raw.images.min()) and float(raw.images.max()) <= 1.0
    # the grey domains replicate one channel, the colour domains do not
    assert torch.equal(data["mnist"]["train"].images[:, 0], data["mnist"]["train"].images[:, 1])
    assert not torch.equal(data["syn"]["train"].images[:, 0], data["syn"]["train"].images[:, 2])


def test_cache_written_atomically_and_reused_as_prefix(tmp_path):
    d1 = load_domain("usps", "train", n=40, seed=2, cache_dir=tmp_path, standardize=False)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"generated-standin-v{GENERATOR_VERSION}-usps-train-n40-s2.npz"]
    d2 = load_domain("usps", "train", n=25, seed=2, cache_dir=tmp_path, standardize=False)
    assert torch.equal(d2.images, d1.images[:25])
    d3 = load_domain("usps", "train", n=60, seed=2, cache_dir=tmp_path, standardize=False)
    assert torch.equal(d3.images[:40], d1.images)
    fresh = load_domain(
        "usps", "train", n=60, seed=2, cache_dir=tmp_path / "other", standardize=False
    )
    assert torch.equal(fresh.images, d3.images)  # extending the cache == generating at once
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        f"generated-standin-v{GENERATOR_VERSION}-usps-train-n60-s2.npz"
    ]


def test_cache_location_from_environment(tmp_path, monkeypatch):
    from fl_oracle.sim.data.cache import cache_root

    monkeypatch.setenv("FEDSEL_CACHE", str(tmp_path / "a"))
    assert cache_root() == tmp_path / "a"
    monkeypatch.delenv("FEDSEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "fedsel"
    assert cache_root(tmp_path / "b") == tmp_path / "b"


def test_handwritten_pools_disjoint():
    seen = []
    for domain in ("mnist", "usps"):
        for split in ("train", "test"):
            pools = source_pools(domain, split)
            assert all(len(p) > 0 for p in pools)
            seen.append(set(np.concatenate(pools).tolist()))
    for i in range(4):
        for j in range(i + 1, 4):
            assert not seen[i] & seen[j]
    assert sum(len(s) for s in seen) == 1797


def test_font_filter_rejects_symbol_fonts_and_accepts_dejavu():
    assert font_renders_digits(str(_TTF / "DejaVuSans.ttf"))
    assert font_renders_digits(PILLOW_DEFAULT)
    assert not font_renders_digits(str(_TTF / "cmsy10.ttf"))  # ten distinct glyphs, not digits
    assert not font_renders_digits(str(_TTF / "cmex10.ttf"))
    assert not font_renders_digits(str(_TTF / "LastResortHE-Regular.ttf"))  # one placeholder
    assert not font_renders_digits(str(_TTF / "STIXSizOneSymReg.ttf"))  # no digits at all
    fonts = digit_fonts()
    assert fonts[0] == PILLOW_DEFAULT and len(fonts) >= 10
    assert not any(Path(f).name.startswith(("cmsy", "cmex", "STIXSiz")) for f in fonts[1:])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "cifar", "split": "train"}, "unknown domain 'cifar'"),
        ({"name": "mnist", "split": "val"}, "unknown split 'val'"),
        ({"name": "mnist", "split": "train", "mode": "download"}, "unknown data mode"),
        ({"name": "mnist", "split": "train", "n": 0}, "n must be a positive integer"),
        ({"name": "mnist", "split": "train", "seed": -1}, "seed must be"),
    ],
)
def test_bad_arguments_raise_data_error(kwargs, match):
    with pytest.raises(DataError, match=match):
        load_domain(**{"mode": "generated", **kwargs})


def test_bad_size_mapping():
    with pytest.raises(DataError, match="n_train: unknown domain 'cifar'"):
        load_digits(n_train={"cifar": 3}, mode="generated")


def test_parallel_generation_equals_serial(monkeypatch):
    serial = generate("syn", "test", 520, seed=9)  # 520 images: three chunks
    monkeypatch.setenv("FEDSEL_DATA_WORKERS", "2")
    parallel = generate("syn", "test", 520, seed=9)
    assert np.array_equal(serial[0], parallel[0]) and np.array_equal(serial[1], parallel[1])
    monkeypatch.setenv("FEDSEL_DATA_WORKERS", "zero")
    with pytest.raises(DataError, match="FEDSEL_DATA_WORKERS='zero' is not an integer"):
        generate("syn", "test", 520, seed=9)
