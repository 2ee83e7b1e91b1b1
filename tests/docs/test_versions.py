"""Versioned docs (``make docs`` = ``docs/versions.py``): two versions deployed with mike.

Deployed as 0.1 and then 0.2 into a scratch repository's ``gh-pages`` (the sources'
repository is left alone, through ``--git-dir``), exported to one folder: both versions are
there as built, ``latest`` follows the newer, the root redirects to it, the theme's version
selector is on in the versioned build only, and in a browser the selector lists both versions
and leads from one to the other. Skips the browser part where no chromium is installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, cdp
from helpers import docs_site as site_build

SCRIPT = ROOT / "docs" / "versions.py"


def _deploy(version: str, repo, out, home) -> subprocess.CompletedProcess:
    # HOME without a git identity: the script brings its own committer (a fresh CI clone)
    env = {**os.environ, "HOME": str(home), "PYTHONWARNINGS": "ignore"}
    env.pop("GIT_COMMITTER_NAME", None)
    env.pop("GIT_COMMITTER_EMAIL", None)
    cmd = [sys.executable, str(SCRIPT), "--version", version, "--out", str(out)]
    cmd += ["--git-dir", str(repo / ".git")]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def versioned(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("versions")
    repo, out, home = tmp / "repo", tmp / "site", tmp / "home"
    repo.mkdir()
    home.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "sources"], check=True)
    for version in ("0.1", "0.2"):
        done = _deploy(version, repo, out, home)
        assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-1000:]
        assert f"docs {version} (latest) deployed" in done.stdout
    return repo, out


def test_both_versions_stand_with_latest_on_the_newer(versioned):
    repo, out = versioned
    listed = json.loads((out / "versions.json").read_text())
    assert [(v["version"], v["aliases"]) for v in listed] == [("0.2", ["latest"]), ("0.1", [])]
    for version in ("0.1", "0.2", "latest"):
        assert (out / version / "index.html").is_file(), version
        assert (out / version / "get-started.html").is_file(), version
    assert (out / "latest").resolve() == (out / "0.2").resolve()
    assert 'url=latest/"' in (out / "index.html").read_text()
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%cn|%s", "gh-pages"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert log[0] == "fedsel docs|docs 0.2 (latest)" and log[-1] == "fedsel docs|docs 0.1 (latest)"
    assert not list(out.parent.glob("site.tmp")) and not list(out.parent.glob("site.old"))


def test_the_selector_is_on_in_the_versioned_build_only(versioned, tmp_path):
    _, out = versioned
    selector = '"version": {"default": "latest", "provider": "mike"}'
    assert selector in (out / "0.1" / "index.html").read_text()
    # a plain build (the tests', readable from disk) has none: its ../versions.json would fail
    plain = tmp_path / "plain"
    done = site_build.build(plain)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"version": null' in (plain / "index.html").read_text()


def test_a_failed_deploy_leaves_the_site_whole(versioned, tmp_path):
    _, out = versioned
    before = sorted(p.name for p in out.iterdir())
    done = _deploy("0.3", tmp_path / "not-a-repo", out, tmp_path)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: mike deploy failed"), done.stderr
    assert sorted(p.name for p in out.iterdir()) == before


_WHY = cdp.unavailable()


@pytest.mark.skipif(_WHY is not None, reason=f"browser test skipped: {_WHY}")
def test_the_selector_lists_both_versions_in_a_browser(versioned):
    _, out = versioned
    with site_build.serve(out) as url, cdp.Browser(width=1280, height=900, offline=False) as b:
        b.open(url)  # the root redirects to latest/
        b.evaluate(
            "new Promise(r => { let n = 0; const p = () => (location.pathname.includes('latest')"
            " || n++ > 50) ? r(1) : setTimeout(p, 100); p(); })",
            timeout=15,
        )
        assert "/latest/" in b.evaluate("location.pathname")
        b.open(url + "0.1/index.html")
        found = b.evaluate(
            "new Promise(r => { let n = 0; const p = () => {"
            " const items = [...document.querySelectorAll('.md-version__item a')];"
            " if (items.length || n++ > 100) r({current: (document.querySelector("
            "'.md-version__current') || {}).textContent, items: items.map(a => [a.textContent.trim(),"
            " a.getAttribute('href')])}); else setTimeout(p, 100); }; p(); })",
            timeout=20,
        )
        assert found["current"].strip() == "0.1", found
        assert [name for name, _ in found["items"]] == ["0.2", "0.1"], found
        assert b.errors() == []
