"""The versioned documentation site: ``make docs`` deploys this version with ``mike``.

``mike`` keeps every deployed version's site, built as it was, in a git branch
(``gh-pages`` by default, local: nothing is pushed). This script

1. deploys the current sources as the version ``MAJOR.MINOR`` of ``pyproject.toml``
   (``--version`` to choose another), aliased ``latest`` (the alias moves to the newest
   deploy), and makes ``latest`` the default, so the site's root redirects there;
2. exports the branch, every version deployed so far, into ``--out`` (``site/`` from
   ``make docs``): ``site/<version>/``, ``site/latest/``, ``site/versions.json``, which the
   theme's version selector reads. Written beside and renamed into place, so a failed build
   leaves the previous site whole.

During ``mike``'s build ``MIKE_DOCS_VERSION`` is set and ``docs/hooks.py`` turns the theme's
version selector on; a plain ``mkdocs build`` (the tests', one version, readable from disk)
has no selector, whose ``../versions.json`` request a page opened from disk cannot make.
The selector needs the site served (``mike serve --branch gh-pages``, or any static server
on ``site/``).

    python docs/versions.py [--version 0.2] [--branch gh-pages] [--out site] [--git-dir DIR]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALIAS = "latest"


def project_version(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The docs version of a release: ``MAJOR.MINOR`` of ``[project].version`` (0.1.0 -> 0.1)."""
    version = tomllib.loads(pyproject.read_text())["project"]["version"]
    return ".".join(version.split(".")[:2])


def _git_identity(env: dict[str, str]) -> dict[str, str]:
    """A committer for the docs branch where git has none configured (a fresh CI clone)."""
    found = {}
    for key, var, fallback in (
        ("user.name", "GIT_COMMITTER_NAME", "fedsel docs"),
        ("user.email", "GIT_COMMITTER_EMAIL", "docs@fedsel.invalid"),
    ):
        known = subprocess.run(
            ["git", "config", key], capture_output=True, text=True, env=env, cwd=ROOT
        )
        if not env.get(var) and (known.returncode != 0 or not known.stdout.strip()):
            found[var] = fallback
    return found


def _mike(*args: str, env: dict[str, str]) -> None:
    script = Path(sys.executable).with_name("mike")  # the console script of this environment
    cmd = [str(script) if script.exists() else "mike", *args]
    # from the sources' root: the site's snippets are read relative to it
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"error: mike {args[0]} failed: {tail[0]}")


def export(branch: str, out: Path, env: dict[str, str]) -> None:
    """Every version on ``branch`` into ``out``, replacing it whole (temp folder, rename)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", branch], capture_output=True, env=env, cwd=ROOT
    )
    if archive.returncode != 0:
        raise SystemExit(f"error: cannot read branch {branch!r}: {archive.stderr.decode().strip()}")
    staging = out.with_name(out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging, filter="tar")
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def deploy(version: str, branch: str, out: Path, git_dir: Path | None = None) -> None:
    """Deploy ``version`` (aliased ``latest``, the default) to ``branch`` of the repository
    (``git_dir``, else the sources'), then export it."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    env.update(_git_identity(env))
    scratch = Path(tempfile.mkdtemp(prefix="fedsel-docs-"))  # mike builds here, then commits it
    env["FEDSEL_SITE_DIR"] = str(scratch / "site")
    # mike runs `mkdocs` from PATH: this environment's first
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    common = [
        "--config-file",
        str(ROOT / "mkdocs.yml"),
        "--branch",
        branch,
        "--ignore-remote-status",
    ]
    message = f"docs {version} ({ALIAS})"
    try:
        _mike("deploy", *common, "--update-aliases", "--message", message, version, ALIAS, env=env)
        _mike("set-default", *common, ALIAS, env=env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    export(branch, out, env)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--version", default=None, help="the version deployed (MAJOR.MINOR of pyproject.toml)"
    )
    parser.add_argument(
        "--branch", default="gh-pages", help="the local branch holding every version"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "site", help="where the versioned site is written"
    )
    parser.add_argument(
        "--git-dir",
        type=Path,
        default=None,
        help="the repository holding the branch (default: the sources')",
    )
    args = parser.parse_args(argv)
    version = args.version or project_version()
    deploy(version, args.branch, args.out, args.git_dir)
    print(
        f"docs {version} ({ALIAS}) deployed to branch {args.branch}; every version in {args.out}/"
    )


if __name__ == "__main__":
    main()
