"""Impossible federations are refused by arithmetic, before any data is loaded or generated."""

from __future__ import annotations

import time

import pytest

from fl_oracle.errors import ConfigError
from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.loading import check_fits, load_federation_data


def test_the_bundled_digits_train_split_holds_what_the_check_assumes():
    from fl_oracle.sim.data.bundled import TRAIN_IMAGES, _load

    x, y = _load("train")
    assert len(y) == TRAIN_IMAGES == 4000


def test_mnist_clients_beyond_the_bundled_digits_are_refused_before_loading(monkeypatch):
    """3,600 clients cannot have one of the 3,500 bundled images left beside validation: the
    federation is refused, by arithmetic, before anything is loaded."""
    import fl_oracle.sim.data as data

    def no_load(*a, **k):  # any load would be the defect
        raise AssertionError("data were loaded before the size check")

    monkeypatch.setattr(data, "load_digits", no_load)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="training images .* hold 4000"):
        load_federation_data(
            OracleConfig(seed=0, clients_per_domain=3600, samples_per_client=dict.fromkeys(
                ("mnist", "usps", "svhn", "syn"), 1), local_holdout=0)
        )  # fmt: skip
    assert time.perf_counter() - t0 < 5.0  # arithmetic, not a load (generous on a busy CI)


def test_250_mnist_clients_share_the_bundled_digits_and_their_hold_outs():
    """Cross-device: 250 MNIST clients share the 3,500 images beside validation, the shards
    and the hold-outs in the proportion 600 : 100 (12 and 2 a client), said in the note."""
    from fl_oracle.sim.partition import share_split, shared_request

    cfg = OracleConfig(seed=0, clients_per_domain=250)
    shared, notes = share_split(cfg, {"mnist": 4000})
    assert shared.samples_per_client["mnist"] == 12
    assert notes["mnist"].endswith("12 samples a client instead of 600, 2 local hold-out "
                                   "images instead of 100")  # fmt: skip
    # the shards and validation fit; the loader asks for the whole split, no more
    assert 250 * 12 + 500 <= 4000
    assert shared_request(shared, {"mnist": 4000})["mnist"] == 4000
    assert shared_request(shared, {"mnist": 4000})["svhn"] == shared.train_needed()["svhn"]


def test_many_mnist_clients_share_the_bundled_digits(monkeypatch):
    """25 MNIST clients of 600 need 18,000 images; the bundled 4,000 are shared instead: each
    client gets 40 (4,000 - 25 x 100 hold-outs - 500 validation, over 25), disjoint, and the
    run's record says so."""
    from types import SimpleNamespace

    import numpy as np

    import fl_oracle.sim.data as data
    from fl_oracle.sim.partition import build_federation, share_split

    cfg = OracleConfig(seed=0, clients_per_domain=25)
    shared, notes = share_split(cfg, {"mnist": 4000})
    assert shared.samples_per_client["mnist"] == 40 and shared.train_needed()["mnist"] == 4000
    assert notes == {"mnist": "25 mnist clients share its 4,000 training images: "
                              "40 samples a client instead of 600"}  # fmt: skip
    assert share_split(cfg, {"mnist": 20_000}) == (cfg, {})  # enough: nothing shared
    lognormal, _ = share_split(cfg.replace(size_sigma=0.8), {"mnist": 4000})
    assert lognormal.train_needed()["mnist"] <= 4000
    # the loader asks for the shared federation's images only
    asked = {}

    def fake_load(domains, **kw):
        asked.update(kw["n_train"])
        raise RuntimeError("stop")

    monkeypatch.setattr(data, "load_digits", fake_load)
    with pytest.raises(RuntimeError, match="stop"):
        load_federation_data(cfg)["mnist"]  # domains load when the partition asks
    assert asked["mnist"] == 4000
    # the partition: every MNIST client's 40 images disjoint from the others' and validation
    rng = np.random.default_rng(0)

    def split(n, source):
        return SimpleNamespace(images=rng.random((n, 3, 32, 32), dtype=np.float32),
                               labels=rng.integers(0, 10, n), source=source)  # fmt: skip

    small = cfg.replace(domains=("mnist", "usps"), samples_per_client={"mnist": 600, "usps": 4})
    fed = build_federation(
        small,
        {
            "mnist": {"train": split(4000, "bundled"), "test": split(20, "bundled")},
            "usps": {
                "train": split(small.train_needed()["usps"], "generated"),
                "test": split(20, "generated"),
            },
        },  # fmt: skip
        "cpu",
    )
    mnist = [i for i, d in enumerate(fed.client_domain) if d == "mnist"]
    assert len(mnist) == 25 and all(fed.n_samples[i] == 40 for i in mnist)
    assert set(fed.shared) == {"mnist"} and "share its 4,000" in fed.shared["mnist"]
    import torch

    rows = torch.cat([fed.xs[i].reshape(len(fed.xs[i]), -1) for i in mnist])
    assert len(torch.unique(rows, dim=0)) == len(rows) == 1000  # no image in two clients


def test_a_federation_beyond_the_machines_memory_is_refused():
    cfg = OracleConfig(seed=0, clients_per_domain=1_000_000, data_mode="generated")
    assert cfg.federation_bytes() > 5 * 10**12  # uint8 pixels: 3,072 bytes an image
    with pytest.raises(ConfigError, match="more than this machine's 1.0 GiB"):
        check_fits(cfg, memory=2**30)
    check_fits(OracleConfig(seed=0), memory=2**30)  # the default fits in 1 GiB
    sizes = {d: 10**12 for d in ("mnist", "usps", "svhn", "syn")}
    big = OracleConfig(seed=0, samples_per_client=sizes, data_mode="generated")
    with pytest.raises(ConfigError, match="GiB"):
        check_fits(big)
