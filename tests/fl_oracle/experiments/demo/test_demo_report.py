"""The strategy comparison (fl_oracle.experiments.demo.run) and its report data (fl_oracle.experiments.demo.report)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from fl_oracle.experiments.demo.html import render_html
from fl_oracle.experiments.demo.report import (
    best_per_column,
    pareto_of_means,
    report_data,
    seed_statistics,
    write_outputs,
)
from fl_oracle.experiments.demo.run import DemoResult, DemoSettings, run_demo, summarize
from selection.selectors import Spec

from helpers import fake_oracle as fake


def simple_selector(spec: Spec | str, *, seed: int = 0):
    """A stand-in factory: ``top`` (highest U), ``rand`` (seeded uniform), ``low`` (lowest U)."""
    rng = np.random.default_rng(seed)
    spec = spec if isinstance(spec, str) else spec.name  # the runs hand it the parsed spec

    def select(df: pd.DataFrame, k: int) -> list[str]:
        if spec == "rand":
            return list(rng.choice(df["client_id"].to_numpy(), size=k, replace=False))
        order = df.sort_values(["U", "client_id"], ascending=[spec == "low", True])
        return list(order["client_id"][:k])

    return select


@pytest.fixture(scope="module")
def demo_result() -> DemoResult:
    pytest.importorskip("selection.solvers.sweeps")
    settings = DemoSettings(rounds=3, seeds=2, k=3, selectors=("top", "rand", "low"))
    return run_demo(lambda s: fake.FakeOracle(seed=s), simple_selector, settings)


def test_run_demo_covers_every_selector_and_seed(demo_result):
    h = demo_result.history
    assert h.groupby(["selector", "seed"]).size().to_dict() == {
        (s, seed): 3 for s in ("top", "rand", "low") for seed in (0, 1)
    }
    # every run starts from the same round-0 model: identical first-round stats per seed
    st = demo_result.stats
    assert set(st["seed"]) == {0, 1} and len(st) == 2 * 3 * 8
    # the same federation: "top" run of seed 0 replayed alone gives the same history
    o = fake.FakeOracle(seed=0)
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run

    alone = run_training(o, plan_run(simple_selector("top"), rounds=3, k=3, name="top", seed=0))
    got = h[(h["selector"] == "top") & (h["seed"] == 0)].reset_index(drop=True)
    np.testing.assert_allclose(got["acc_avg"], alone.history["acc_avg"])


def test_summary_is_mean_and_std_of_final_rounds(demo_result):
    h, s = demo_result.history, demo_result.summary.set_index("selector")
    assert list(s.index) == ["top", "rand", "low"]
    final = h[h["round"] == 2]
    for spec, part in final.groupby("selector"):
        assert s.loc[spec, "avg_mean"] == pytest.approx(part["acc_avg"].mean())
        assert s.loc[spec, "worst_std"] == pytest.approx(part["acc_worst"].std(ddof=1))
        assert s.loc[spec, "n_seeds"] == 2
    assert s.loc["top", "avg_mean"] > s.loc["low", "avg_mean"]


def test_report_data_has_one_entry_per_selector(demo_result):
    data = report_data(demo_result)
    assert list(data["selectors"]) == ["top", "rand", "low"]
    for entry in data["selectors"].values():
        assert list(entry["curve"]["round"]) == [0, 1, 2]
    assert "low" in data["selectors"]["top"]["dominates"]
    assert data["selectors"]["top"]["nondominated"]
    assert data["setup"]["sources"]["svhn"] == "generated stand-in"
    assert data["setup"]["n_clients"] == 8 and data["setup"]["k"] == 3


def test_fronts_put_prediction_next_to_realization(demo_result):
    f = demo_result.fronts
    assert not f.empty and set(f["method"]) <= {"eps", "maxmin"}
    assert (f["round"] == 1).all()  # rounds // 2
    np.testing.assert_allclose(f["err_worst"], f["real_worst"] - f["pred_worst"])
    # realized values: the oracle at the front round aggregating exactly that selection
    o = fake.FakeOracle(seed=0)
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run

    run_training(o, plan_run(simple_selector("top"), rounds=1, k=3, name="top"))
    rec = f.iloc[0]
    real = o.evaluate(rec["selected"].split(";"), split="val")
    assert rec["real_utility"] == pytest.approx(real["acc_pooled"])
    accs = [real[f"acc_{d}"] for d in fake.DOMAINS]
    assert rec["real_worst"] == pytest.approx(min(accs))


def test_dominance_and_best_marks():
    summary = pd.DataFrame(
        {
            "selector": ["a", "b", "c", "d"],
            "avg_mean": [80.0, 78.0, 70.0, 82.0],
            "worst_mean": [60.0, 65.0, 55.0, 50.0],
            "gap_mean": [20.0, 13.0, 15.0, 32.0],
            "std_mean": [8.0, 5.0, 6.0, 12.0],
            "solve_seconds_mean": [0.1, 0.2, 0.1, 0.3],
        }
    )
    dom = pareto_of_means(summary).set_index("selector")
    assert list(dom["nondominated"]) == [True, True, False, True]
    assert dom.loc["c", "dominated_by"] == "a;b"
    assert dom.loc["a", "dominates"] == "c" and dom.loc["d", "dominates"] == ""
    best = best_per_column(summary)
    assert best == {
        "avg_mean": ["d"],
        "worst_mean": ["b"],
        "gap_mean": ["b"],
        "std_mean": ["b"],
        "solve_seconds_mean": ["a", "c"],
    }


def test_seed_statistics_partial_spearman():
    rng = np.random.default_rng(0)
    n = 200
    B = rng.uniform(0.0, 0.5, n)
    F = np.exp(rng.normal(size=n) + 3 * B)
    U = 50 - 5 * np.log(F) + 20 * B + rng.normal(size=n)
    stats = pd.DataFrame(
        {
            "F": F,
            "U": U,
            "B": B,
            "seed": 0,
            "round": np.arange(n) % 2,
            "client_id": "c",
            "domain": "d",
        }
    )
    out = seed_statistics(stats)
    p = out["pooled"]
    assert p["rho_FU"] == pytest.approx(sps.spearmanr(F, U).statistic)
    # partial Spearman = correlation of rank residuals after regressing out rank(B)
    rF, rU, rB = (sps.rankdata(v) for v in (F, U, B))
    res = [x - np.polyval(np.polyfit(rB, x, 1), rB) for x in (rF, rU)]
    assert p["rho_FU_given_B"] == pytest.approx(np.corrcoef(*res)[0, 1])
    assert len(out["per_round"]) == 2 and len(out["scatter"]) == n


def test_write_outputs_one_self_contained_html(demo_result, tmp_path):
    paths = write_outputs(demo_result, tmp_path)
    assert sorted(p.name for p in paths) == [
        "fronts.csv",
        "history.csv",
        "report.html",
        "summary.csv",
    ]
    text = (tmp_path / "report.html").read_text()
    assert text.count("plotly.js v") == 1 and "<script src=" not in text
    for n in range(1, 6):
        assert f"<h2>{n}." in text
    assert "Generated stand-ins" in text
    s = pd.read_csv(tmp_path / "summary.csv")
    assert list(s["selector"]) == ["top", "rand", "low"]
    assert pd.read_csv(tmp_path / "history.csv").shape[0] == 18


def test_summarize_counts_fallback_rounds():
    h = pd.DataFrame(
        {
            "selector": ["x", "x", "x", "x"],
            "seed": [0, 0, 1, 1],
            "round": [0, 1, 0, 1],
            "acc_avg": [1.0, 2.0, 3.0, 4.0],
            "acc_worst": [1.0, 1.0, 2.0, 3.0],
            "acc_gap": [0.0, 1.0, 1.0, 1.0],
            "acc_std": [0.0, 0.5, 0.5, 0.5],
            "solve_seconds": [0.1, 0.3, 0.2, 0.2],
            "fallback": ["", "fell back", "", ""],
        }
    )
    s = summarize(h).iloc[0]
    assert s["avg_mean"] == pytest.approx(3.0) and s["avg_std"] == pytest.approx(np.sqrt(2.0))
    assert s["solve_seconds_mean"] == pytest.approx(0.2) and s["fallback_rounds"] == 1


# ---------------------------------------------------------------- fedsel demo on the real oracle
def _demo_cli(monkeypatch, tmp_path, *args: str) -> Path:
    pytest.importorskip("fl_oracle.sim.oracle")
    import fl_oracle.cli.train as cli_train
    from fl_oracle.cli import main
    from fl_oracle.experiments.runner import OracleFactory

    data = fake.tiny_data()
    monkeypatch.setattr(
        cli_train, "demo_factory", lambda overrides: OracleFactory(fake.tiny_overrides(), data)
    )
    out = tmp_path / "demo"
    try:
        main(["demo", "--out", str(out), *args])
    except SystemExit as exc:
        assert exc.code in (0, None)
    return out


def test_fedsel_demo_tiny_writes_report_and_tables(monkeypatch, tmp_path, capsys):
    out = _demo_cli(
        monkeypatch,
        tmp_path,
        "--rounds",
        "2",
        "--seeds",
        "2",
        "--k",
        "3",
        "--workers",
        "1",
        "--selectors",
        "proportional,eps:0,maxmin:2",
    )
    s = pd.read_csv(out / "summary.csv")
    h = pd.read_csv(out / "history.csv", keep_default_na=False)
    f = pd.read_csv(out / "fronts.csv")
    assert list(s["selector"]) == ["proportional", "eps:0", "maxmin:2"]
    assert (s["n_seeds"] == 2).all() and len(h) == 3 * 2 * 2
    assert s.set_index("selector").loc["eps:0", "fallback_rounds"] == 4  # eps=0 never feasible
    assert h[h["selector"] == "eps:0"]["fallback"].str.contains("fell back").all()
    assert not f.empty and (f["round"] == 1).all() and (f["split"] == "val").all()
    np.testing.assert_allclose(f["err_utility"], f["real_utility"] - f["pred_utility"])
    text = (out / "report.html").read_text()
    assert text.count("plotly.js v") == 1 and "Generated stand-ins" in text
    rec = tomllib.loads((out / "record.toml").read_text())["run"]
    assert rec["workers"] == 1 and rec["seconds"] > 0 and rec["command"].startswith("fedsel demo")
    assert rec["git_commit"] and rec["cpu"]
    # one run per folder: a second demo into it is refused, --overwrite replaces it
    from fl_oracle.cli import main

    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--out", str(out), "--rounds", "1"])
    assert exc.value.code == 2
    assert "already holds a run (demo)" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    again = _demo_cli(monkeypatch, tmp_path, "--overwrite", "--rounds", "1", "--seeds", "1",
                      "--k", "3", "--workers", "1", "--selectors", "proportional")  # fmt: skip
    assert len(pd.read_csv(again / "history.csv")) == 1


@pytest.mark.slow
def test_fedsel_demo_workers_match_sequential(monkeypatch, tmp_path):
    args = ("--rounds", "2", "--seeds", "2", "--k", "3", "--selectors", "random,maxmin:2")
    one = _demo_cli(monkeypatch, tmp_path / "a", *args, "--workers", "1")
    two = _demo_cli(monkeypatch, tmp_path / "b", *args, "--workers", "2")
    cols = ["selector", "seed", "round", "selected", "acc_avg", "acc_worst", "pred_utility"]
    pd.testing.assert_frame_equal(
        pd.read_csv(one / "history.csv")[cols], pd.read_csv(two / "history.csv")[cols]
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--selectors", "random,bogus"], "bad selector spec 'bogus'"),
        (["--selectors", "random,random"], "duplicate selector"),
        (["--rounds", "2", "--front-round", "2"], "front_round=2"),
        (["--data", "nope"], "nope"),
    ],
)
def test_fedsel_demo_bad_input_is_one_line(args, needle, tmp_path, capsys):
    from fl_oracle.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["demo", "--out", str(tmp_path / "d"), *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
    assert not (tmp_path / "d").exists()


def test_fronts_at_round_zero_use_the_initial_model():
    pytest.importorskip("selection.solvers.sweeps")
    settings = DemoSettings(rounds=1, seeds=1, k=2, selectors=("top", "low"))
    res = run_demo(lambda s: fake.FakeOracle(seed=s), simple_selector, settings)
    assert (res.fronts["round"] == 0).all()
    rec = res.fronts.iloc[-1]
    real = fake.FakeOracle(seed=0).evaluate(rec["selected"].split(";"), split="val")
    assert rec["real_worst"] == pytest.approx(min(real[f"acc_{d}"] for d in fake.DOMAINS))


def test_the_demo_page_opens_with_a_takeaway_and_its_caveat(demo_result):
    from fl_oracle.experiments.demo.html import demo_takeaway

    data = report_data(demo_result)
    t = data["final_table"]
    said = demo_takeaway(data)
    w = t.loc[t["worst_mean"].idxmax()]
    assert said.startswith(f"Highest final worst-domain accuracy: {w['selector']} "
                           f"({w['worst_mean']:.1f} ± {w['worst_std']:.1f} %")  # fmt: skip
    page = render_html(data)
    assert said in page.replace("&#x27;", "'") and "A showcase, not evidence" in page
    assert "faint dots: each seed" in page
