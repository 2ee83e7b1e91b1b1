"""The command line's guidance and conventions: the reachable ε range, the optional
constraints, planes, one front per round, --version, no blank lines."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from selection.synthetic import synthetic_stats

from helpers import ROOT
from helpers.cli import run_fedsel as run

EXAMPLE = ROOT / "results" / "examples" / "stats.csv"


@pytest.fixture(scope="module")
def stats3(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("s") / "stats.csv"
    synthetic_stats(14, seed=3, rounds=3).to_csv(path, index=False)
    return path


def test_infeasible_eps_says_the_reachable_range(capsys):
    code, out, err = run(["solve", "-s", EXAMPLE, "-k", 5, "-m", "eps", "--eps", 5], capsys)
    assert code == 1  # no selection
    rng = json.loads(out)["reachable"]
    assert rng["min_gap"] == pytest.approx(17.3529, abs=1e-3)
    assert rng["min_gap"] <= rng["max_gap"] and rng["u_star"] > 0
    lines = err.strip().splitlines()
    lowest = rng["grid"].split(",")[0]
    assert "17.35 pp" in lines[-1] and f"try --eps {lowest}, or fedsel sweep --eps " in lines[-1]
    # the suggested grid is inside the range: every point of it is feasible
    _, out, _ = run(["solve", "-s", EXAMPLE, "-k", 5, "-m", "eps", "--eps", lowest], capsys)
    assert json.loads(out)["status"] == "optimal"


def test_sweep_with_an_infeasible_grid_suggests_one(tmp_path, capsys):
    argv = ["sweep", "-s", EXAMPLE, "-k", 5, "-m", "eps", "--eps", "0,2,5,10", "-o", tmp_path]
    code, _, err = run(argv, capsys)
    assert code == 1 and "4 of 4 ε infeasible" in err and "try --eps" in err
    assert not err.startswith("\n")


def test_constraints_reach_the_solver(capsys):
    base = ["solve", "-s", EXAMPLE, "-k", 5, "-m", "eps", "--eps", 40]
    _, out, _ = run(base, capsys)
    free = json.loads(out)["objectives"]
    _, out, _ = run([*base, "--fisher-min", free["sum_Fz"] + 0.5], capsys)
    r = json.loads(out)
    assert r["status"] == "infeasible" or r["objectives"]["sum_Fz"] >= free["sum_Fz"] + 0.5 - 1e-9
    _, out, _ = run([*base, "--b-max", free["sum_B"] * 0.9], capsys)
    r = json.loads(out)
    assert r["status"] == "infeasible" or r["objectives"]["sum_B"] <= free["sum_B"] * 0.9 + 1e-9


def test_maxmin_is_drawn_in_its_plane_and_compare_judges_in_any(tmp_path, capsys):
    run(["sweep", "-s", EXAMPLE, "-k", 5, "-m", "maxmin", "-o", tmp_path / "m"], capsys)
    page = (tmp_path / "m" / "front.html").read_text()
    assert '"xaxis":{"title":{"text":"worst(S)' in page
    code, _, _ = run(
        ["compare", "-s", EXAMPLE, "-k", 5, "--objectives", "utility,worst", "-o", tmp_path / "c"],
        capsys,
    )
    assert code == 0
    table = pd.read_csv(tmp_path / "c" / "compare.csv")
    # in (U, worst) the exact front is enumeration's and max-min's points lie on it
    mm = table.set_index("method").loc["maxmin"]
    assert mm["on_front"] == mm["points"]
    assert "hv_ratio" in (tmp_path / "c" / "compare.html").read_text()


def test_sweep_over_rounds_writes_one_front_per_round(stats3, tmp_path, capsys):
    code, _, err = run(
        ["sweep", "-s", stats3, "-k", 4, "-m", "maxmin", "--delta", "0,2", "--per-round", "all", "-o",
         tmp_path],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    front = pd.read_csv(tmp_path / "front.csv")
    assert sorted(front["round"].unique()) == [0, 1, 2]
    assert (front.groupby("round").size() == 2).all()
    page = (tmp_path / "front.html").read_text()
    assert all(f'"name":"round {r}"' in page for r in range(3))
    code, _, _ = run(
        [
            "sweep",
            "-s",
            stats3,
            "-k",
            4,
            "-m",
            "weighted",
            "--per-round",
            "1-2",
            "-o",
            tmp_path / "w",
        ],
        capsys,
    )
    assert sorted(pd.read_csv(tmp_path / "w" / "front.csv")["round"].unique()) == [1, 2]


def test_version_flag_and_command(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("fedsel ")
    code, out2, _ = run(["version"], capsys)
    assert out2 == out


@pytest.mark.parametrize("eps", ["0", "0,0.1", "0,0.05,0.1"])
def test_a_sweep_with_no_feasible_point_exits_1_as_solve_does(eps, tmp_path, capsys):
    """Nothing feasible at any point is no answer: exit 1 (it exited 0) after the front and
    the reachable range are written and told, as fedsel solve exits 1 with no selection."""
    from selection.example import example_stats

    stats = tmp_path / "stats.csv"
    example_stats().to_csv(stats, index=False)
    base = ["sweep", "--stats", stats, "--k", "5", "--method", "eps", "--no-progress"]
    code, _, err = run([*base, "--eps", eps, "--out", tmp_path / "sw"], capsys)
    assert code == 1 and "no feasible point" in err, err
    assert (tmp_path / "sw" / "front.csv").is_file()
    code, _, err = run([*base, "--eps", f"{eps},100", "--out", tmp_path / "sw2"], capsys)
    assert code == 0, err  # one feasible point is an answer


def test_solve_json_carries_no_float_noise(tmp_path, capsys):
    """Every float of fedsel solve's JSON reads as its 12 significant digits (no
    24.673088800000002): the class of value, checked on every number of the record."""
    from selection.example import example_stats

    stats = tmp_path / "stats.csv"
    example_stats().to_csv(stats, index=False)
    for eps in ("20", "25", "40"):
        code, out, err = run(["solve", "--stats", stats, "--k", "5", "--method", "eps",
                              "--eps", eps, "--json"], capsys)  # fmt: skip
        record = json.loads(out)
        numbers = [*record["objectives"].values(), record["bound"]]
        assert code == 0 and numbers and all(v == float(f"{v:.12g}") for v in numbers)
