"""Every Python block of the README runs as shown (from the repository root)."""

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = [
    textwrap.dedent(m[1])
    for m in re.finditer(
        r"^ *```python\n(.*?)^ *```", (ROOT / "README.md").read_text(), re.M | re.S
    )
]


def test_the_readme_has_its_python_quick_start():
    assert len(BLOCKS) >= 1


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.strip().splitlines()[-1][:40])
def test_readme_block_runs_as_shown(block, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    ns: dict = {"__name__": "readme"}
    exec(compile(block, "README.md", "exec"), ns)  # noqa: S102 - the README's own code
    if "front" in ns:  # the quick start: a proven point, a front, a pick
        assert str(ns["point"].status) == "optimal"
        assert len(ns["front"]) > 2 and len(ns["ids"]) == 5
