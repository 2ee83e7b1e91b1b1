"""selection.analysis: correlations equal scipy's, the partial formula, weights, figure data."""

import json
import math
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from selection.analysis import (
    analyze_stats,
    correlations,
    partial_spearman,
    sample_weights,
    scatter_data,
)
from selection.analysis_report import scatter_figure, write_analysis
from selection.errors import StatsError
from selection.synthetic import synthetic_stats


@pytest.fixture(scope="module")
def table():
    return synthetic_stats(24, rounds=3, seed=4)


def test_correlations_match_scipy(table):
    c = correlations(table).set_index("round")
    assert list(c.index) == ["0", "1", "2", "pooled"]
    for label, df in [*((str(r), g) for r, g in table.groupby("round")), ("pooled", table)]:
        assert c.loc[label, "rho_FU"] == pytest.approx(st.spearmanr(df["F"], df["U"]).statistic)
        assert c.loc[label, "rho_FB"] == pytest.approx(st.spearmanr(df["F"], df["B"]).statistic)
        assert c.loc[label, "n"] == len(df)
    # partial rank correlation = Pearson correlation of rank residuals after regressing on B
    rf, ru, rb = (st.rankdata(table[c_]) for c_ in ("F", "U", "B"))
    res = [a - np.polyval(np.polyfit(rb, a, 1), rb) for a in (rf, ru)]
    assert c.loc["pooled", "rho_FU_given_B"] == pytest.approx(np.corrcoef(*res)[0, 1])
    assert c.loc["pooled", "rho_FU"] < 0  # synthetic tables are built with rho(F,U) < 0


def test_partial_spearman_hand_case():
    x = np.array([1.0, 2, 3, 4, 5])
    assert partial_spearman(x, x, np.array([5.0, 3, 1, 2, 4])) == pytest.approx(1.0)
    assert math.isnan(partial_spearman(x, x, x))


def test_sample_weights_table(table):
    w = sample_weights(table).set_index("domain")
    last = table.drop_duplicates("client_id", keep="last")
    for d in ("mnist", "usps", "svhn", "syn"):
        n = last.loc[last.domain == d, "n_samples"].sum()
        assert w.loc[d, "n_samples"] == n
        assert w.loc[d, "weight_samples_pct"] == pytest.approx(100 * n / last["n_samples"].sum())
        assert w.loc[d, "weight_uniform_pct"] == pytest.approx(25.0)


def test_scatter_data_and_figure(table):
    pts = scatter_data(table)
    np.testing.assert_allclose(pts["log_F"], np.log(table["F"]))
    fig = scatter_figure(pts, analyze_stats(table).correlations.iloc[-1].to_dict())
    assert len(fig.data) == 1 and len(fig.data[0].x) == len(table)
    assert "ρ(F,U)" in fig.layout.title.text


def test_write_analysis_files(table, tmp_path):
    res = write_analysis(table, tmp_path)
    saved = pd.read_csv(tmp_path / "analysis.csv", dtype={"round": str})
    np.testing.assert_allclose(saved["rho_FU"], res.correlations["rho_FU"])
    js = json.loads((tmp_path / "analysis.json").read_text())
    assert js["pooled"]["rho_FU"] == pytest.approx(res.correlations["rho_FU"].iloc[-1])
    assert len(js["per_round"]) == 3 and len(js["sample_weights"]) == 4
    html = (tmp_path / "analysis.html").read_text()
    assert "plotly" in html.lower() and len(html) > 1_000_000  # plotly.js embedded


def test_analysis_module_is_torch_free():
    import subprocess

    code = "import sys, selection.analysis; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_invalid_table_is_rejected(table):
    bad = table.copy()
    bad.loc[3, "B"] = 5.0
    with pytest.raises(StatsError, match="column B"):
        analyze_stats(bad)


def test_analysis_at_any_length_writes_one_set(tmp_path):
    """80 measured rounds (fedsel oracle --rounds 80 measures every round) once failed in
    plotly's subplot spacing after four of the six files were written."""
    df = synthetic_stats(8, rounds=80, seed=1)
    write_analysis(df, tmp_path / "a", n_boot=0)
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(
        ["per_round.csv", "statement.csv", "analysis.csv", "sample_weights.csv", "analysis.json",
         "analysis.html"]
    )  # fmt: skip
    assert "round 79" in (tmp_path / "a" / "analysis.html").read_text()


def test_the_analysis_page_opens_with_the_within_round_takeaway():
    import pandas as pd

    from selection.analysis_report import analysis_takeaway

    per = pd.DataFrame({
        "round": ["0", "1", "2", "pooled"], "reading": "U",
        "rho_FU": [-0.6, -0.4, 0.1, -0.2], "rho_FU_lo": [-0.8, -0.7, 0.05, -0.3],
        "rho_FU_hi": [-0.3, 0.1, 0.3, -0.1],
    })  # fmt: skip
    said = analysis_takeaway(per)
    assert said.startswith("Within a round, ρ(F, U) has median -0.40 over 3 measured round(s)")
    assert "below zero in 1 and above zero in 1 of them" in said
    assert "Pooled over rounds it reads -0.20" in said
