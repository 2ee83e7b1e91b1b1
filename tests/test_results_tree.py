"""The tracked tree stays small enough to carry (≤ 30 MB), and its reports still open offline:
one shared plotly.js (``results/fedsel-assets/``), which every committed report loads by a
relative path that resolves."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT

LIMIT = 30_000_000


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.decode().split("\0") if p]


def test_the_tracked_tree_is_at_most_30_mb():
    files = [p for p in _tracked() if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    biggest = max(files, key=lambda p: p.stat().st_size)
    assert total <= LIMIT, f"{total / 1e6:.1f} MB tracked; the largest: {biggest}"


def test_no_tracked_file_is_over_2_mb():
    big = [p for p in _tracked() if p.is_file() and p.stat().st_size > 2_000_000]
    assert big == []


def test_committed_reports_share_one_plotly_and_it_resolves():
    """Each committed report loads the tree's one bundle by a relative path: the file
    ensure_bundle writes (make does, before the tests), never an inlined or other copy."""
    from selection.plotly_js import ASSETS, ensure_bundle

    bundle = ensure_bundle(ROOT / "results" / ASSETS).resolve()
    reports = [p for p in _tracked() if p.suffix == ".html" and "results" in p.parts]
    assert reports
    for p in reports:
        text = p.read_text(encoding="utf-8")
        assert len(text) < 2_000_000, f"{p} inlines plotly.js"
        src = re.findall(r"<script src='([^']*plotly[^']*\.js)'", text)
        assert len(src) == 1, f"{p}: {len(src)} plotly scripts"
        assert (p.parent / src[0]).resolve() == bundle, f"{p}: {src[0]} is not the bundle"


def test_no_run_file_or_csv_history_of_a_committed_study_is_tracked():
    """A committed study keeps history.parquet; its run files come back from it."""
    tracked = {p.relative_to(ROOT).as_posix() for p in _tracked()}
    runs = [p for p in tracked if "/runs/" in p and p.endswith(".csv")]
    assert runs == []
    for p in tracked:
        grid = p.replace("study.toml", "grid.md") in tracked  # a grid's settings, no runs
        if p.endswith("/study.toml") and p.startswith("results/") and not grid:
            assert p.replace("study.toml", "history.parquet") in tracked, p
