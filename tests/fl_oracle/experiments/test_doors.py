"""Narrow doors (issue 64): the run's entry points take few parameters, and the round probes
no selector for what it can do."""

from __future__ import annotations

import inspect

from fl_oracle.experiments.flower.strategy import FedselStrategy
from fl_oracle.experiments.loop import run_training


def _count(fn) -> int:
    return len([p for p in inspect.signature(fn).parameters.values() if p.name != "self"])


def test_the_strategy_takes_at_most_ten_parameters_as_flowers_fedavg():
    assert _count(FedselStrategy.__init__) <= 10


def test_flowers_own_fedprox_options_pass_through_and_ks_are_refused():
    import pytest

    s = FedselStrategy("maxmin:2", k=3, fraction_evaluate=0.25, min_evaluate_nodes=2,
                       proximal_mu=0.1, weighted_by_key="n")  # fmt: skip
    assert (s.fraction_evaluate, s.min_evaluate_nodes, s.proximal_mu) == (0.25, 2, 0.1)
    assert (s.min_train_nodes, s.min_available_nodes, s.weighted_by_key) == (3, 3, "n")
    with pytest.raises(ValueError, match="min_train_nodes is K's"):
        FedselStrategy("maxmin:2", k=3, min_train_nodes=5)


def test_run_training_is_a_door_of_at_most_eight_parameters():
    assert _count(run_training) <= 8


def test_the_round_probes_no_selector_for_what_it_can_do():
    """A plain callable is wrapped once (``as_selector``): the run's code reads a selector's
    attributes and never asks getattr/hasattr whether it has them (issue 64: at most 3)."""
    import ast

    from helpers import ROOT

    probes = []
    for path in sorted((ROOT / "fl_oracle" / "experiments").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and "selector" in ast.unparse(node.args[0])
            ):
                probes.append(f"{path.name}:{node.lineno}")
    assert len(probes) <= 3, probes


def test_the_exchange_flower_sends_waits_as_long_as_the_strategys_own():
    from flwr.serverapp.strategy import FedProx

    from fl_oracle.experiments.flower.server_side import NodePolicy

    seen = {}

    def fake_start(self, *args, **kwargs):
        seen.update(kwargs)
        from flwr.serverapp.strategy import Result

        return Result()

    import pytest

    mp = pytest.MonkeyPatch()
    mp.setattr(FedProx, "start", fake_start)
    try:
        FedselStrategy("maxmin:2", k=2, nodes=NodePolicy(timeout=7.0)).start(grid=None)
        assert seen["timeout"] == 7.0
        FedselStrategy("maxmin:2", k=2).start(grid=None, timeout=3.0)
        assert seen["timeout"] == 3.0
    finally:
        mp.undo()
