"""The domain registry: the Digits-4 domains as registered specs, and a toy domain added by
registering one spec (what a new module in fl_oracle/sim/data/domains/ does), nothing else."""

from __future__ import annotations

import numpy as np
import pytest

from fl_oracle.sim.data import load_domain
from fl_oracle.sim.data.base import DataError
from fl_oracle.sim.data.domains import (
    _SPECS,
    DomainSpec,
    domain_index,
    domain_spec,
    register_domain,
    registered_domains,
)
from fl_oracle.sim.data.real import expected_files, find_real
from fl_oracle.sim.data.sources import RealSource, arrays_reader, first_file
from selection.schema import DEFAULT_DOMAINS, DEFAULT_SAMPLES_PER_CLIENT


def test_digits4_are_registered_in_the_contracts_order():
    assert registered_domains()[:4] == DEFAULT_DOMAINS
    assert [domain_index(d) for d in DEFAULT_DOMAINS] == [0, 1, 2, 3]  # seeds unchanged
    for d in DEFAULT_DOMAINS:
        assert domain_spec(d).samples_per_client == DEFAULT_SAMPLES_PER_CLIENT[d]
    with pytest.raises(DataError, match="unknown domain 'nope'; expected one of mnist"):
        domain_spec("nope")


# --8<-- [start:toy-domain]
def _toy_images(split: str, n: int, seed: int, start: int):
    x = np.zeros((n, 32, 32, 3), np.uint8)
    y = np.empty(n, np.int64)
    for k in range(n):
        rng = np.random.default_rng([seed, 99, split == "test", start + k])
        y[k] = rng.integers(10)
        x[k, :, : 3 * (1 + y[k])] = 200  # the class is the width of a bar
    return x, y


def _toy_locate(root, split):
    p = first_file(root / "toy" / f"{split}.npz")
    if p is None:
        return None

    def load():
        z = np.load(p)
        return z["x"], z["y"]

    return RealSource("toy", split, p, arrays_reader(load))


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDSEL_CACHE", str(tmp_path / "cache"))  # its stand-ins stay here
    spec = register_domain(
        DomainSpec(
            "toy",
            _toy_locate,
            lambda r, split: f"{r}/toy/{split}.npz",
            _toy_images,
            samples_per_client=40,
        )
    )
    yield spec
    _SPECS.pop("toy", None)


# --8<-- [end:toy-domain]


def test_a_toy_domain_is_one_registered_spec(toy, tmp_path):
    assert "toy" in registered_domains() and domain_index("toy") >= 4
    before = domain_index("toy")
    register_domain(DomainSpec("aaa", _toy_locate, lambda r, split: r, _toy_images))
    try:  # a domain sorted before it does not move its seed streams
        assert domain_index("toy") == before
    finally:
        _SPECS.pop("aaa", None)
    gen = load_domain("toy", "train", mode="generated", n=30, seed=1, standardize=False)
    assert gen.source == "generated" and len(gen) == 30
    assert tuple(gen.images.shape[1:]) == (3, 32, 32)
    # its real files, found by its own locate; the error text names its layout
    assert find_real("toy", "train", tmp_path) is None
    assert expected_files("toy", "train", tmp_path) == f"{tmp_path}/toy/train.npz"
    (tmp_path / "toy").mkdir()
    x, y = _toy_images("train", 25, 5, 0)
    np.savez(tmp_path / "toy" / "train.npz", x=x, y=y)
    real = load_domain("toy", "train", root=tmp_path, mode="auto", standardize=False)
    assert real.source == "real" and len(real) == 25
    assert real.labels.tolist() == y.tolist()


def test_a_toy_domain_trains_in_a_federation(toy):
    from fl_oracle.sim.config import OracleConfig
    from fl_oracle.sim.oracle import Oracle

    cfg = OracleConfig(
        domains=("mnist", "toy"),
        clients_per_domain=2,
        data_mode="generated",
        val_per_domain=20,
        test_per_domain=20,
        fisher_samples=8,
        local_holdout=0,
        threads=1,
    )
    assert cfg.samples_per_client["toy"] == 40  # the spec's default client size
    oracle = Oracle(cfg)
    stats = oracle.round_stats()
    assert set(stats["domain"]) == {"mnist", "toy"}
    assert {"U_mnist", "U_toy"} <= set(stats.columns)


def test_a_generator_must_keep_its_spec(toy):
    bad = register_domain(
        DomainSpec(
            "toy",
            toy.locate,
            toy.expected,
            lambda s, n, seed, start: (np.zeros((n, 28, 28, 1), np.uint8), np.zeros(n, np.int64)),
        )
    )
    assert bad.image_shape == (32, 32, 3)
    with pytest.raises(DataError, match="shape"):
        load_domain("toy", "train", mode="generated", n=5)
