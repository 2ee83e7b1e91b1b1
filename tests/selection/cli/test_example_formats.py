"""``fedsel example -o NAME`` writes the format NAME promises, which ``fedsel solve`` reads
back, or refuses a name it cannot honour (issue 53: ``-o x.parquet`` wrote CSV under a Parquet
name, which ``fedsel solve`` could not read)."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from selection.cli.example import example_stats_bytes
from selection.schema import read_stats, read_stats_csv, validate_stats

from helpers.cli import run_fedsel

SOLVE = ["--k", 5, "--method", "eps", "--eps", 25, "--json"]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return validate_stats(read_stats_csv(io.BytesIO(example_stats_bytes())))


@pytest.mark.parametrize("name", ["s.csv", "s.txt", "s.parquet", "s.pq", "s.PARQUET", "s.Csv"])
def test_the_written_table_is_the_example_in_the_format_its_name_promises(
    name, table, tmp_path, capsys
):
    out = tmp_path / name
    code, _, err = run_fedsel(["example", "-o", out], capsys)
    assert code == 0, err
    parquet = out.suffix.lower() in (".parquet", ".pq")
    assert (
        out.read_bytes()[:4] == b"PAR1" if parquet else out.read_bytes() == (example_stats_bytes())
    )
    pd.testing.assert_frame_equal(read_stats(out), table)
    code, got, err = run_fedsel(["solve", "--stats", out, *SOLVE], capsys)
    assert code == 0, err
    ref_csv = tmp_path / "ref" / "ref.csv"
    assert run_fedsel(["example", "-o", ref_csv], capsys)[0] == 0
    code, ref, _ = run_fedsel(["solve", "--stats", ref_csv, *SOLVE], capsys)
    assert code == 0
    drop = ("seconds", "route_reason")
    assert {k: v for k, v in json.loads(got).items() if k not in drop} == {
        k: v for k, v in json.loads(ref).items() if k not in drop}  # fmt: skip


@pytest.mark.parametrize("name", ["s.json", "s.xlsx", "s", "s.csv.gz", "s.parquet.bak"])
def test_a_name_promising_another_format_is_refused_and_nothing_written(name, tmp_path, capsys):
    out = tmp_path / name
    code, _, err = run_fedsel(["example", "-o", out], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("fedsel: error: --out "), err
    assert ".csv" in lines[0] and ".parquet" in lines[0]
    assert list(tmp_path.iterdir()) == []
