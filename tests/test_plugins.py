"""Plugins from outside the package: the toy package of ``tests/plugins/toy-fedsel`` (a
formulation and a baseline rule declared as entry points) installed with pip into a folder
of its own, then fedsel run in child processes that have that folder on their path: the
plugins show in ``fedsel methods`` and run in ``solve``, ``train`` and a study's run
processes; a plugin that fails to load is one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from helpers import PYTHONPATH, ROOT

TOY = ROOT / "tests" / "plugins" / "toy-fedsel"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The toy package installed (pip, no network: the venv's setuptools builds it)."""
    target = tmp_path_factory.mktemp("plugins") / "site"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(TOY)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if r.returncode != 0:
        pytest.skip(f"pip cannot build the toy plugin here: {r.stderr.strip()[-300:]}")
    assert (target / "toy_fedsel-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def fedsel(args, site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((PYTHONPATH, str(site)))}
    return subprocess.run(
        [sys.executable, "-c", "from fl_oracle.cli import main; main()", *map(str, args)],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=600,
    )  # fmt: skip


def test_the_plugins_are_listed(site, tmp_path):
    r = fedsel(["methods"], site, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "toy-top:D" in r.stdout and "top-K by U − δ·B (a plugin)" in r.stdout
    assert "toy-lowest-b:m" in r.stdout
    assert "toy-lowest-b     fedsel.baselines     toy_fedsel.rule:LowestDivergence" in r.stdout
    assert "(package toy-fedsel)" in r.stdout


def test_a_plugin_formulation_solves(site, tmp_path):
    from selection.problem import SelectionProblem
    from selection.synthetic import synthetic_stats

    stats = synthetic_stats(12, seed=3)
    stats.to_csv(tmp_path / "stats.csv", index=False)
    r = fedsel(["solve", "--stats", "stats.csv", "--k", 3, "--method", "toy-top", "--delta", 1,
                "--json"], site, tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    import json

    got = json.loads(r.stdout)["selected"]
    p = SelectionProblem.from_stats(stats, 3)
    want = p.ids[(-(p.U - 1.0 * p.B)).argsort(kind="stable")[:3]]
    assert sorted(got) == sorted(str(i) for i in want)


def test_plugins_train_and_run_in_a_study(site, tmp_path):
    from fl_oracle.sim.data.shapes import write_shapes

    folder = write_shapes(tmp_path / "shapes", per_class=6, size=24, classes=("circle", "square"))
    for sel in ("toy-lowest-b:0", "toy-top:1"):
        out = tmp_path / sel.replace(":", "_")
        r = fedsel(["train", "--dataset", folder, "--selector", sel, "-k", 2, "-r", 2, "-o", out,
                    "--threads", 1, "--no-progress"], site, tmp_path)  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert len(pd.read_csv(out / "history.csv")) == 2
    # the study's run processes find them too (each process loads the entry points)
    out = tmp_path / "study"
    r = fedsel(["study", "--dataset", folder, "--selectors", "proportional,toy-lowest-b:0",
                "--seeds", 1, "--rounds", 1, "--k", 2, "--workers", 2, "--out", out,
                "--no-progress"], site, tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    h = pd.read_csv(out / "history.csv")
    assert set(h["entry"]) == {"proportional", "toy-lowest-b:0"}


def test_a_broken_plugin_is_one_line(tmp_path):
    site = tmp_path / "site"
    info = site / "broken_fedsel-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-fedsel\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[fedsel.formulations]\nbroken = no_such_module_q\n")
    r = fedsel(["methods"], site, tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "plugin 'broken' (fedsel.formulations, package broken-fedsel) failed to load" in lines[0]
