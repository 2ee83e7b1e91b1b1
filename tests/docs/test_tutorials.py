"""Every tutorial runs as written: its ``bash`` and ``python`` blocks, in order, as one session.

Each page of ``docs/tutorials/`` runs in a fresh working folder that sees the repository's
``results/`` (the pages name committed files such as ``results/examples/stats.csv``), with the
``fedsel`` of this environment first on ``PATH`` and its own data cache. ``bash`` blocks run
under ``bash -euo pipefail``; ``python`` blocks share one namespace, like a notebook's cells.
Blocks fenced as ``console`` or ``text`` are illustrations (a cluster, a deployment) and are not
run; a page must have at least one block that runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
_BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.M | re.S)
_SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.M)


def _snippet(match: re.Match) -> str:
    """A ``--8<-- "path:first:last"`` line as the site shows it: those lines of the file."""
    path, *lines = match[1].split(":")
    text = (ROOT / path).read_text(encoding="utf-8").splitlines()
    if lines:
        first, last = int(lines[0]), int(lines[1]) if len(lines) > 1 else len(text)
        text = text[first - 1 : last]
    return "\n".join(text)


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [
        (m[1], _SNIPPET.sub(_snippet, m[2]))
        for m in _BLOCK.finditer(page.read_text(encoding="utf-8"))
    ]


def test_there_are_tutorials_with_runnable_blocks():
    assert {p.stem for p in PAGES} >= {"python-api", "own-federation", "study", "flower"}
    for page in PAGES:
        assert _blocks(page), f"{page.name} has no block that runs"


def _check_namespace(ns: dict) -> None:
    """What a page's Python defines, exercised (the Flower ServerApp's evaluator)."""
    if "val_accuracies" in ns:
        import torch

        w = torch.nn.utils.parameters_to_vector(ns["Net"]().parameters()).detach().numpy()
        out = ns["val_accuracies"](w, np.stack([np.zeros_like(w), 0.01 * np.ones_like(w)]))
        assert set(out) == {"U", "U_mnist", "U_usps", "U_svhn", "U_syn"}
        assert all(np.asarray(v).shape == (2,) for v in out.values())


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_tutorial_runs_as_written(page, tmp_path, monkeypatch):
    blocks = _blocks(page)
    if any("flwr" in code for _, code in blocks):
        pytest.importorskip("flwr")
    work = tmp_path / "work"
    work.mkdir()
    (work / "results").symlink_to(ROOT / "results", target_is_directory=True)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "FEDSEL_CACHE": str(tmp_path / "cache"),
        "MPLCONFIGDIR": str(tmp_path / "mpl"),
        "PYTHONWARNINGS": "ignore",
    }
    monkeypatch.chdir(work)
    monkeypatch.setenv("FEDSEL_CACHE", env["FEDSEL_CACHE"])
    ns: dict = {"__name__": f"tutorial_{page.stem}"}
    for i, (lang, code) in enumerate(blocks):
        where = f"{page.name} block {i + 1} ({lang})"
        if lang == "bash":
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"{where} failed:\n{code}\n{done.stderr[-2000:]}"
        else:
            exec(compile(code, where, "exec"), ns)  # noqa: S102 - the page's own code
    _check_namespace(ns)
