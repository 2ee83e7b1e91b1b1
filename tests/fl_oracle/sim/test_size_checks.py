"""Impossible federations are refused by arithmetic, before any data is loaded or generated."""

from __future__ import annotations

import time

import pytest

from fl_oracle.errors import ConfigError
from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.oracle import check_fits, load_federation_data


def test_the_bundled_digits_train_split_holds_what_the_check_assumes():
    from fl_oracle.sim.data.bundled import TRAIN_IMAGES, _load

    x, y = _load("train")
    assert len(y) == TRAIN_IMAGES == 4000


def test_too_many_mnist_clients_are_refused_before_loading(monkeypatch):
    import fl_oracle.sim.data as data

    def no_load(*a, **k):  # any load would be the defect
        raise AssertionError("data were loaded before the size check")

    monkeypatch.setattr(data, "load_digits", no_load)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="needs 18000 training images .* hold 4000"):
        load_federation_data(OracleConfig(seed=0, clients_per_domain=25))
    assert time.perf_counter() - t0 < 5.0  # arithmetic, not a load (generous on a busy CI)


def test_a_federation_beyond_the_machines_memory_is_refused():
    cfg = OracleConfig(seed=0, clients_per_domain=1_000_000, data_mode="generated")
    assert cfg.federation_bytes() > 10**13
    with pytest.raises(ConfigError, match="more than this machine's 1.0 GiB"):
        check_fits(cfg, memory=2**30)
    check_fits(OracleConfig(seed=0), memory=2**30)  # the default fits in 1 GiB
    sizes = {d: 10**12 for d in ("mnist", "usps", "svhn", "syn")}
    big = OracleConfig(seed=0, samples_per_client=sizes, data_mode="generated")
    with pytest.raises(ConfigError, match="GiB"):
        check_fits(big)
