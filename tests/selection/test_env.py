"""Every environment variable fedsel reads is declared once (selection/env.py), checked like a
flag (one line, exit code 2, naming it) and listed on the conventions page (issue 53:
FEDSEL_STORE_MEMORY_MB=-5, abc and nan were taken silently, inf and 1e400 ended in a
traceback)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from selection.env import ENVIRONMENT, EnvError, check_environment, env_value

from helpers import ROOT
from helpers.cli import run_fedsel

NUMBERS = [n for n, v in ENVIRONMENT.items() if v.kind in ("number", "integer")]
FOLDERS = [n for n, v in ENVIRONMENT.items() if v.kind == "folder"]
BAD = ["-5", "abc", "nan", "inf", "-inf", "1e400", "12 MB", "0x10"]


@pytest.mark.parametrize("name", NUMBERS)
@pytest.mark.parametrize("value", BAD)
def test_a_bad_number_is_one_line_and_exit_2_before_any_work(name, value, monkeypatch, capsys,
                                                              tmp_path):  # fmt: skip
    monkeypatch.setenv(name, value)
    with pytest.raises(EnvError, match=f"^{name}="):
        env_value(name)
    out = tmp_path / "never.csv"
    code, _, err = run_fedsel(["example", "-o", out], capsys)  # a command that reads none
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"fedsel: error: {name}={value!r}") and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("name", FOLDERS)
def test_a_folder_variable_naming_a_file_or_a_path_under_one_is_refused(name, monkeypatch,
                                                                        tmp_path):  # fmt: skip
    f = tmp_path / "file"
    f.write_text("x")
    for value, needle in ((f, "is a file"), (f / "sub", "lies under the file")):
        monkeypatch.setenv(name, str(value))
        with pytest.raises(EnvError, match=needle):
            check_environment()
    monkeypatch.setenv(name, str(tmp_path / "new" / "cache"))  # not there yet: made on use
    assert env_value(name) == tmp_path / "new" / "cache"


def test_good_values_and_unset_ones():
    env = {"FEDSEL_STORE_MEMORY_MB": "0", "FEDSEL_PROGRESS_SECONDS": " 2.5 ",
           "FEDSEL_DATA_WORKERS": "3", "FEDSEL_CACHE": ""}  # fmt: skip
    assert env_value("FEDSEL_STORE_MEMORY_MB", env) == 0.0
    assert env_value("FEDSEL_PROGRESS_SECONDS", env) == 2.5
    assert env_value("FEDSEL_DATA_WORKERS", env) == 3
    assert env_value("FEDSEL_CACHE", env) is None  # empty is unset
    with pytest.raises(EnvError, match="is not an integer"):
        env_value("FEDSEL_DATA_WORKERS", {"FEDSEL_DATA_WORKERS": "2.5"})


def test_the_store_reads_its_limit_through_the_check(monkeypatch):
    from fl_oracle.sim.store import MEMORY_LIMIT, memory_limit

    monkeypatch.delenv("FEDSEL_STORE_MEMORY_MB", raising=False)
    assert memory_limit() == MEMORY_LIMIT
    monkeypatch.setenv("FEDSEL_STORE_MEMORY_MB", "1.5")
    assert memory_limit() == int(1.5 * 2**20)
    for bad in ("-5", "inf", "1e400", "abc"):
        monkeypatch.setenv("FEDSEL_STORE_MEMORY_MB", bad)
        with pytest.raises(EnvError, match="FEDSEL_STORE_MEMORY_MB"):
            memory_limit()


def test_every_variable_the_packages_read_is_declared_and_documented():
    """A grep of the packages' sources: each name read from os.environ / getenv is one of
    ENVIRONMENT (or one fedsel only passes to a child process), and the conventions page
    lists every one of them."""
    read = set()
    for pkg in ("selection", "fl_oracle"):
        for path in (ROOT / pkg).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            read |= set(re.findall(r"environ(?:\.get)?\(\s*[\"']([A-Z_][A-Z0-9_]*)", text))
            read |= set(re.findall(r"environ\[\s*[\"']([A-Z_][A-Z0-9_]*)", text))
            read |= set(re.findall(r"getenv\(\s*[\"']([A-Z_][A-Z0-9_]*)", text))
    # PATH: put in front of the flwr child's PATH, never interpreted; FLWR_LOG_LEVEL: Flower's
    # own, only asked whether it is set (then Flower's log level is left to it)
    passed_on = {"PATH", "FLWR_LOG_LEVEL"}
    assert read - passed_on <= set(ENVIRONMENT), read - passed_on - set(ENVIRONMENT)
    page = Path(ROOT / "docs/reference/conventions.md").read_text(encoding="utf-8")
    for name in ENVIRONMENT:
        assert f"`{name}`" in page, name
