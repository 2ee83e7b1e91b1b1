"""OracleConfig: validation names the field; TOML round trip is exact."""

import pytest

from fl_oracle.errors import ConfigError
from fl_oracle.sim.config import DEFAULT_SAMPLES_PER_CLIENT, OracleConfig


def test_defaults_resolve_digits4_sizes():
    c = OracleConfig()
    assert c.samples_per_client == DEFAULT_SAMPLES_PER_CLIENT
    assert c.client_ids[:2] == ("mnist-0", "mnist-1") and len(c.client_ids) == 20
    assert c.budget("svhn-3") == 1.0


@pytest.mark.parametrize(
    "field, value",
    [
        ("clients_per_domain", 0),
        ("lr", -0.1),
        ("lr", float("nan")),
        ("mu", -1.0),
        ("gamma", -0.5),
        ("batch_size", 0),
        ("model", "resnet"),
        ("data_mode", "internet"),
        ("device", "tpu"),
        ("aggregation", "median"),
        ("k", 21),
        ("seed", -1),
        ("dirichlet_alpha", 0.0),
        ("fisher_samples", 0),
        ("domains", ("mnist", "mnist")),
    ],
)
def test_bad_field_is_named(field, value):
    with pytest.raises(ConfigError, match=field):
        OracleConfig(**{field: value})
    assert issubclass(ConfigError, ValueError)


def test_samples_and_budgets_validated():
    with pytest.raises(ConfigError, match="samples_per_client"):
        OracleConfig(samples_per_client={"svhn": 0})
    with pytest.raises(ConfigError, match="epoch_budgets"):
        OracleConfig(epoch_budgets={"svhn-9": 1.0})
    with pytest.raises(ConfigError, match="epoch_budgets"):
        OracleConfig(epoch_budgets={"svhn": -1.0})
    c = OracleConfig(epoch_budgets={"svhn": 0.5, "svhn-2": 2.0})
    assert (c.budget("svhn-1"), c.budget("svhn-2"), c.budget("mnist-0")) == (0.5, 2.0, 1.0)


def test_toml_round_trip():
    c = OracleConfig(
        seed=3,
        mu=0.01,
        dirichlet_alpha=0.5,
        fisher_samples=None,
        k=7,
        epoch_budgets={"syn-1": 0.25},
        data_root="/tmp/x y",
        adaptive_mu=True,
    )
    back = OracleConfig.from_toml(c.to_toml())
    assert back == c
    assert back.fisher_samples is None and back.k == 7


def test_from_toml_rejects_unknown_and_bad():
    with pytest.raises(ConfigError, match="unknown field"):
        OracleConfig.from_toml("bogus = 1\n")
    with pytest.raises(ConfigError, match="lr"):
        OracleConfig.from_toml("lr = -1.0\n")


@pytest.mark.parametrize(
    ("old", "new", "msg"),
    [
        ('domains = ["mnist", "usps", "svhn", "syn"]', "domains = 5", "domains=5: must be a list"),
        ("lr = 0.05", "lrr = 0.05", "did you mean 'lr'"),
        ("lr = 0.05", 'lr = "x"', "lr='x'"),
    ],
)
def test_an_edited_config_toml_is_one_clear_error(old, new, msg):
    from fl_oracle.errors import ConfigError
    from fl_oracle.sim.config import OracleConfig as _C

    text = _C(seed=0).to_toml()
    assert old in text
    with pytest.raises(ConfigError, match=msg):
        _C.from_toml(text.replace(old, new, 1))
    unset = next(ln for ln in text.splitlines() if ln.startswith("unset = "))
    with pytest.raises(ConfigError, match="unset = 5 must be a list"):
        _C.from_toml(text.replace(unset, "unset = 5", 1))
