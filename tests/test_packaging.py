"""What a user installs: the wheel holds the packages, the example table and the console script
(and nothing of the repository besides), an installed fedsel runs from outside the checkout, and
the version is stated once (pyproject.toml), the CHANGELOG's newest release naming it.

The default test builds the wheel without build isolation and installs it with ``--no-deps``
into a fresh environment that sees this environment's dependencies through a ``.pth`` line (a
plain path line: the editable install's finder in that folder does not run, so ``selection`` and
``fl_oracle`` are the wheel's). The slow ones run ``make dist``'s build (isolated, sdist then
wheel) and install the wheel with its dependencies, as a user would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from helpers.cli import run_fedsel

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]
EXAMPLE = "selection/data/example_stats.csv"
# the smallest oracle run that still measures all 20 default clients
ORACLE_QUICK = [
    "oracle", "--rounds", "1", "--out", "run", "--threads", "1", "--samples-per-client", "20",
    "--val-per-domain", "10", "--local-holdout", "0", "--test-per-domain", "10",
    "--model", "cnn-small", "--fisher-samples", "8", "--device", "cpu", "--no-logits",
    "--no-progress",
]  # fmt: skip


def _run(argv, *, cwd, env, timeout=600, check=True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if check:
        assert done.returncode == 0, f"{argv}: rc {done.returncode}\n{done.stderr[-3000:]}"
    return done


def _clean_env(tmp: Path, venv: Path) -> dict[str, str]:
    """The environment of a user's shell with only ``venv`` active: own HOME and caches."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    for name in ("home", "cache", "xdg-cache", "mpl"):
        (tmp / name).mkdir(exist_ok=True)
    env.update(
        HOME=str(tmp / "home"),
        FEDSEL_CACHE=str(tmp / "cache"),
        XDG_CACHE_HOME=str(tmp / "xdg-cache"),
        MPLCONFIGDIR=str(tmp / "mpl"),
        VIRTUAL_ENV=str(venv),
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        COLUMNS="100",
    )
    return env


def _site_packages(python: Path, env) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(_run([python, "-c", code], cwd=python.parent, env=env).stdout.strip())


def _outside_checkout(path: Path) -> None:
    assert not path.resolve().is_relative_to(ROOT), f"{path} lies inside the checkout {ROOT}"


def _copy_sources(dest: Path) -> Path:
    """What the build reads (pyproject, README, the description, the two packages), without caches or a stale
    ``build/`` folder that could carry files the checkout no longer has."""
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "DESCRIPTION.md"):
        shutil.copy2(ROOT / name, dest / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for pkg in ("selection", "fl_oracle"):
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=skip)
    return dest


def _check_wheel(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert EXAMPLE in names, "the example table is not in the wheel"
    assert "fl_oracle/cli/__init__.py" in names and "selection/cli/__init__.py" in names
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = zipfile.ZipFile(wheel).read(entry).decode()
    assert re.search(r"^\[console_scripts\]\s*^fedsel = fl_oracle\.cli:main$", scripts, re.M)
    meta = zipfile.ZipFile(wheel).read(entry.replace("entry_points.txt", "METADATA")).decode()
    assert re.search(rf"^Version: {re.escape(VERSION)}$", meta, re.M)
    # the long description (DESCRIPTION.md) names nothing a package index cannot resolve
    description = meta.split("\n\n", 1)[1]
    assert "# fedsel" in description and "make test" in description
    relative = re.findall(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)]+)\)", description)
    assert relative == [], relative
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"selection", "fl_oracle", f"fedsel-{VERSION}.dist-info"}, sorted(tops)


def _use_installed(venv: Path, work: Path, env) -> None:
    """Run the installed console script the way the README tells a user to, from ``work``."""
    fedsel = venv / "bin" / "fedsel"
    assert fedsel.is_file(), "the wheel installed no fedsel console script"
    done = _run([fedsel, "--version"], cwd=work, env=env)
    assert done.stdout.strip() == f"fedsel {VERSION}"
    assert "example" in _run([fedsel, "--help"], cwd=work, env=env).stdout

    _run([fedsel, "example", "-o", "stats.csv"], cwd=work, env=env)
    shipped = (ROOT / "results" / "examples" / "stats.csv").read_bytes()
    assert (work / "stats.csv").read_bytes() == shipped
    again = _run([fedsel, "example", "-o", "stats.csv"], cwd=work, env=env, check=False)
    assert again.returncode == 2
    assert again.stderr.strip().splitlines() == [
        "fedsel: error: stats.csv exists; pass --overwrite to replace it"
    ]

    argv = ["solve", "--stats", "stats.csv", "--k", "5", "--method", "eps", "--eps", "25"]
    done = _run([fedsel, *argv, "--json"], cwd=work, env=env)
    answer = json.loads(done.stdout)
    assert answer["status"] == "optimal" and answer["k"] == 5
    assert len(answer["selected"]) == 5 == len(set(answer["selected"]))

    _run([fedsel, *ORACLE_QUICK], cwd=work, env=env)
    import pandas as pd

    stats = pd.read_parquet(work / "run" / "stats.parquet")
    assert len(stats) == 20 and stats["client_id"].nunique() == 20
    record = tomllib.loads((work / "run" / "config.toml").read_text(encoding="utf-8"))["run"]
    assert record["fedsel_version"] == VERSION
    assert record["git_commit"] == "", "an installed fedsel claimed the checkout's commit"


# ---- the default tests: the wheel, installed without its dependencies -----------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = _copy_sources(tmp / "src")
    out = tmp / "out"
    argv = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, src]
    _run(argv, cwd=src, env=dict(os.environ))
    (found,) = out.glob("fedsel-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(venv, a working folder outside the checkout, its environment): the wheel installed
    with ``--no-deps`` into a fresh venv that reaches this venv's packages by a ``.pth`` line."""
    tmp = tmp_path_factory.mktemp("user")
    _outside_checkout(tmp)
    venv, work = tmp / "venv", tmp / "work"
    work.mkdir()
    env = _clean_env(tmp, venv)
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp, env=env)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet"]
    _run([*pip, "--no-deps", "--no-index", wheel], cwd=tmp, env=env)
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    site = _site_packages(python, env)
    (site / "zz_fedsel_test_deps.pth").write_text("".join(f"{p}\n" for p in ours))
    return venv, work, env


def test_the_wheel_holds_the_packages_the_example_and_the_console_script(wheel):
    _check_wheel(wheel)


def test_the_installed_wheel_is_what_imports_outside_the_checkout(installed):
    venv, work, env = installed
    code = "import selection, fl_oracle; print(selection.__file__); print(fl_oracle.__file__)"
    done = _run([venv / "bin" / "python", "-c", code], cwd=work, env=env)
    for line in done.stdout.split():
        assert Path(line).resolve().is_relative_to(venv.resolve()), done.stdout


def test_the_installed_console_script_runs_outside_the_checkout(installed):
    _use_installed(*installed)


# ---- in this environment: the example command, the one version ------------------------------


def test_the_shipped_example_is_the_repositorys_example_table():
    from selection.cli.example import example_stats_bytes
    from selection.schema import read_stats

    data = example_stats_bytes()
    assert data == (ROOT / "results" / "examples" / "stats.csv").read_bytes()
    assert data == (ROOT / EXAMPLE).read_bytes()
    assert len(data) < 64_000
    table = read_stats(ROOT / EXAMPLE)  # a valid round-stats table
    # what `fedsel example --help` says it is
    assert table["client_id"].nunique() == 20 and table["round"].nunique() == 3


def test_example_writes_the_table_and_never_overwrites_silently(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_fedsel(["example"], capsys)
    assert code == 0 and out == ""
    assert (tmp_path / "example_stats.csv").read_bytes() == (ROOT / EXAMPLE).read_bytes()
    assert "fedsel solve --stats example_stats.csv" in err

    target = tmp_path / "mine.csv"
    target.write_text("keep me")
    code, out, err = run_fedsel(["example", "-o", target], capsys)
    assert code == 2 and err.splitlines() == [
        f"fedsel: error: {target} exists; pass --overwrite to replace it"
    ]
    assert target.read_text() == "keep me"
    code, _, _ = run_fedsel(["example", "--out", target, "--overwrite"], capsys)
    assert code == 0 and target.read_bytes() == (ROOT / EXAMPLE).read_bytes()

    code, _, err = run_fedsel(["example", "-o", tmp_path, "--overwrite"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "is a folder" in err
    code, _, _ = run_fedsel(["example", "-o", tmp_path / "new" / "stats.csv"], capsys)
    assert code == 0 and (tmp_path / "new" / "stats.csv").is_file()
    assert not list(tmp_path.rglob("*.tmp")), "a temp file was left behind"


def test_the_version_is_stated_once_and_read_from_the_metadata(capsys):
    from importlib.metadata import version

    assert run_fedsel(["--version"], capsys)[1] == f"fedsel {version('fedsel')}\n"
    assert run_fedsel(["version"], capsys)[1] == f"fedsel {version('fedsel')}\n"
    quoted = re.compile(rf"""["']{re.escape(VERSION)}["']""")
    stated = [
        str(p.relative_to(ROOT))
        for pkg in ("selection", "fl_oracle")
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if quoted.search(p.read_text(encoding="utf-8"))
    ]
    assert stated == [], f"the version is written out in {stated}; read it from the metadata"


def test_the_changelogs_newest_release_is_the_package_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heads = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", text, re.M)
    assert heads and heads[0] == ("Unreleased", ""), heads[:2]
    released = [(v, day) for v, day in heads if v != "Unreleased"]
    assert released, "no released section"
    newest, day = released[0]
    assert day, f"## [{newest}] has no date"
    assert newest == VERSION, f"CHANGELOG's newest release is {newest}, pyproject says {VERSION}"


# ---- slow: make dist's build, and a full install with the dependencies ---------------------


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``make dist``'s build (isolated: the sdist, then the wheel built from it)."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", out, ROOT], cwd=ROOT, env=dict(os.environ))
    return out


@pytest.mark.slow
def test_the_sdist_holds_the_example_and_builds_the_same_wheel(dist):
    (sdist,) = dist.glob("fedsel-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {EXAMPLE, "pyproject.toml", "README.md", "selection/cli/__init__.py"} <= names
    # the docs the wheel's description sends to
    assert {"DESCRIPTION.md", "docs/get-started.md", "docs/contract.md"} <= names
    assert not any(n.startswith(("results/", "runs/", "dist/")) for n in names)
    (wheel,) = dist.glob("fedsel-*.whl")
    _check_wheel(wheel)


@pytest.mark.slow
def test_a_full_install_of_the_wheel_runs_outside_the_checkout(dist, tmp_path):
    (wheel,) = dist.glob("fedsel-*.whl")
    _outside_checkout(tmp_path)
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    env = _clean_env(tmp_path, venv)
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path, env=env)
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet"]
    _run([*pip, "torch==2.13.0"], cwd=tmp_path, env=env, timeout=1800)  # as make venv does
    _run([*pip, wheel], cwd=tmp_path, env=env, timeout=1800)
    code = "import selection; print(selection.__file__)"
    where = _run([venv / "bin" / "python", "-c", code], cwd=work, env=env).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), where
    _use_installed(venv, work, env)


# ---- the docs' Get started, from the installed wheel, outside the checkout ------------------


def _get_started_commands() -> list[str]:
    """The ``fedsel`` lines of Get started's ``bash`` blocks, in order (``fedsel train`` aside:
    its first run generates the default data, which the tutorials' tests cover)."""
    text = (ROOT / "docs" / "get-started.md").read_text(encoding="utf-8")
    lines = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("fedsel ") and not line.startswith("fedsel train"):
                lines.append(line)
    return lines


def test_get_started_runs_from_the_installed_wheel_in_a_fresh_folder(installed):
    venv, work, env = installed
    here = work / "get-started"
    here.mkdir()
    commands = _get_started_commands()
    assert commands[0].startswith("fedsel example -o stats.csv") and len(commands) >= 6
    env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    for line in commands:
        _run(["bash", "-euo", "pipefail", "-c", line], cwd=here, env=env)
    assert (here / "runs" / "example-eps" / "front.csv").is_file()
    assert (here / "runs" / "example-compare" / "compare.html").is_file()


def test_the_python_tutorial_runs_from_the_installed_wheel(installed):
    """Its ``python`` blocks, as one script, in a fresh folder, with the wheel's packages."""
    venv, work, env = installed
    here = work / "python-api"
    here.mkdir()
    text = (ROOT / "docs" / "tutorials" / "python-api.md").read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"^```python\n(.*?)^```", text, re.M | re.S))
    assert "results/" not in code, "the tutorial reads the checkout's files"
    (here / "tutorial.py").write_text(code)
    _run([venv / "bin" / "python", "tutorial.py"], cwd=here, env=env)
