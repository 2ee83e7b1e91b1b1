"""Privacy checked at the door: a rule that reads individual clients' update vectors is
refused under secure aggregation and under private statistics, in train and study alike,
before any data is loaded (they ran, or were refused only after the data and another entry's
run); a rule that reads no vector passes."""

from __future__ import annotations

import math

import pytest

from helpers.cli import forbid_data
from helpers.cli import run_fedsel as run

VECTOR_RULES = ("divfl:stale", "divfl:updates", "divfl:fresh", "divfl:probe", "clustered:2")
#: the rules Flower refuses first: its messages carry no gradient at the model a node received
NO_FLOWER = ("divfl:stale", "divfl:probe")


@pytest.mark.parametrize("rule", VECTOR_RULES)
@pytest.mark.parametrize(
    ("flags", "why"),
    [(["--secure-aggregation"], "impossible under secure aggregation"),
     (["--dp-epsilon", "1"], "private statistics do not cover")],
)  # fmt: skip
def test_a_vector_rule_is_refused_before_any_data(rule, flags, why, tmp_path, capsys, monkeypatch):
    forbid_data(monkeypatch, "privacy must be checked before the data")
    for argv in (
        ["train", "--selector", rule, "--k", "5", "--rounds", "2", *flags],
        ["study", "--selectors", f"proportional,{rule}", "--rounds", "2", "--seeds", "1", *flags],
        ["flower", "--selector", rule, "--k", "2", "--rounds", "2", "--num-supernodes", "4",
         "--engine", "local", *flags],
    ):  # fmt: skip
        code, _, err = run([*argv, "--out", tmp_path / argv[0]], capsys)
        # Flower carries no gradient at the received model: refused there for that first
        said = "do not carry" if argv[0] == "flower" and rule in NO_FLOWER else why
        assert code == 2 and said in err and rule in err, err
        assert not (tmp_path / argv[0]).exists()


def test_a_rule_reading_no_vector_passes_the_door():
    from fl_oracle.experiments.privacy import StatsPrivacy
    from selection.specs import parse_spec

    private = StatsPrivacy(epsilon=1.0, rounds=2, secure_aggregation=True)
    for ok in ("proportional", "fisher-topk", "clustered:1", "oort:0.9", "qffl:1"):
        private.check_spec(parse_spec(ok))


def _every_rule() -> list[str]:
    """Every registered baseline rule as a spec (its example argument where it takes one)."""
    from selection.baselines.base import baselines

    return [
        f"{name}:{cls.arg_example}" if cls.arg_example else name
        for name, cls in sorted(baselines().items())
    ]


@pytest.mark.parametrize("rule", _every_rule())
@pytest.mark.parametrize("secure", [True, False])
def test_every_driver_decides_a_rule_under_privacy_as_the_loop_does(rule, secure):
    """For every registered rule, Flower refuses exactly what fedsel train and study refuse
    (a rule reading individual update vectors) and serves the rest: under secure aggregation
    on every node's probe pass (no single update evaluated at the server; Flower ran every
    rule as fresh, so it refused them all)."""
    pytest.importorskip("flwr")
    from fl_oracle.experiments.flower.checks import flower_information
    from fl_oracle.experiments.privacy import StatsPrivacy
    from selection.specs import parse_spec

    private = StatsPrivacy(epsilon=math.inf if secure else 1.0, rounds=2, secure_aggregation=secure)
    spec = parse_spec(rule)
    try:
        private.check_spec(spec)  # the loop's door (train, study)
        loop = None
    except ValueError as exc:
        loop = str(exc)
    stats = flower_information(spec, None, n=8, k=2, privacy=private)
    try:
        private.check_spec(spec, stats)  # Flower's door: the model it serves
        flower = None
    except ValueError as exc:
        flower = str(exc)
    assert flower == loop
    if flower is None and secure:
        assert stats == "probe"
