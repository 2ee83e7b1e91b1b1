"""One information path (issue 49, 64): both drivers play the same round.

``fl_oracle.experiments.transport.RoundPlay`` is the one place a round is chosen
(``choose_round``) and written (``history_row``), training-only rounds included; the in-process
loop plays it with :func:`~fl_oracle.experiments.transport.play_round` and the Flower strategy
step by step around Flower's own exchange (``configure_train`` / ``aggregate_train``); both
only supply its transport. Read from the syntax tree, as the layer contracts read imports.
"""

from __future__ import annotations

import ast

from helpers import ROOT

#: who may call each step of the round, and why
CALLERS = {
    "choose_round": {"fl_oracle/experiments/transport.py"},
    "history_row": {"fl_oracle/experiments/transport.py"},
    "play_round": {"fl_oracle/experiments/loop.py"},
    "RoundPlay": {
        "fl_oracle/experiments/transport.py",  # play_round
        "fl_oracle/experiments/flower/strategy.py",  # around Flower's exchange
    },
}


def _calls() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {name: set() for name in CALLERS}
    for package in ("selection", "fl_oracle"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                if name in out:
                    out[name].add(str(path.relative_to(ROOT)))
    return out


def test_the_round_is_chosen_and_written_in_one_place():
    calls = _calls()
    for name, allowed in CALLERS.items():
        assert calls[name] == allowed, f"{name} called from {sorted(calls[name] - allowed)}"


def test_both_transports_answer_everything_the_round_asks():
    from fl_oracle.experiments.flower.transport import FlowerTransport
    from fl_oracle.experiments.oracle_transport import OracleTransport
    from fl_oracle.experiments.transport import Transport

    asked = [m for m in vars(Transport) if not m.startswith("_") and callable(vars(Transport)[m])]
    assert len(asked) >= 8
    for transport in (OracleTransport, FlowerTransport):
        missing = [m for m in asked if not callable(getattr(transport, m, None))]
        assert missing == [], f"{transport.__name__} lacks {missing}"
        assert issubclass(transport.error, Exception)
