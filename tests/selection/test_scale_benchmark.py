"""benchmarks/scale.py: the growth-exponent fit, capped rows left out, and a tiny full run."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "scale.py"
_spec = importlib.util.spec_from_file_location("bench_scale", _PATH)
scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale)


def _rows(ns, ts, capped=None, curve="eps", backend="auto", route="cbc"):
    capped = capped or [False] * len(ns)
    return pd.DataFrame(
        {
            "curve": curve,
            "family": "synthetic",
            "backend": backend,
            "route": route,
            "N": ns,
            "seconds": ts,
            "capped": capped,
        }
    )


def test_fit_power_recovers_a_known_exponent():
    ns = np.array([1000, 2000, 5000, 10000, 50000])
    a, b = scale.fit_power(ns, 2.0 * ns**1.5)
    assert b == pytest.approx(1.5, abs=1e-9)
    assert a == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(ValueError):
        scale.fit_power([100, 100], [1.0, 2.0])


def test_capped_rows_are_left_out_of_the_fit():
    ns = [100, 200, 400, 800]
    ts = [2.0 * n**1.5 for n in ns]
    df = _rows(ns + [1600], ts + [5.0], capped=[False] * 4 + [True])  # a capped lower bound
    fit = scale.fit_table(df)
    assert len(fit) == 1
    row = fit.iloc[0]
    assert row["b"] == pytest.approx(1.5, abs=1e-9)
    assert row["points"] == 4 and row["n_max"] == 800
    assert row["r2"] == pytest.approx(1.0)
    # one uncapped point left: no fit
    one = scale.fit_table(_rows([100, 200], [1.0, 9.0], capped=[False, True]))
    assert one.iloc[0]["points"] == 1 and math.isnan(one.iloc[0]["b"])


def test_targets_and_horizon_from_a_fake_table():
    ns = [1000, 2000, 5000, 10000]
    df = _rows(ns, [1e-4 * n for n in ns])  # 0.5 s at N = 5000, b = 1
    fits = scale.fit_table(df)
    text = scale.targets(df, fits)
    assert "N = 5000" in text and "0.5 s | yes" in text
    hz = scale.horizon(df, fits).iloc[0]
    assert hz["under_N"] == 10000 and math.isnan(hz["over_N"])
    assert hz["fit_N"] == pytest.approx(100_000, rel=1e-6)
    assert hz["fit"] == "extrapolated"


def test_horizon_brackets_a_capped_size():
    # 4 s at N = 10000, then N = 20000 capped at 60 s: 10 s lies between, fit not trusted
    df = _rows([5000, 10000, 20000], [2.0, 4.0, 60.0], capped=[False, False, True])
    fits = scale.fit_table(df)
    hz = scale.horizon(df, fits).iloc[0]
    assert hz["under_N"] == 10000 and hz["over_N"] == 20000 and hz["over_capped"]
    assert 10000 < hz["between_N"] < 20000
    assert hz["fit_N"] == pytest.approx(25_000, rel=1e-6)  # t = 4e-4·N beyond the capped N
    line = scale._horizon_line(next(scale.horizon(df, fits).itertuples(index=False)))
    assert "≥ 60 s (capped)" in line and "not to be trusted" in line


def test_tiny_run_writes_csv_md_png(tmp_path):
    df = scale.main(
        [
            "--sizes-front",
            "20,30",
            "--sizes-eps",
            "200,300",
            "--repeats",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    for name in ("scale.csv", "scale.md", "scale.png"):
        assert (tmp_path / name).stat().st_size > 0
    csv = pd.read_csv(tmp_path / "scale.csv")
    assert len(csv) == len(df) == 4
    front = csv[csv["curve"] == "front"]
    assert list(front["N"]) == [20, 30] and (front["status"] == "complete").all()
    eps = csv[csv["curve"] == "eps"]
    assert list(eps["K"]) == [20, 30]
    assert eps["binds"].all()  # ε = g0 / 2 is active
    assert (eps["seconds"] > 0).all() and not eps["capped"].any()
    md = (tmp_path / "scale.md").read_text()
    assert "benchmarks/scale.py --sizes-front 20,30" in md
    assert "## Targets" in md and "Load average" in md and "Growth exponents" in md
