"""Hostile round-stats tables through ``fedsel solve``: exit 2 with one line, or the clean answer.

Classes of issue 9: missing-looking ids, phantom domains / duplicate headers, silent coercions,
plus a property test over random mutations of a valid table.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fl_oracle.cli import main
from selection.errors import StatsError
from selection.problem import SelectionProblem
from selection.schema import StatsWarning, read_stats, validate_stats
from selection.synthetic import synthetic_stats

K = 3
SOLVE = ["solve", "--k", K, "--method", "eps", "--eps", 30, "--json"]


def run(argv) -> tuple[int, str, str]:
    """``fedsel argv`` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def clean_table() -> pd.DataFrame:
    return synthetic_stats(8, seed=3).drop(columns="loss")


def csv_text(df: pd.DataFrame) -> str:
    return df.to_csv(index=False)


def solve_text(text: str, tmp: Path, name: str = "t.csv") -> tuple[int, str, str]:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return run(["solve", "--stats", path, *SOLVE[1:]])


def answer(out: str) -> tuple:
    """What must not change: status, selection and the (U, gap) objectives of the answer."""
    d = json.loads(out)
    keep = {k: v for k, v in d["objectives"].items() if k in ("utility", "gap", "worst")}
    keep.update({k: v for k, v in d["objectives"].items() if k.startswith("U_")})
    return d["status"], tuple(d["selected"]), tuple(sorted(keep.items()))


CLEAN = clean_table()


@pytest.fixture(scope="module")
def clean_answer(tmp_path_factory):
    code, out, err = solve_text(csv_text(CLEAN), tmp_path_factory.mktemp("clean"))
    assert code == 0, err
    return answer(out)


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("fedsel: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# -- 1. missing-looking ids are ids --------------------------------------------------------


@pytest.mark.parametrize("word", ["NA", "None", "null", "NaN", "N/A", "nan", "NULL", "#N/A"])
def test_missing_looking_ids_are_strings(word, tmp_path, clean_answer):
    df = CLEAN.copy()
    old = df.loc[2, "client_id"]
    df["client_id"] = df["client_id"].replace(old, word)
    code, out, err = solve_text(csv_text(df), tmp_path)
    assert code == 0, err
    status, selected, objectives = answer(out)
    clean_status, clean_sel, clean_obj = clean_answer
    assert (status, objectives) == (clean_status, clean_obj)
    assert selected == tuple(word if c == old else c for c in clean_sel)
    assert all(len(c) > 1 for c in selected)  # never cut to one character
    ids = read_stats(tmp_path / "t.csv")["client_id"].tolist()
    assert ids.count(word) == 1 and ids == [word if c == old else c for c in CLEAN["client_id"]]


@pytest.mark.parametrize("cell", ["", " ", "\t"])
def test_empty_id_names_its_row(cell, tmp_path):
    df = CLEAN.copy()
    df.loc[4, "client_id"] = cell
    code, _, err = solve_text(csv_text(df), tmp_path)
    assert_one_line_error(code, err, "client_id", "row 4")


@pytest.mark.parametrize("value", [None, np.nan, pd.NA])
def test_missing_id_in_a_dataframe_names_its_row(value):
    df = CLEAN.astype({"client_id": object})
    df.loc[5, "client_id"] = value
    with pytest.raises(StatsError, match="client_id: row 5 is missing"):
        validate_stats(df)


def test_missing_domain_names_its_row(tmp_path):
    df = CLEAN.copy()
    df.loc[1, "domain"] = ""
    code, _, err = solve_text(csv_text(df), tmp_path)
    assert_one_line_error(code, err, "column domain", "row 1")


# -- 2. phantom domains ----------------------------------------------------------------------


@pytest.mark.parametrize("col", ["U_mnist", "U", "client_id", "F", "round"])
def test_duplicate_header_is_an_error(col, tmp_path):
    lines = csv_text(CLEAN).splitlines()
    header = lines[0].split(",")
    i = header.index(col)
    rows = [ln.split(",") for ln in lines]
    text = "\n".join(",".join([*r, r[i]]) for r in rows) + "\n"
    code, _, err = solve_text(text, tmp_path)
    assert_one_line_error(code, err, "duplicate column header", repr(col))


def test_duplicate_header_in_a_dataframe_is_an_error():
    df = pd.concat([CLEAN, CLEAN[["U_mnist"]]], axis=1)
    with pytest.raises(StatsError, match="duplicate column header 'U_mnist'"):
        validate_stats(df)


def test_domains_are_the_domain_values_and_extra_u_columns_are_ignored(tmp_path, clean_answer):
    df = CLEAN.copy()
    df["U_phantom"] = 1.0  # would be the worst "domain" and blow up the gap
    df["U_mnist.1"] = 99.0
    with pytest.warns(StatsWarning, match="U_phantom, U_mnist.1"):
        p = SelectionProblem.from_stats(df, K)
    assert p.domains == ("mnist", "usps", "svhn", "syn")
    code, out, err = solve_text(csv_text(df), tmp_path)
    assert code == 0 and answer(out) == clean_answer
    assert err.count("fedsel: warning: ignoring column(s) U_phantom, U_mnist.1") == 1


def test_a_domain_without_its_u_column_is_an_error(tmp_path):
    df = CLEAN.copy()
    df.loc[6, "domain"] = "mnistt"
    code, _, err = solve_text(csv_text(df), tmp_path)
    assert_one_line_error(code, err, "row 6", "'mnistt'", "U_mnistt")


# -- 7. silent coercions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "col, value, needle",
    [
        ("round", 1e20, "round"),
        ("n_samples", 1e20, "n_samples"),
        ("n_samples", 2.0**53 + 2, "n_samples"),
        ("round", -1, "round"),
        ("U", "True", "column U"),
        ("U_svhn", "False", "column U_svhn"),
        ("F", "1e400", "column F"),
        ("n_samples", "0x10", "n_samples"),
        ("cos_g", "NA", "cos_g"),
        ("B", "", "column B"),
    ],
)
def test_out_of_range_and_non_numbers_are_refused(col, value, needle, tmp_path):
    df = CLEAN.astype({col: object})
    df.loc[3, col] = value
    code, _, err = solve_text(csv_text(df), tmp_path)
    assert_one_line_error(code, err, needle, "row 3")


@pytest.mark.parametrize("rows", ["all", "one"])
def test_weighted_maxmin_on_clients_with_no_samples_is_refused(rows, tmp_path):
    """Issue 40: ``maxmin:2@weighted`` weighs each client by its n_samples; a client with 0
    samples (every client: 0/0) is refused in one line, by the CLI and by the library alike,
    never answered from a weight of zero."""
    df = CLEAN.copy()
    if rows == "all":
        df["n_samples"] = 0
    else:
        df.loc[5, "n_samples"] = 0
    row = 0 if rows == "all" else 5
    path = tmp_path / "t.csv"
    path.write_text(csv_text(df), encoding="utf-8")
    argv = ["solve", "--stats", path, "--k", K, "--method", "maxmin", "--delta", 2,
            "--surrogate", "weighted", "--json"]  # fmt: skip
    code, out, err = run(argv)
    assert_one_line_error(code, err, "n_samples", f"row {row}")
    assert out == ""
    from selection.selectors import make_selector

    with pytest.raises(StatsError, match="n_samples must be in \\[1, "):
        make_selector("maxmin:2@weighted", seed=0)(df, K)


@pytest.mark.parametrize("col", ["U", "U_usps", "n_samples", "F"])
def test_boolean_columns_are_refused(col):
    df = CLEAN.copy()
    df[col] = True
    with pytest.raises(StatsError, match=f"column {col}: row 0 .* boolean value True"):
        validate_stats(df)
    df = CLEAN.astype({col: object})
    df.loc[2, col] = False
    with pytest.raises(StatsError, match=f"column {col}: row 2 .* boolean value False"):
        validate_stats(df)


def test_largest_exact_integers_are_kept_exactly():
    df = CLEAN.copy()
    df["n_samples"] = 2**53
    df["round"] = 2**53
    v = validate_stats(df)
    assert v["n_samples"].dtype == np.int64 and int(v["n_samples"].iloc[0]) == 2**53
    assert int(v["round"].iloc[0]) == 2**53


# -- property: random mutations of a valid table ----------------------------------------------

# Every value is either invalid wherever it lands or leaves the (U, gap) answer unchanged (a
# new id, a huge F, a cos_g of -1): so an accepted table must give the clean answer.
_WEIRD = ["NA", "None", "null", "", " ", "nan", "inf", "-inf", "1e20", "-1e20", "True", "False"]
_WEIRD += ["1e308", "abc", "0x1A", "1_000", "NULL", "#N/A", "1e400", "-1"]
_EXTREME = [1e20, -1e20, 2.0**63, 1e308, -1.0, float("nan"), float("inf"), True]
_COLUMNS = list(CLEAN.columns)


@st.composite
def mutations(draw):
    """A list of (kind, column, row, value) edits of the clean table."""
    kinds = st.sampled_from(["cell", "cell", "dtype", "dup_header", "drop", "extreme"])
    return draw(
        st.lists(
            st.tuples(
                kinds,
                st.sampled_from(_COLUMNS),
                st.integers(0, len(CLEAN) - 1),
                st.sampled_from(_WEIRD),
                st.sampled_from(_EXTREME),
            ),
            min_size=1,
            max_size=3,
        )
    )


def _apply(edits) -> str:
    df = CLEAN.astype(object)
    extra: list[str] = []
    for kind, col, row, text, number in edits:
        if col not in df.columns:  # dropped by an earlier edit
            continue
        if kind == "cell":
            df.loc[row, col] = text
        elif kind == "dtype":
            df[col] = df[col].astype(str).astype(object)  # numbers as their text
        elif kind == "dup_header":
            extra.append(col)
        elif kind == "drop":
            df = df.drop(columns=col)
        elif kind == "extreme":
            df.loc[row, col] = number
    text = df.to_csv(index=False)
    if extra:
        lines = text.splitlines()
        names = lines[0].split(",")
        for col in extra:
            if col in names:
                i = names.index(col)
                lines = [ln + "," + ln.split(",")[i] for ln in lines]
        text = "\n".join(lines) + "\n"
    return text


@settings(max_examples=60, deadline=None)
@given(edits=mutations())
def test_mutated_tables_fail_cleanly_or_answer_like_the_clean_one(edits):
    with tempfile.TemporaryDirectory() as tmp:
        code, clean_out, _ = solve_text(csv_text(CLEAN), Path(tmp), "clean.csv")
        text = _apply(edits)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatsWarning)
            code, out, err = solve_text(text, Path(tmp))
    assert "Traceback" not in err
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("fedsel: error: ")]
        assert len(errors) == 1 and all(
            ln.startswith(("fedsel: error: ", "fedsel: warning: ")) for ln in lines
        ), err
        assert out == ""
        return
    assert code == 0, err
    status, selected, objectives = answer(out)
    clean_status, clean_sel, clean_obj = answer(clean_out)
    # an accepted mutation may rename ids (to missing-looking words), never change the answer
    assert (status, objectives) == (clean_status, clean_obj)
    assert len(selected) == len(clean_sel) and all(len(c) > 1 for c in selected)
    if not any(kind in ("cell", "extreme") and col == "client_id" for kind, col, *_ in edits):
        assert selected == clean_sel


def test_reserved_domain_names_and_optional_readings_are_checked():
    import pandas as _pd

    from selection.errors import StatsError as _SE
    from selection.schema import validate_stats as _validate
    from selection.synthetic import synthetic_stats as _syn

    df = _syn(8, seed=3)
    own = df.assign(domain=df["domain"].replace({df["domain"].iloc[0]: "own"}))
    own = own.rename(columns={f"U_{df['domain'].iloc[0]}": "U_own"})
    with pytest.raises(_SE, match="domain 'own', a reserved name"):
        _validate(own)
    bad = df.assign(U_local=["abc"] + [50.0] * (len(df) - 1))
    with pytest.raises(_SE, match="column U_local: .* non-numeric value 'abc'"):
        _validate(bad)
    flag = df.assign(U_own=[True] * len(df))
    with pytest.raises(_SE, match="column U_own: .* boolean"):
        _validate(flag)
    empty = df.assign(U_local=[_pd.NA] + [50.0] * (len(df) - 1))
    assert _validate(empty)["U_local"].isna().sum() == 1  # empty: not measured, allowed
