"""The problem model and every validation rule of the round-stats contract (library level)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selection.errors import SelectionError, StatsError
from selection.problem import SelectionProblem
from selection.synthetic import synthetic_stats


@pytest.fixture
def table():
    return synthetic_stats(8, seed=3, rounds=2)


def _set(df, row, col, value):
    df = df.copy()
    if df[col].dtype.kind in "iu" and not float(value).is_integer():
        df[col] = df[col].astype(float)
    df.loc[row, col] = value
    return df


def test_from_stats_arrays_and_last_round(table):
    p = SelectionProblem.from_stats(table, 3)
    last = table[table["round"] == 1].reset_index(drop=True)
    assert p.round == 1 and p.n == 8 and p.k == 3
    assert p.domains == ("mnist", "usps", "svhn", "syn")
    np.testing.assert_allclose(p.U, last["U"])
    np.testing.assert_allclose(p.Ud[:, 2], last["U_svhn"])
    assert list(p.ids) == list(last["client_id"])


def test_f_z_is_a_z_score_of_log_f(table):
    p = SelectionProblem.from_stats(table, 3, round=0)
    assert p.F_z.mean() == pytest.approx(0.0, abs=1e-12)
    assert p.F_z.std() == pytest.approx(1.0, abs=1e-12)
    logF = np.log(table[table["round"] == 0]["F"].to_numpy())
    np.testing.assert_allclose(p.F_z, (logF - logF.mean()) / logF.std())


def test_reads_csv_and_parquet(tmp_path, table):
    table.to_csv(tmp_path / "s.csv", index=False)
    table.to_parquet(tmp_path / "s.parquet", index=False)
    a = SelectionProblem.from_stats(tmp_path / "s.csv", 2)
    b = SelectionProblem.from_stats(tmp_path / "s.parquet", 2)
    np.testing.assert_allclose(a.Ud, b.Ud)
    assert list(a.ids) == list(b.ids)


def test_missing_column_is_named(table):
    with pytest.raises(StatsError, match="missing column.*cos_g"):
        SelectionProblem.from_stats(table.drop(columns=["cos_g"]), 2)


def test_no_domain_column(table):
    dcols = [c for c in table.columns if c.startswith("U_")]
    with pytest.raises(StatsError, match="U_<domain>"):
        SelectionProblem.from_stats(table.drop(columns=dcols), 2)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("col", ["U", "U_usps", "F", "B", "cos_g"])
def test_non_finite_names_column_row_client(table, col, value):
    df = _set(table, 5, col, value)
    with pytest.raises(StatsError) as e:
        SelectionProblem.from_stats(df, 2)
    msg = str(e.value)
    assert f"column {col}" in msg and "row 5" in msg and str(table.loc[5, "client_id"]) in msg
    assert "non-finite" in msg


@pytest.mark.parametrize(
    ("col", "value", "why"),
    [
        ("U", 100.5, r"\[0, 100\]"),
        ("U", -0.1, r"\[0, 100\]"),
        ("U_svhn", 101.0, r"\[0, 100\]"),
        ("U_mnist", -3.0, r"\[0, 100\]"),
        ("F", 0.0, "F must be > 0"),
        ("F", -2.0, "F must be > 0"),
        ("B", -0.01, r"\[0, ln 2\]"),
        ("B", 0.7, r"\[0, ln 2\]"),
        ("cos_g", 1.2, r"\[-1, 1\]"),
        ("cos_g", -1.5, r"\[-1, 1\]"),
    ],
)
def test_out_of_range_names_column_row_value(table, col, value, why):
    df = _set(table, 3, col, value)
    with pytest.raises(StatsError, match=why) as e:
        SelectionProblem.from_stats(df, 2)
    msg = str(e.value)
    assert f"column {col}" in msg and "row 3" in msg and repr(float(value)) in msg
    assert str(table.loc[3, "client_id"]) in msg


def test_duplicate_client_id_in_a_round(table):
    df = table.copy()
    df.loc[4, "client_id"] = df.loc[2, "client_id"]  # both rows are in round 0
    with pytest.raises(StatsError, match="duplicate") as e:
        SelectionProblem.from_stats(df, 2)
    assert "row 4" in str(e.value) and str(df.loc[2, "client_id"]) in str(e.value)


def test_same_id_in_two_rounds_is_fine(table):
    assert table["client_id"].duplicated().any()
    assert SelectionProblem.from_stats(table, 2).n == 8


@pytest.mark.parametrize("k", [0, -1])
def test_k_at_most_zero(table, k):
    with pytest.raises(SelectionError, match=f"k={k}"):
        SelectionProblem.from_stats(table, k)


def test_k_above_n(table):
    with pytest.raises(SelectionError, match="k=9 exceeds the 8 clients of round 1"):
        SelectionProblem.from_stats(table, 9)


def test_k_not_integer(table):
    with pytest.raises(SelectionError, match="integer"):
        SelectionProblem.from_stats(table, 2.5)


def test_round_missing(table):
    with pytest.raises(SelectionError, match="round 7 is not in the stats table"):
        SelectionProblem.from_stats(table, 2, round=7)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(StatsError, match="nope.csv"):
        SelectionProblem.from_stats(tmp_path / "nope.csv", 2)


def test_errors_are_value_errors(table):
    with pytest.raises(ValueError):
        SelectionProblem.from_stats(table, 0)
