"""benchmarks/predictor_bench.py checks every argument before any work, as the CLI does: one
line, exit 2 (it gave 14 tracebacks and accepted a negative --subsets, a held-out seed equal
to a tuning seed and eval --k 0)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "predictor_bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_predictor", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["log", "--seeds", "abc"], "--seeds 'abc'"),
        (["log", "--seeds", "0,0"], "distinct seeds"),
        (["log", "--rounds", "0"], "--rounds 0"),
        (["log", "--k", "0"], "--k 0"),
        (["log", "--k", "100"], "--k 100"),
        (["log", "--workers", "0"], "--workers 0"),
        (["log", "--subsets", "-1"], "--subsets -1"),
        (["log", "--drivers", "bogus"], "unknown selector 'bogus'"),
        (["log", "--seeds", "0,1", "--held-out", "1"], "is a tuning seed too"),
        (["eval", "--k", "0"], "--k 0"),
        (["eval", "--models", "nope"], "unknown information model 'nope'"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(bench, argv, said, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main([*argv, "--log", str(tmp_path / "log")])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and said in err and len(err.splitlines()) == 1
    assert not (tmp_path / "log").exists()


def test_an_existing_out_file_and_a_corrupt_log_are_named(bench, tmp_path, capsys):
    (tmp_path / "out").write_text("a file")
    with pytest.raises(SystemExit) as exc:
        bench.main(["eval", "--out", str(tmp_path / "out"), "--log", str(tmp_path / "log")])
    assert exc.value.code == 2 and "is a file, not a folder" in capsys.readouterr().err
    log = tmp_path / "log" / "driver"
    log.mkdir(parents=True)
    (log / "seed00.parquet").write_bytes(b"not parquet")
    with pytest.raises(SystemExit) as exc:
        bench.main(["eval", "--log", str(tmp_path / "log"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "seed00.parquet: unreadable" in err
