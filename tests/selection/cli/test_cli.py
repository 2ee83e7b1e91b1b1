"""The selection commands through the console script, in process: bad input and happy paths."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from selection.synthetic import synthetic_stats

from helpers.cli import run_fedsel as run

K = 5


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return synthetic_stats(20, seed=15, rounds=2)


@pytest.fixture()
def stats(tmp_path, table) -> Path:
    path = tmp_path / "stats.csv"
    table.to_csv(path, index=False)
    return path


def _write(tmp_path: Path, df: pd.DataFrame, name: str = "bad.csv") -> Path:
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def _edit(table: pd.DataFrame, col: str, value) -> pd.DataFrame:
    df = table.copy()
    df.loc[23, col] = value  # row 23: round 1, client syn-0 ... in table order
    return df


BAD_TABLES = {
    "missing_column": (lambda t: t.drop(columns="F"), "missing column(s): F"),
    "nan": (lambda t: _edit(t, "U", math.nan), "column U: row 23"),
    "inf": (lambda t: _edit(t, "F", math.inf), "column F: row 23"),
    "u_range": (lambda t: _edit(t, "U", 120.0), "[0, 100]"),
    "u_domain_range": (lambda t: _edit(t, "U_svhn", -3.0), "column U_svhn: row 23"),
    "f_nonpositive": (lambda t: _edit(t, "F", 0.0), "F must be > 0"),
    "b_range": (lambda t: _edit(t, "B", 0.9), "[0, ln 2]"),
    "cos_range": (lambda t: _edit(t, "cos_g", 1.5), "[-1, 1]"),
    "duplicate_ids": (
        lambda t: t.assign(client_id=t["client_id"].where(t.index != 21, t.loc[20, "client_id"])),
        "duplicate id",
    ),
}


def _assert_clean_failure(code: int, err: str, fragment: str, out_dir: Path) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fedsel: error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in err
    assert not (out_dir / "front.csv").exists()
    assert not out_dir.exists() or not list(out_dir.glob(".*.tmp"))


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_bad_table_is_one_line_exit_2_and_no_front(case, table, tmp_path, capsys):
    make, fragment = BAD_TABLES[case]
    path = _write(tmp_path, make(table))
    out = tmp_path / "out"
    code, _, err = run(
        ["sweep", "--stats", path, "--k", K, "--method", "eps", "--out", out], capsys
    )
    _assert_clean_failure(code, err, fragment, out)


@pytest.mark.parametrize(
    "extra,fragment",
    [
        (["--k", 0, "--method", "eps"], "k=0 must be at least 1"),
        (["--k", 21, "--method", "eps"], "k=21 exceeds the 20 clients"),
        (["--k", K, "--method", "simplex"], "unknown method 'simplex'"),
        (["--k", K, "--method", "eps", "--eps", "0,x,5"], "--eps: 'x' in '0,x,5' is not a number"),
        (["--k", K, "--method", "eps", "--eps", "0,-2"], "--eps: '-2'"),
        (["--k", K, "--method", "maxmin", "--delta", "1,,2"], "--delta: ''"),
        (["--k", K, "--method", "maxmin", "--eps", "1"], "--eps does not apply to method"),
        (["--k", K, "--method", "eps", "--round", 7], "round 7 is not in the stats table"),
        (["--k", K, "--method", "eps", "--eps", "5", "--complete"], "not both"),
        (["--k", K, "--method", "nsga2", "--objectives", "utility,fun"], "--objectives"),
        (["--k", K, "--method", "maxmin", "--fisher-min", "1"], "--fisher-min does not apply"),
        (["--k", K, "--method", "eps", "--per-round", "0-1", "--round", "1"], "not both"),
        (["--k", K, "--method", "eps", "--per-round", "7-9"], "--per-round"),
        # a range reaching past the table's rounds (0, 1) was clipped silently, exit 0
        (
            ["--k", K, "--method", "eps", "--per-round", "0-9"],
            "--per-round '0-9': round(s) [9] not in the stats table (rounds 0, 1)",
        ),
        (["--k", K, "--method", "eps", "--per-round", "1-0"], "1 is after 0"),
        (["--k", K, "--method", "eps", "--backend", "gurobi"], "unknown backend 'gurobi'"),
    ],
)
def test_bad_arguments(extra, fragment, stats, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run(["sweep", "--stats", stats, *extra, "--out", out], capsys)
    _assert_clean_failure(code, err, fragment, out)


def test_missing_stats_file(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["sweep", "--stats", tmp_path / "nope.csv", "--k", K, "--method", "eps", "--out", out]
    code, _, err = run(argv, capsys)
    _assert_clean_failure(code, err, "stats file not found", out)


def test_unreadable_stats_file(tmp_path, capsys):
    bad = tmp_path / "stats.parquet"
    bad.write_bytes(b"\x00\x01 this is not parquet")
    out = tmp_path / "out"
    code, _, err = run(["sweep", "--stats", bad, "--k", K, "--method", "eps", "--out", out], capsys)
    _assert_clean_failure(code, err, "cannot read stats file", out)


def test_failed_run_keeps_an_earlier_front(stats, table, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["sweep", "--stats", stats, "--k", K, "--method", "eps", "--eps", "5,20", "--out", out]
    assert run(argv, capsys)[0] == 0
    before = (out / "front.csv").read_bytes()
    bad = _write(tmp_path, _edit(table, "B", 0.9))
    code, _, err = run(["sweep", "--stats", bad, "--k", K, "--method", "eps", "--out", out,
                        "--overwrite"], capsys)  # fmt: skip
    assert code == 2 and "Traceback" not in err and "column B" in err
    assert (out / "front.csv").read_bytes() == before


def test_sweep_eps_grid_writes_front_csv_and_html(stats, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["sweep", "--stats", stats, "--k", K, "--method", "eps", "--eps", "0,5,15,40"]
    code, _, err = run([*argv, "--out", out], capsys)
    assert code == 0, err
    front = pd.read_csv(out / "front.csv", dtype={"selected": str})
    required = ["method", "param", "utility", "gap", "worst", "selected", "status", "seconds"]
    assert set(required) <= set(front.columns) and len(front) == 4
    ok = front[front["status"] == "optimal"]
    assert len(ok) >= 2 and (ok["gap"] <= ok["param"].str[4:].astype(float) + 1e-9).all()
    assert (ok["selected"].str.split(";").map(lambda s: len(set(s))) == K).all()
    assert (front.loc[front["status"] != "optimal", "status"] == "infeasible").all()
    page = (out / "front.html").read_text()
    assert '"name":"eps"' in page and "<script src=" not in page


@pytest.mark.parametrize("method", ["weighted", "maxmin", "nsga2", "exhaustive"])
def test_sweep_other_methods(method, stats, tmp_path, capsys):
    out = tmp_path / method
    code, _, err = run(
        ["sweep", "--stats", stats, "--k", K, "--method", method, "--out", out], capsys
    )
    assert code == 0, err
    front = pd.read_csv(out / "front.csv")
    assert (front["method"] == method).all() and len(front) >= 1
    assert f'"name":"{method}"' in (out / "front.html").read_text()


def test_sweep_exhaustive_other_objectives(stats, tmp_path, capsys):
    out = tmp_path / "uw"
    argv = ["sweep", "--stats", stats, "--k", K, "--method", "exhaustive"]
    code, _, err = run([*argv, "--objectives", "utility,worst", "--out", out], capsys)
    assert code == 0, err
    front = pd.read_csv(out / "front.csv").sort_values("utility", ascending=False)
    assert (front["param"] == "utility,worst").all()
    assert (front["worst"].diff().dropna() > 0).all()  # higher U costs worst-domain utility
    assert "worst(S) = min_d U_d" in (out / "front.html").read_text()


def test_solve_prints_json_and_a_summary(stats, capsys):
    argv = ["solve", "--stats", stats, "--k", K, "--method", "maxmin", "--delta", "2"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["method"] == "maxmin" and res["status"] == "optimal" and res["round"] == 1
    assert len(res["selected"]) == K and res["param"] == "delta=2"
    assert err.strip().startswith("maxmin delta=2: optimal, U=")
    code, out, err = run([*argv, "--json"], capsys)
    assert json.loads(out)["selected"] == res["selected"] and err == ""


def test_solve_weighted_composite(stats, table, capsys):
    argv = ["solve", "--stats", stats, "--k", K, "--method", "weighted", "--json"]
    code, out, _ = run([*argv, "--composite", "0,0,1"], capsys)
    assert code == 0
    last = table[table["round"] == 1]
    top_r = last.nlargest(K, last[[c for c in last if c.startswith("U_")]].mean().idxmin())
    assert set(json.loads(out)["selected"]) == set(top_r["client_id"])
    code, _, err = run([*argv, "--weights", "1", "--composite", "1,1,1"], capsys)
    assert code == 2 and "not both" in err


def test_solve_infeasible_is_a_status_and_exit_code_1(stats, capsys):
    code, out, err = run(
        ["solve", "--stats", stats, "--k", K, "--method", "eps", "--eps", "0"], capsys
    )
    assert code == 1 and json.loads(out)["status"] == "infeasible"
    assert "no selection" in err and "Traceback" not in err


def test_compare_writes_table_fronts_and_html(stats, tmp_path, capsys):
    out = tmp_path / "cmp"
    code, printed, err = run(["compare", "--stats", stats, "--k", K, "--out", out], capsys)
    assert code == 0, err
    table = pd.read_csv(out / "compare.csv")
    assert table["method"].tolist() == [
        "weighted",
        "eps",
        "eps-rel",
        "maxmin",
        "fisher-fair",
        "nsga2",
        "exhaustive",
    ]
    assert table["hv_ratio"].between(0, 1 + 1e-9).all() and (table["igd"] >= 0).all()
    assert (table["on_front"] <= table["points"]).all()
    assert table.set_index("method").loc["eps", "hv_ratio"] == pytest.approx(1.0)
    fronts = pd.read_csv(out / "fronts.csv")
    assert set(fronts["method"]) == set(table["method"])
    assert "hv_ratio" in printed and "exhaustive" in printed
    assert '"name":"reference front"' in (out / "compare.html").read_text()


def test_sweep_says_which_points_the_time_limit_stopped(tmp_path, capsys):
    from selection.synthetic import near_tied_stats

    path = tmp_path / "near_tied.csv"
    near_tied_stats(100).to_csv(path, index=False)
    out = tmp_path / "front"
    argv = ["sweep", "-s", str(path), "-k", "10", "-m", "eps", "--backend", "cbc"]
    code, _, err = run([*argv, "--time-limit", "0.3", "-o", str(out)], capsys)
    assert code == 0, err
    front = pd.read_csv(out / "front.csv")
    n = int((front["status"] == "time_limit").sum())
    assert n > 0
    assert f"{n} of {len(front)} points stopped at the time limit" in err
    assert "may miss points near them" in err
    assert "not a proven optimum" in (out / "front.html").read_text()


def _write_logits(table: pd.DataFrame, folder: Path, rnd: int) -> None:
    import numpy as np

    from selection.logits import ValidationLogits, logits_path, write_logits

    part = table[table["round"] == rnd]
    doms = sorted(part["domain"].unique())
    rng = np.random.default_rng(rnd)
    S = 40
    lg = ValidationLogits(
        rnd,
        part["client_id"].to_numpy(str),
        rng.normal(size=(len(part), S, 10)).astype(np.float16),
        rng.integers(0, 10, S),
        np.arange(S) % len(doms),
        tuple(doms),
    )
    write_logits(lg, logits_path(folder, rnd))


def test_surrogates_through_the_cli(stats, table, tmp_path, capsys):
    code, out, err = run(
        ["solve", "-s", stats, "-k", K, "-m", "maxmin", "--delta", 2, "--surrogate", "ensemble"],
        capsys,
    )
    assert code == 2 and "needs the round's validation logits" in err and "Traceback" not in err
    _write_logits(table, stats.parent, 1)  # logits/ beside the table: found without --logits
    code, out, err = run(
        ["solve", "-s", stats, "-k", K, "-m", "maxmin", "--delta", 2, "--surrogate", "ensemble",
         "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["surrogate"] == "ensemble"
    code, out, err = run(
        ["solve", "-s", stats, "-k", K, "-m", "eps", "--eps", "5", "--surrogate", "ensemble",
         "--backend", "cbc"],
        capsys,
    )  # fmt: skip
    assert code == 2 and "black-box: the cbc MILP route cannot take it" in err
    code, _, err = run(["solve", "-s", stats, "-k", K, "-m", "eps"], capsys)  # no silent ε = ∞
    assert code == 2 and "--method eps needs --eps E" in err
    for sur in ("weighted", "ensemble"):
        code, _, err = run(
            ["sweep", "-s", stats, "-k", K, "-m", "eps", "--eps", "5,20", "--surrogate", sur,
             "-o", tmp_path / sur],
            capsys,
        )  # fmt: skip
        assert code == 0, err
        front = pd.read_csv(tmp_path / sur / "front.csv")
        assert (front["surrogate"] == sur).all()


def test_grid_reaches_any_formulations_parameter(tmp_path, capsys):
    """--grid PARAM=values: eps-rel's α grid through sweep and compare, refused where no
    formulation has that parameter."""
    stats = "results/examples/stats.csv"
    code, _, err = run(["sweep", "-s", stats, "-k", 5, "-m", "eps-rel", "--grid", "alpha=0,0.5",
                        "-o", tmp_path / "s"], capsys)  # fmt: skip
    assert code == 0, err
    front = pd.read_csv(tmp_path / "s" / "front.csv")
    assert front["param"].tolist() == ["alpha=0", "alpha=0.5"]
    code, _, err = run(["compare", "-s", stats, "-k", 5, "--grid", "alpha=0,1", "--delta", "0",
                        "-o", tmp_path / "c"], capsys)  # fmt: skip
    assert code == 0, err
    fronts = pd.read_csv(tmp_path / "c" / "fronts.csv")
    assert sorted(fronts.loc[fronts["method"] == "eps-rel", "param"].unique()) == [
        "alpha=0", "alpha=1"]  # fmt: skip
    for bad, needle in ((["--grid", "alpha=0.5"], "'alpha' is not a parameter here"),
                        (["--grid", "alpha"], "write PARAM=values"),
                        (["--grid", "eps=5", "--eps", "5"], "give --eps or --grid eps")):  # fmt: skip
        code, _, err = run(["sweep", "-s", stats, "-k", 5, "-m", "eps", *bad, "-o",
                            tmp_path / "b"], capsys)  # fmt: skip
        assert code == 2 and needle in err, err


def test_compare_refuses_a_parameter_given_twice(stats, tmp_path, capsys):
    base = ["compare", "--stats", stats, "--k", K, "--out", tmp_path / "c"]
    for extra, name in ((["--grid", "delta=0,2", "--delta", "1"], "delta"),
                        (["--grid", "eps=5", "--eps", "5"], "eps")):  # fmt: skip
        code, _, err = run([*base, *extra], capsys)
        assert code == 2 and f"give --{name} or --grid {name}=…, not both" in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("command", "written"),
    [
        (["sweep", "--method", "eps", "--eps", "1000"], "front.csv"),
        (["compare", "--eps", "5", "--delta", "2"], "compare.csv"),
    ],
)
def test_a_report_writer_keeps_an_earlier_run_unless_told(stats, tmp_path, capsys, command,
                                                          written):  # fmt: skip
    """sweep and compare refuse a folder holding an earlier run's files (exit 2, one line,
    the files untouched) and replace them with --overwrite."""
    out = tmp_path / "out"
    args = [*command, "--stats", stats, "--k", K, "--out", out, "--no-progress"]
    assert run(args, capsys)[0] == 0
    before = (out / written).read_bytes()
    code, _, err = run(args, capsys)
    assert code == 2 and "pass --overwrite" in err and len(err.strip().splitlines()) == 1
    assert (out / written).read_bytes() == before
    assert run([*args, "--overwrite"], capsys)[0] == 0


def test_analyze_keeps_an_earlier_analysis_unless_told(stats, tmp_path, capsys):
    """fedsel analyze replaced an earlier analysis in --out silently (exit 0); it refuses as
    sweep and compare do, before any work, and replaces with --overwrite."""
    out = tmp_path / "an"
    args = ["analyze", "--stats", stats, "--out", out, "--boot", 0]
    assert run(args, capsys)[0] == 0
    before = (out / "analysis.json").read_bytes()
    code, _, err = run(args, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "holds per_round.csv from an earlier fedsel analyze; pass --overwrite" in err
    assert (out / "analysis.json").read_bytes() == before
    assert run([*args, "--overwrite"], capsys)[0] == 0


def test_highs_prints_no_banner(stats):
    """A fresh process solving on HiGHS writes no copyright banner on either stream."""
    import os
    import subprocess
    import sys

    from helpers import PYTHONPATH, ROOT

    code = (
        f"from fl_oracle.cli import main; main(['solve', '--stats', r'{stats}', '--k', '5', "
        "'--method', 'eps', '--eps', '30', '--backend', 'highs'])"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": PYTHONPATH})  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    assert "HiGHS" not in r.stderr and "HiGHS" not in r.stdout
    assert r.stdout.lstrip().startswith("{")  # the JSON is whole
