"""Grid studies: parsing (bad grids in one line, exit 2, before any training), cells, the
sequential design, resume after a kill, growth, and the map's values against the cells' own
verdicts."""

from __future__ import annotations

import pandas as pd
import pytest

from fl_oracle.experiments.study.grid import GridSettings, confirm_settings, is_grid
from fl_oracle.experiments.study.grid_map import leads

from helpers import fake_oracle as fake

BASE = 'seeds = 2\nrounds = 2\nk = 2\nselectors = ["proportional", "random", "eps-lt:5@probe"]\n'


def test_a_product_and_a_union_of_products():
    g = GridSettings.from_toml(BASE + "[grid]\nk = [2, 3]\ndirichlet_alpha = ['none', 0.5]\n")
    assert [c.slug for c in g.cells] == [
        "k2-alphanone",
        "k2-alpha0.5",
        "k3-alphanone",
        "k3-alpha0.5",
    ]
    assert g.cells[1].settings.oracle["dirichlet_alpha"] == 0.5
    assert "dirichlet_alpha" not in g.cells[0].settings.oracle  # the default is not written
    assert g.cells[2].settings.k == 3
    u = GridSettings.from_toml(
        BASE + "[[grid]]\nk = [2, 3]\n[[grid]]\nsize_sigma = [1.0]\n[[grid]]\nk = [2]\n"
        "clients_per_domain = [10]\n"
    )
    # every axis of every table in each cell; a table's unnamed axes keep the study's value
    assert [c.slug for c in u.cells] == ["k2-sigma0-cpd5", "k3-sigma0-cpd5", "k2-sigma1-cpd5",
                                         "k2-sigma0-cpd10"]  # fmt: skip
    assert u.cells[3].settings.oracle["clients_per_domain"] == 10
    assert u.axes == ["k", "size_sigma", "clients_per_domain"]
    # written and read back to equal settings
    assert GridSettings.from_toml(u.to_toml()) == u
    assert GridSettings.from_toml(g.to_toml()) == g
    assert is_grid(u.to_toml()) and not is_grid(BASE)


def test_sizes_axis_as_in_the_cli():
    g = GridSettings.from_toml(
        BASE + "[grid]\nsamples_per_client = ['mnist=60,usps=7,svhn=70,syn=10', 20]\n"
    )
    assert g.cells[0].settings.oracle["samples_per_client"] == {
        "mnist": 60,
        "usps": 7,
        "svhn": 70,
        "syn": 10,
    }
    assert g.cells[1].settings.oracle["samples_per_client"] == 20


@pytest.mark.parametrize(
    ("grid", "says"),
    [
        ("[grid]\nkk = [2]\n", "'kk' is not an axis"),
        ("[grid]\nk = 2\n", "must be a non-empty list"),
        ("[grid]\nk = []\n", "must be a non-empty list"),
        ("[grid]\nk = [2, 2]\n", "lists a value twice"),
        ("[grid]\nk = [2, 30]\n", "grid cell k=30: exceeds the 20 clients$"),
        ("[grid]\nk = ['two']\n", "must be an integer"),
        ("[grid]\nsize_sigma = [-1.0]\n", "grid cell size_sigma=-1: must be"),
        ("[grid]\nsamples_per_client = ['mnist=x']\n", "neither a number"),
        ("[grid]\n", "names no axis"),
        ("grid = 3\n", "must be a table"),
        ("confirm_seeds = -1\n[grid]\nk = [2]\n", "confirm_seeds"),
        ("confirm_first_seed = 1\n[grid]\nk = [2]\n", "overlap"),
        ("[grid]\nk = [[2]]\n", "must be an integer"),
    ],
)
def test_bad_grids_are_one_line(grid, says):
    text = BASE + grid if not grid.startswith(("grid =", "confirm")) else grid + BASE
    if grid.startswith("confirm"):
        head, _, rest = grid.partition("\n")
        text = head + "\n" + BASE + rest
    with pytest.raises(ValueError, match=says) as exc:
        GridSettings.from_toml(text)
    assert "\n" not in str(exc.value)


def test_bad_grid_exits_2_before_any_training(tmp_path, capsys):
    pytest.importorskip("fl_oracle.sim.oracle")
    from fl_oracle.cli import main

    cfg = tmp_path / "g.toml"
    cfg.write_text(BASE + "[grid]\ndirichlet_alpha = [0.5, -2.0]\n")
    with pytest.raises(SystemExit) as exc:
        main(["study", "--config", str(cfg), "--out", str(tmp_path / "g")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "alpha" in err
    assert not (tmp_path / "g" / "cells").exists()


def _run(tmp_path, monkeypatch, argv):
    import fl_oracle.cli.study as cli_study
    from fl_oracle.cli import main
    from fl_oracle.experiments.runner import OracleFactory

    data = fake.tiny_data()
    axes = ("dirichlet_alpha", "size_sigma")
    monkeypatch.setattr(
        cli_study, "study_factory",
        lambda o: OracleFactory({**fake.tiny_overrides(), **{a: o[a] for a in axes if a in o}}, data),
    )  # fmt: skip
    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        assert exc.code in (0, None)


GRID = (
    "seeds = 2\nrounds = 2\nk = 2\nbootstrap = 200\nconfirm_seeds = 2\n"
    'selectors = ["proportional", "random", "fisher-topk", "eps-lt:5@stale"]\n'
    "[oracle]\nclients_per_domain = 2\n"
    "[grid]\nk = [2, 3]\ndirichlet_alpha = ['none', 0.5]\n"
)


def test_a_grid_runs_resumes_grows_and_maps(tmp_path, monkeypatch, capsys):
    pytest.importorskip("fl_oracle.sim.oracle")
    # two tiny rounds: every rule that probes, and stale's first round of reports, cost more
    # than 1.25x proportional here; the budget is widened so the map has leaders to test
    monkeypatch.setattr("fl_oracle.experiments.study.grid_map.BUDGET", 10.0)
    cfg = tmp_path / "grid.toml"
    cfg.write_text(GRID)
    out = tmp_path / "g"
    _run(tmp_path, monkeypatch, ["study", "--config", cfg, "--out", out, "--workers", "1",
                                 "--no-progress"])  # fmt: skip
    grid = GridSettings.from_toml((out / "study.toml").read_text())
    table = pd.read_csv(out / "grid.csv", keep_default_na=False)
    assert list(table["cell"]) == [c.slug for c in grid.cells] and len(table) == 4
    assert (out / "map.html").is_file() and (out / "grid.md").is_file()
    from fl_oracle.experiments.study.assembly import finish_study

    for cell, row in zip(grid.cells, table.itertuples(), strict=True):
        folder = out / "cells" / cell.slug
        assert (folder / "report.html").is_file()
        h = pd.read_csv(folder / "history.csv")
        assert set(h["k"]) == {cell.settings.k} and h["seed"].nunique() == 2
        # the map's values are the cell's own: its dominance table's pair, its metrics' means
        res = finish_study(cell.settings, folder)
        lead = leads(res)["worst"]
        assert row.worst_leader == lead.leader == "eps-lt:5@stale"
        m = pd.read_csv(folder / "metrics.csv").groupby("entry")["final_worst"].mean()
        base = ["proportional", "random", "fisher-topk"]
        assert row.worst_best_baseline == max(base, key=lambda b: m[b])
        assert row.worst_diff == pytest.approx(m[lead.leader] - m[row.worst_best_baseline])
        d = pd.read_csv(folder / "dominance.csv").set_index(["entry", "baseline"])
        pair = d.loc[(lead.leader, row.worst_best_baseline)]
        assert row.worst_ci_lo == pytest.approx(pair["final_worst_ci_lo"])
        assert row.worst_ci_hi == pytest.approx(pair["final_worst_ci_hi"])
        # a leader ahead on the screen is confirmed (or not) on held-out seeds 100-101 only
        conf = folder / "confirm"
        assert conf.is_dir() == (row.worst_diff > 0 or row.avg_diff > 0)
        if conf.is_dir():
            hc = pd.read_csv(conf / "history.csv")
            assert set(hc["seed"]) == {100, 101}
            assert set(hc["entry"]) >= {"proportional", "random", "fisher-topk"}
            assert row.worst_status in ("confirmed", "not confirmed") or row.worst_diff <= 0
        else:
            assert row.worst_status == "baselines lead"
    first = (out / "grid.csv").read_bytes()
    # resume: the same command after a lost run redoes only that run, to identical tables
    victim = next((out / "cells").glob("*/runs/random/seed01.csv"))
    victim.unlink()
    _run(tmp_path, monkeypatch, ["study", "--out", out, "--workers", "1", "--no-progress"])
    assert (out / "grid.csv").read_bytes() == first
    # another grid in the same folder is refused without --grow; --grow adds a cell
    cfg.write_text(GRID.replace("k = [2, 3]", "k = [2, 3, 4]"))
    capsys.readouterr()
    import fl_oracle.cli.study  # noqa: F401
    from fl_oracle.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["study", "--config", str(cfg), "--out", str(out), "--workers", "1"])
    assert exc.value.code == 2 and "--grow" in capsys.readouterr().err
    before = {p: p.stat().st_mtime_ns for p in (out / "cells").glob("*/runs/*/*.csv")}
    _run(tmp_path, monkeypatch, ["study", "--config", cfg, "--out", out, "--workers", "1",
                                 "--no-progress", "--grow"])  # fmt: skip
    assert {p: p.stat().st_mtime_ns for p in before} == before  # nothing finished ran again
    t2 = pd.read_csv(out / "grid.csv", keep_default_na=False)
    assert len(t2) == 6 and {"k4-alphanone", "k4-alpha0.5"} <= set(t2["cell"])
    html = (out / "map.html").read_text()
    assert "cells/k4-alpha0.5/report.html" in html and "plotly_click" in html


def test_confirmation_runs_every_baseline_against_the_leaders():
    g = GridSettings.from_toml(BASE.replace("seeds = 2", "seeds = 3") + "[grid]\nk = [2]\n")
    held = confirm_settings(g, g.cells[0], ["eps-lt:5@probe"])
    assert held.selectors == ("proportional", "random", "eps-lt:5@probe")
    assert (held.first_seed, held.seeds) == (100, 5)
    assert (held.k, held.rounds, held.oracle) == (2, 2, g.cells[0].settings.oracle)


def test_the_leader_is_an_affordable_formulation(tmp_path, monkeypatch):
    """At the real budget, tiny runs' stale formulation (3x proportional's compute) leads
    nothing: no cell has a lead, and the map says so."""
    pytest.importorskip("fl_oracle.sim.oracle")
    cfg = tmp_path / "grid.toml"
    cfg.write_text(GRID.replace("[grid]\nk = [2, 3]", "[grid]\nk = [2]").replace(", 0.5]", "]"))
    out = tmp_path / "g"
    _run(tmp_path, monkeypatch, ["study", "--config", cfg, "--out", out, "--workers", "1",
                                 "--no-progress"])  # fmt: skip
    table = pd.read_csv(out / "grid.csv", keep_default_na=False)
    assert len(table) == 1 and "worst_leader" not in table.columns
    assert not (out / "cells" / "k2-alphanone" / "confirm").exists()


@pytest.mark.slow
@pytest.mark.cluster
def test_a_grid_on_ray_equals_the_local_pool(tmp_path, monkeypatch):
    """--executor ray (a local Ray instance) runs every cell's runs as Ray tasks; the grid's
    table equals the local pool's."""
    pytest.importorskip("ray")
    pytest.importorskip("fl_oracle.sim.oracle")
    monkeypatch.setattr("fl_oracle.experiments.study.grid_map.BUDGET", 10.0)
    cfg = tmp_path / "grid.toml"
    cfg.write_text(GRID.replace("k = [2, 3]", "k = [2]"))
    tables = []
    for executor in ("local", "ray"):
        out = tmp_path / executor
        _run(tmp_path, monkeypatch, ["study", "--config", cfg, "--out", out, "--workers", "1",
                                     "--no-progress", "--executor", executor])  # fmt: skip
        tables.append(pd.read_csv(out / "grid.csv", keep_default_na=False))
    assert len(tables[0]) == 2
    pd.testing.assert_frame_equal(tables[0], tables[1])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("rounds = 3", "rounds"),
        ('selectors = ["random", "proportional"]', "selectors"),
        ('selectors = ["proportional"]', "selectors"),
    ],
)
def test_a_refused_grow_leaves_the_grid_as_it_was(tmp_path, change, why):
    """--grow with other rounds, entries reordered or dropped is refused before study.toml is
    rewritten, so the stored grid (and its command) can still continue."""
    from fl_oracle.experiments.study.grid import GridSettings
    from fl_oracle.experiments.study.grid_run import check_stored_grid

    base = 'seeds = 2\nrounds = 2\nk = 2\nselectors = ["proportional", "random"]\n'
    grid = GridSettings.from_toml(base + "[grid]\nk = [2, 3]\n")
    check_stored_grid(grid, tmp_path, grow=False)
    before = (tmp_path / "study.toml").read_text()
    lines = [x for x in base.splitlines() if not x.startswith(change.split(" ")[0])]
    other = GridSettings.from_toml("\n".join([*lines, change]) + "\n[grid]\nk = [2, 3, 4]\n")
    with pytest.raises(ValueError, match=why):
        check_stored_grid(other, tmp_path, grow=True)
    assert (tmp_path / "study.toml").read_text() == before
