"""Log-normal client sizes (``size_sigma``): drawn from the data seed, the mean the domain's
samples_per_client, the shards disjoint and of those sizes, the default unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from fl_oracle.sim.config import OracleConfig

from helpers.oracle import tiny_config, tiny_data


def test_sizes_are_log_normal_around_the_mean_and_fixed_by_the_data_seed():
    cfg = OracleConfig(seed=0, clients_per_domain=400, size_sigma=0.8, data_mode="generated",
                       samples_per_client={"mnist": 50, "usps": 20, "svhn": 50, "syn": 30})  # fmt: skip
    sizes = cfg.client_sizes()
    m = np.array(sizes["mnist"], dtype=float)
    assert len(m) == 400 and m.min() >= 1 and m.max() > 3 * m.min()
    assert m.mean() == pytest.approx(50, rel=0.1)  # exp(σz − σ²/2) has mean 1
    assert np.log(m).std() == pytest.approx(0.8, rel=0.15)
    assert cfg.replace(seed=7).client_sizes() == sizes  # every seed of a study shares them
    assert cfg.replace(data_seed=1).client_sizes() != sizes
    flat = cfg.replace(size_sigma=0.0).client_sizes()
    assert set(flat["usps"]) == {20}
    need = cfg.train_needed()
    assert need["mnist"] == sum(sizes["mnist"]) + 400 * cfg.local_holdout + cfg.val_per_domain
    with pytest.raises(ValueError, match="size_sigma"):
        OracleConfig(seed=0, size_sigma=-1.0)


def test_the_oracle_builds_shards_of_the_drawn_sizes():
    from fl_oracle.sim.oracle import Oracle

    cfg = tiny_config(size_sigma=0.7, local_holdout=0)
    o = Oracle(cfg, data=tiny_data(n_train=200))
    sizes = cfg.client_sizes()
    got = o.clients.groupby("domain", sort=False)["n_samples"].apply(tuple).to_dict()
    assert got == {d: sizes[d] for d in cfg.domains}
    assert len(set(o.clients["n_samples"])) > 2
    flat = Oracle(tiny_config(local_holdout=0), data=tiny_data(n_train=200))
    assert set(flat.clients.loc[flat.clients["domain"] == "mnist", "n_samples"]) == {20}
