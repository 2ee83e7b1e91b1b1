"""A study folder keeps its history compressed (``history.parquet``): run files come back from
it byte for byte, and a study continued from the packed form alone ends exactly where the
whole folder does."""

from __future__ import annotations

import filecmp
import shutil

import numpy as np
import pandas as pd
import pytest

from fl_oracle.experiments.study.assembly import finish_study
from fl_oracle.experiments.study.runs import (
    PACKED,
    load_history,
    read_history,
    restore_runs,
    run_path,
    run_study,
)
from fl_oracle.experiments.study.settings import StudySettings
from selection.selectors import make_selector

from helpers import fake_oracle as fake

# a rule, a formulation with predictions, a long-term one (its queue columns: runs of one
# study whose files hold different columns)
ENTRIES = ("proportional", "random", "eps:5@stale", "eps-lt:5@stale")


def _oracle(seed: int):
    return fake.FakeOracle(seed, clients_per_domain=2)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    s = StudySettings(seeds=2, rounds=3, k=3, selectors=ENTRIES, bootstrap=100, target_worst=50.0)
    run_study(s, out, make_oracle=_oracle, make_selector=make_selector)
    finish_study(s, out)
    return s, out


def test_run_files_of_one_study_differ_in_columns(study):
    s, out = study
    cols = {tuple(pd.read_csv(run_path(out, e, 0), nrows=0).columns) for e in ENTRIES}
    assert len(cols) > 1  # the case the packed form must keep apart


def test_runs_come_back_byte_for_byte(study, tmp_path):
    s, out = study
    shutil.copy(out / "study.toml", tmp_path / "study.toml")
    shutil.copy(out / PACKED, tmp_path / PACKED)
    done = restore_runs(s, tmp_path)
    assert sorted(done) == sorted((e, seed) for e in ENTRIES for seed in (0, 1))
    for e, seed in done:
        assert filecmp.cmp(run_path(tmp_path, e, seed), run_path(out, e, seed), shallow=False)
    pd.testing.assert_frame_equal(load_history(s, tmp_path), load_history(s, out))
    assert restore_runs(s, tmp_path) == []  # nothing left to restore


def test_packed_history_is_the_history(study):
    s, out = study
    packed = read_history(out)
    csv = pd.read_csv(out / "history.csv")
    assert list(packed.columns) == list(csv.columns) and len(packed) == len(csv)
    for c in ("acc_worst", "acc_avg", "cost_train_samples"):
        np.testing.assert_array_equal(packed[c].to_numpy(float), csv[c].to_numpy(float))


def test_a_study_grows_from_its_packed_form_alone(study, tmp_path):
    """The committed form (study.toml + history.parquet, no run files) continues to the same
    history as the whole folder when a seed is added."""
    s, out = study
    whole = tmp_path / "whole"
    shutil.copytree(out, whole)
    packed = tmp_path / "packed"
    packed.mkdir()
    for name in ("study.toml", PACKED):
        shutil.copy(out / name, packed / name)
    more = StudySettings.from_toml(s.to_toml(), seeds=3)
    a = run_study(more, whole, make_oracle=_oracle, make_selector=make_selector, grow=True)
    b = run_study(more, packed, make_oracle=_oracle, make_selector=make_selector, grow=True)
    timing = [c for c in a.columns if c.endswith("_seconds")]  # the machine, not the answer
    pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing))
    assert len(a) == 3 * len(ENTRIES) * s.rounds


def test_a_damaged_packed_history_is_named(study, tmp_path):
    s, _ = study
    (tmp_path / PACKED).write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="history.parquet: unreadable"):
        restore_runs(s, tmp_path)
