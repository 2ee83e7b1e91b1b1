"""Contradictory or impossible federation settings are refused when the configuration is
built, before any data is loaded."""

from __future__ import annotations

import pytest

from fl_oracle.errors import ConfigError
from fl_oracle.sim.config import MAX_RESOLUTION, OracleConfig


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"resolution": 100_000}, f"at most {MAX_RESOLUTION}"),
        ({"dataset": "/tmp/x", "data_root": "/tmp/y"}, "name two sources"),
        ({"dataset": "/tmp/x", "data_mode": "real"}, "not to a dataset"),
        ({"dataset": "/tmp/x", "data_mode": "generated"}, "not to a dataset"),
    ],
)
def test_contradictory_or_impossible_settings_are_refused(changes, needle):
    with pytest.raises(ValueError, match=needle):
        OracleConfig(seed=0, **changes)


def test_duplicate_domain_sizes_are_refused():
    import typer

    from fl_oracle.cli.options import parse_sizes

    assert parse_sizes("mnist=5,usps=6") == {"mnist": 5, "usps": 6}
    with pytest.raises(typer.BadParameter, match="gives domain 'mnist' twice"):
        parse_sizes("mnist=5,mnist=6")


def test_one_sample_count_serves_every_domain_as_on_the_command_line():
    """`[oracle] samples_per_client = 20` in a study TOML means what `--samples-per-client 20`
    means (it was refused with "must map domain -> int")."""
    from fl_oracle.experiments.study.settings import StudySettings

    cfg = OracleConfig(samples_per_client=20)
    assert cfg.samples_per_client == {d: 20 for d in cfg.domains}
    settings = StudySettings.from_toml("[oracle]\nsamples_per_client = 20\n")  # accepted
    assert OracleConfig(**settings.oracle).samples_per_client == cfg.samples_per_client
    with pytest.raises(ConfigError, match="one int for every domain or map domain -> int"):
        OracleConfig(samples_per_client="20")
    with pytest.raises(ConfigError, match="sample count >= 1"):
        OracleConfig(samples_per_client=0)
