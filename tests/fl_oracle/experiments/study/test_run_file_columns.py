"""Every recorded column of a study's run files is validated on read-back (issue 53): the cost
columns finite, >= 0 and whole (they count samples and bytes), K a whole number >= 1, the
seconds finite and >= 0; a damaged file is never counted as finished: a study re-runs it, and
reading the study's history refuses it in one line naming the file, the column and the row."""

from __future__ import annotations

import pandas as pd
import pytest

from fl_oracle.experiments.cost import COST_COLUMNS
from fl_oracle.experiments.study.runs import load_history, run_file_problem, run_path, run_study
from fl_oracle.experiments.study.settings import StudySettings
from selection.selectors import make_selector

from helpers import fake_oracle as fake

COUNTS = [*COST_COLUMNS, "k"]
SECONDS = ["solve_seconds", "round_seconds", "round_cpu_seconds"]
NOT_A_NUMBER = ["abc", "nan", "inf", "-inf", "1e400", "12 B"]
GOOD = pd.DataFrame(
    {"round": range(3), "entry": "eps:5", "seed": 1, "k": 3, "acc_avg": 50.0,
     "acc_worst": 40.0, "acc_gap": 5.0, "selected": "a;b;c", "solve_seconds": 0.01,
     "round_seconds": 1.5, "round_cpu_seconds": 1.2, "cost_train_samples": 640,
     "cost_probe_samples": 160, "cost_bytes_up": 772720, "cost_bytes_down": 3085600}
)  # fmt: skip


def _problem(tmp_path, col: str, value: str, row: int = 1) -> str:
    df = GOOD.copy().astype(object)
    df.loc[row, col] = value
    p = tmp_path / "seed01.csv"
    df.to_csv(p, index=False)
    return run_file_problem(p, "eps:5", 1, 3)


def test_the_clean_file_and_one_without_recorded_costs_are_finished(tmp_path):
    p = tmp_path / "seed01.csv"
    GOOD.to_csv(p, index=False)
    assert run_file_problem(p, "eps:5", 1, 3) == ""
    # a driver that cannot count the costs writes NaN: empty columns, not recorded, not damage
    GOOD.assign(**dict.fromkeys(COST_COLUMNS, float("nan"))).to_csv(p, index=False)
    assert run_file_problem(p, "eps:5", 1, 3) == ""
    GOOD.drop(columns=[*COST_COLUMNS, *SECONDS]).to_csv(p, index=False)  # older runs: absent
    assert run_file_problem(p, "eps:5", 1, 3) == ""


@pytest.mark.parametrize("col", [*COUNTS, *SECONDS])
@pytest.mark.parametrize("value", [*NOT_A_NUMBER, "", "-1", "-0.5"])
def test_a_damaged_recorded_column_names_its_column_and_row(tmp_path, col, value):
    why = _problem(tmp_path, col, value, row=1)
    assert why.startswith(f"row 3: column {col} "), why  # line 3: the header is line 1
    assert "\n" not in why


@pytest.mark.parametrize("col", COUNTS)
@pytest.mark.parametrize("value", ["2.5", "3.001", "1.5e0"])
def test_a_count_that_is_not_whole_is_damage(tmp_path, col, value):
    why = _problem(tmp_path, col, value)
    assert why.startswith(f"row 3: column {col} is '") and why.endswith("', not a whole count")
    assert float(why.split("'")[1]) == float(value)


@pytest.mark.parametrize("col", SECONDS)
def test_seconds_may_be_fractions(tmp_path, col):
    assert _problem(tmp_path, col, "2.5") == ""


def test_k_of_zero_is_damage_a_cost_of_zero_is_not(tmp_path):
    assert _problem(tmp_path, "k", "0") == "row 3: column k is '0', below 1"
    for col in COST_COLUMNS:
        assert _problem(tmp_path, col, "0") == ""


SMALL = StudySettings(seeds=1, rounds=2, k=3, selectors=("proportional", "maxmin:2"),
                      bootstrap=200)  # fmt: skip


def _fake(seed: int):
    return fake.FakeOracle(seed, clients_per_domain=2)


@pytest.mark.parametrize("col", COST_COLUMNS)
@pytest.mark.parametrize("value", ["-5", "abc", "", "nan", "inf", "7.5"])
def test_a_study_reruns_a_damaged_run_file_and_never_counts_it(tmp_path, col, value, capsys):
    run_study(SMALL, tmp_path, make_oracle=_fake, make_selector=make_selector)
    p = run_path(tmp_path, "maxmin:2", 0)
    h = pd.read_csv(p, keep_default_na=False, dtype={"selected": str, "fallback": str})
    # recorded costs, then one damaged cell
    h = h.assign(**{c: [100, 200] for c in COST_COLUMNS}).astype({col: object})
    h.loc[1, col] = value
    h.to_csv(p, index=False)
    with pytest.raises(ValueError) as refused:  # --report-only reads it back: refused
        load_history(SMALL, tmp_path)
    msg = str(refused.value)
    assert msg.startswith(f"{p}: row 3: column {col} ") and "\n" not in msg
    done = []
    run_study(SMALL, tmp_path, make_oracle=_fake, make_selector=make_selector,
              on_run=lambda e, s: done.append((e, s)))  # fmt: skip
    assert done == [("maxmin:2", 0)]  # re-run, not kept as finished
    assert f"{p}: row 3: column {col} " in capsys.readouterr().err
    assert run_file_problem(p, "maxmin:2", 0, SMALL.rounds) == ""
    assert len(load_history(SMALL, tmp_path)) == 2 * SMALL.rounds
