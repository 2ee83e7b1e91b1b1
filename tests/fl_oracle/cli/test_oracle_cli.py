"""``fedsel analyze`` and ``fedsel oracle`` through the console entry point."""

import subprocess
import sys

import pytest

from fl_oracle.cli import main
from selection.synthetic import synthetic_stats


def test_analyze_cli_writes_outputs(tmp_path, capsys):
    stats = tmp_path / "stats.csv"
    synthetic_stats(12, rounds=2, seed=1).to_csv(stats, index=False)
    main(["analyze", "--stats", str(stats), "--out", str(tmp_path / "an")])
    out = capsys.readouterr().out
    assert "pooled rho(F,U)=" in out
    for name in ("analysis.csv", "analysis.json", "analysis.html", "sample_weights.csv"):
        assert (tmp_path / "an" / name).is_file()


def test_analyze_cli_bad_input_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "--stats", str(tmp_path / "missing.csv"), "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "missing.csv" in capsys.readouterr().err


def test_oracle_cli_bad_option_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["oracle", "--rounds", "1", "--out", str(tmp_path), "--model", "resnet"])
    assert exc.value.code == 2
    assert "model" in capsys.readouterr().err


def test_cli_module_does_not_import_torch():
    code = "import sys, fl_oracle.cli.oracle; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
