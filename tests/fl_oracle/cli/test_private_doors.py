"""Privacy checked at the door: a rule that reads individual clients' update vectors is
refused under secure aggregation and under private statistics, in train and study alike,
before any data is loaded (they ran, or were refused only after the data and another entry's
run); a rule that reads no vector passes."""

from __future__ import annotations

import pytest

from helpers.cli import forbid_data
from helpers.cli import run_fedsel as run

VECTOR_RULES = ("divfl:stale", "divfl:fresh", "divfl:probe", "clustered:2")


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
    ):
        code, _, err = run([*argv, "--out", tmp_path / argv[0]], capsys)
        assert code == 2 and why in err and rule in err, err
        assert not (tmp_path / argv[0]).exists()


def test_a_rule_reading_no_vector_passes_the_door():
    from fl_oracle.experiments.privacy import StatsPrivacy
    from selection.specs import parse_spec

    private = StatsPrivacy(epsilon=1.0, rounds=2, secure_aggregation=True)
    for ok in ("proportional", "fisher-topk", "clustered:1", "oort:0.9", "qffl:1"):
        private.check_spec(parse_spec(ok))
