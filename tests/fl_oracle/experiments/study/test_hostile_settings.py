"""Hostile settings files and stored run files (hypothesis): every mutation is refused with a
ValueError (one line, naming the key or file) or read exactly as the clean input."""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fl_oracle.experiments.study.runs import run_file_problem
from fl_oracle.experiments.study.settings import StudySettings

CLEAN = StudySettings(seeds=2, rounds=3, selectors=("proportional", "eps:5"))
TEXT = CLEAN.to_toml()
LINES = TEXT.splitlines()
JUNK = st.sampled_from(
    ['"x"', "-1", "0", "1e9", "[]", '["a"]', "[1, 2]", "true", "nan", "inf", '""', "{}", "3.5"]
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=st.integers(0, len(LINES) - 1), value=JUNK, rename=st.booleans())
def test_mutated_study_toml_is_refused_or_read_as_clean(line, value, rename):
    lines = list(LINES)
    if "=" not in lines[line]:
        return
    key, _, _ = lines[line].partition("=")
    lines[line] = f"{key.strip() + ('x' if rename else '')} = {value}"
    try:
        got = StudySettings.from_toml("\n".join(lines) + "\n")
    except ValueError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg.strip()
        return
    # accepted: then it is a valid study whose TOML reads back to itself
    assert StudySettings.from_toml(got.to_toml()) == got


GOOD = pd.DataFrame(
    {"round": range(3), "entry": "eps:5", "seed": 1, "acc_avg": 50.0, "acc_worst": 40.0,
     "acc_gap": 5.0, "selected": "a;b"}
)  # fmt: skip


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["drop", "dup", "cell", "col", "swap"]),
    row=st.integers(0, 2),
    col=st.sampled_from(list(GOOD.columns)),
    value=st.sampled_from(["x", "", "nan", "-1", "eps:9", "7", "inf"]),
)
def test_mutated_run_files_are_refused_or_clean(tmp_path, kind, row, col, value):
    df = GOOD.copy().astype(object)
    if kind == "drop":
        df = df.drop(index=row)
    elif kind == "dup":
        df = pd.concat([df, df.iloc[[row]]])
    elif kind == "cell":
        df.iloc[row, list(df.columns).index(col)] = value
    elif kind == "col":
        df = df.drop(columns=col)
    else:
        df = df.iloc[::-1]
    p = tmp_path / "seed01.csv"
    df.to_csv(p, index=False)
    why = run_file_problem(p, "eps:5", 1, 3)
    if not why:  # accepted: the same run (rounds, entry, seed), accuracies in range
        back = pd.read_csv(p, keep_default_na=False, dtype={"selected": str})
        for c in ("round", "seed"):
            assert pd.to_numeric(back[c]).tolist() == GOOD[c].tolist()
        assert back["entry"].astype(str).tolist() == ["eps:5"] * 3
        for c in ("acc_avg", "acc_worst", "acc_gap"):
            assert pd.to_numeric(back[c]).between(0, 100).all()
