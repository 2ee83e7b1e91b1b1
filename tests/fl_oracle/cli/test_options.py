"""The federation flags, declared once (fl_oracle.cli.options.FEDERATION), and --no-progress on
every long-running command."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from fl_oracle.cli import build_app
from fl_oracle.cli.options import FEDERATION, federation_options

LONG_RUNNING = ("oracle", "train", "demo", "study", "sweep", "compare")


def _commands() -> dict[str, typer.core.click.Command]:
    app = typer.main.get_command(build_app())
    out = dict(app.commands)
    out["data preview"] = app.commands["data"].commands["preview"]
    return out


def test_every_command_declares_a_federation_flag_as_the_one_declaration():
    by_flag = {f.flag: f for f in FEDERATION.values()}
    seen: dict[str, set[str]] = {}
    for name, command in _commands().items():
        for p in command.params:
            flag = next((o for o in p.opts if o in by_flag), None)
            if flag is None:
                continue
            seen.setdefault(flag, set()).add(name)
            if (name, flag) != ("flower", "--threads"):  # Flower's nodes: its own help
                assert p.help == by_flag[flag].help, (name, flag)
            assert p.default is None, (name, flag)  # unset: the configuration's default
    assert seen["--data"] == {"oracle", "train", "demo", "study", "flower", "data preview"}
    assert seen["--fisher-samples"] == {"oracle", "train"}
    assert set(seen) == set(by_flag)  # every declared flag is some command's


def test_every_long_running_command_can_draw_no_progress_bar():
    commands = _commands()
    for name in LONG_RUNNING:
        assert any("--no-progress" in p.opts for p in commands[name].params), name


def _probe(**given):
    app = typer.Typer()
    got = {}

    @app.command()
    @federation_options("data", "data_root", "fisher_samples", "samples_per_client")
    def probe(n: int = typer.Option(1, "--n"), federation: dict | None = None) -> None:
        got.update(federation, n=n)

    args = [a for k, v in given.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    result = CliRunner().invoke(app, args)
    return result, got


def test_a_command_receives_the_given_flags_as_configuration_fields():
    result, got = _probe(data="real", data_root="/d", fisher_samples=0, samples_per_client="a=2")
    assert result.exit_code == 0, result.output
    assert got == {"data_mode": "real", "data_root": "/d", "fisher_samples": None,
                   "samples_per_client": {"a": 2}, "n": 1}  # fmt: skip
    result, got = _probe()
    assert result.exit_code == 0 and got == {"n": 1}  # flags left out are absent


def test_a_bad_flag_value_is_refused_by_its_one_check():
    result, _ = _probe(data="cloud")
    assert result.exit_code == 2 and "'cloud' is not one of auto, real, generated" in result.output


def test_an_unknown_flag_or_a_command_without_the_parameter_is_a_programming_error():
    with pytest.raises(ValueError, match="no federation flag 'colour'"):
        federation_options("colour")
    with pytest.raises(TypeError, match="declares no 'federation' parameter"):
        federation_options("data")(lambda n=1: n)


def test_fisher_samples_zero_probes_every_sample():
    from fl_oracle.cli.train import make_config

    assert make_config(0, {"fisher_samples": None}).fisher_samples is None
    assert make_config(0, {}).fisher_samples == 64
