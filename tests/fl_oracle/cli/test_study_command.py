"""``fedsel study`` is a hall: its body parses the flags and calls one function,
:func:`fl_oracle.experiments.study.command.run_study_command` (issue 64, item 5)."""

from __future__ import annotations

import ast
import inspect

from helpers.cli import run_fedsel


def test_the_body_hands_the_parsed_flags_to_one_function(monkeypatch, tmp_path, capsys):
    import fl_oracle.cli.study as cli_study
    import fl_oracle.experiments.study.command as command

    calls = []
    monkeypatch.setattr(command, "run_study_command", lambda *a, **kw: calls.append((a, kw)))
    cfg = tmp_path / "s.toml"
    cfg.write_text("seeds = 2\n")
    code, _, err = run_fedsel(
        ["study", "--config", cfg, "--out", tmp_path / "st", "--rounds", "3", "--k", "4",
         "--selectors", "random,eps:5", "--surrogate", "weighted", "--workers", "2",
         "--no-progress", "--device", "cpu"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    [((flags, out, running, side), kw)] = calls
    assert (flags.config, flags.rounds, flags.k, flags.seeds) == (cfg, 3, 4, None)
    assert (flags.selectors, flags.surrogate) == ("random,eps:5", "weighted")
    assert out == tmp_path / "st"
    assert (running.workers, running.executor, running.progress, running.grow) == (
        2, "local", False, False,
    )  # fmt: skip
    assert side.make_factory is cli_study.study_factory  # tests inject tiny data there
    assert side.command.startswith("fedsel study --config")
    assert kw == {"federation": {"device": "cpu"}, "dataset": None}
    assert not (tmp_path / "st").exists()  # the function decides and writes everything


def test_the_body_decides_nothing_but_the_flags():
    """No branch of the body but the flags' own refusals and --show-defaults."""
    import fl_oracle.cli.study as cli_study

    tree = ast.parse(inspect.getsource(cli_study.study.__wrapped__))
    ifs = [ast.unparse(n.test) for n in ast.walk(tree) if isinstance(n, ast.If)]
    assert ifs == [
        "show_defaults",
        "out is None",
        "executor not in ('local', 'ray')",
        "address is not None and executor != 'ray'",
    ]
    calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id.startswith("run")]  # fmt: skip
    assert calls == ["run_study_command"]
