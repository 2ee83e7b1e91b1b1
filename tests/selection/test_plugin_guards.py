"""Nothing taken on trust from plugins: a plugin cannot replace a built-in name, a plugin that
calls sys.exit while loading is one named line (it ended fedsel with its exit code and no
message), an entry point naming neither a module nor a class, or a class of another kind, is
refused, and a rule may not register under an empty name."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import selection.plugins as plugins
from selection.baselines.base import Baseline, baselines, register
from selection.errors import SelectionError
from selection.solvers.registry import SOLVERS
from selection.solvers.registry import register as register_solver


@pytest.fixture()
def fresh_plugins(monkeypatch):
    """load_plugins as if for the first time, over the entry points a test gives."""
    monkeypatch.setattr(plugins, "_LOADED", [])
    monkeypatch.setattr(plugins, "_STATE", {"loading": False, "done": False})

    def use(points: dict[str, list]):
        monkeypatch.setattr(plugins.metadata, "entry_points",
                            lambda group: points.get(group, []))  # fmt: skip

    return use


class _EP:
    def __init__(self, name, load):
        self.name, self._load, self.value = name, load, f"toy:{name}"
        self.dist = types.SimpleNamespace(name="toy-fedsel")

    def load(self):
        return self._load()


def test_a_plugin_cannot_replace_a_built_in():
    from selection.solvers.eps import EpsSolver

    Fake = type("Fake", (EpsSolver,), {"name": "eps", "__module__": "toy_fedsel.formulation"})
    with pytest.raises(TypeError, match="'eps' is built into fedsel"):
        register_solver(Fake)
    assert SOLVERS["eps"] is EpsSolver
    Rule = type("Rule", (Baseline,), {"name": "random", "__module__": "toy_fedsel.rule",
                                      "pick": lambda self, p, rng: np.arange(p.k)})  # fmt: skip
    with pytest.raises(TypeError, match="'random' is built into fedsel"):
        register(Rule)
    assert baselines()["random"] is not Rule


def test_a_rule_needs_a_name():
    Blank = type("Blank", (Baseline,), {"name": " ", "pick": lambda self, p, rng: np.arange(p.k)})
    with pytest.raises(TypeError, match="has no name"):
        register(Blank)


def test_sys_exit_while_loading_is_one_named_line(fresh_plugins):
    def exits():
        raise SystemExit(3)

    fresh_plugins({"fedsel.formulations": [_EP("quitter", exits)]})
    with pytest.raises(SelectionError, match=r"plugin 'quitter' .* called sys.exit\(3\)"):
        plugins.load_plugins()


def test_an_entry_point_of_the_wrong_kind_is_refused(fresh_plugins):
    fresh_plugins({"fedsel.formulations": [_EP("number", lambda: 42)]})
    with pytest.raises(SelectionError, match="names a int, not a module or a class"):
        plugins.load_plugins()


def test_a_class_of_another_kind_is_refused(fresh_plugins):
    class NotARule:
        pass

    fresh_plugins({"fedsel.baselines": [_EP("not-a-rule", lambda: NotARule)]})
    with pytest.raises(SelectionError, match="names NotARule, not a Baseline"):
        plugins.plugin_classes("fedsel.baselines", Baseline)


@pytest.mark.parametrize("command", ["train", "flower"])
def test_a_failing_plugin_is_one_line_in_train_and_flower(
    command, fresh_plugins, monkeypatch, capsys
):
    """The commands whose --help lists the registries (train, flower) loaded plugins before
    the error handler: a failing plugin was a traceback there (one line in methods, solve and
    study already)."""
    import fl_oracle.cli as cli

    def broken():
        raise ImportError("no module named toy_dep")

    fresh_plugins({"fedsel.baselines": [_EP("broken", broken)]})
    monkeypatch.setattr(cli, "_registered", set())
    monkeypatch.setattr(cli.app, "registered_commands", [])
    for module in [m for m in list(sys.modules) if m.startswith("fl_oracle.cli.")]:
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "plugin 'broken'" in err[0]
