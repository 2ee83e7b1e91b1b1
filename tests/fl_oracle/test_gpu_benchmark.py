"""benchmarks/gpu.py, the GPU machine's prepared run, on the CPU: it times a tiny round per
entry and writes its table, naming the device (here: none) and why the CUDA tests did not run;
its arguments are checked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("fl_oracle.sim.oracle")

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_gpu", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_it_runs_on_the_cpu_and_writes_its_table(tmp_path):
    gpu = _load()
    assert (
        gpu.main(["--device", "cpu", "--sizes", "8", "--rounds", "1", "--out", str(tmp_path)]) == 0
    )
    t = pd.read_csv(tmp_path / "gpu.csv")
    assert list(t["entry"]) == list(gpu.ENTRIES) and set(t["device"]) == {"cpu"}
    assert (t["N"] == 8).all() and (t["round_s"] > 0).all()
    md = (tmp_path / "gpu.md").read_text()
    assert "cpu only (no GPU measured)" in md and "CUDA tests: not run" in md


@pytest.mark.parametrize("argv", [["--sizes", "x"], ["--sizes", "2"], ["--rounds", "0"]])
def test_bad_arguments_are_one_line(argv, tmp_path, capsys):
    gpu = _load()
    with pytest.raises(SystemExit) as exc:
        gpu.main([*argv, "--device", "cpu", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "error:" in capsys.readouterr().err
