"""Every Python block of the README runs as shown (from the repository root)."""

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = [
    textwrap.dedent(m[1])
    for m in re.finditer(
        r"^ *```python\n(.*?)^ *```", (ROOT / "README.md").read_text(), re.M | re.S
    )
]


def test_the_readme_has_its_python_blocks():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.strip().splitlines()[-1][:40])
def test_readme_block_runs_as_shown(block, monkeypatch, tmp_path):
    if "flwr" in block:
        pytest.importorskip("flwr")
    monkeypatch.chdir(ROOT)
    ns: dict = {"__name__": "readme"}
    exec(compile(block, "README.md", "exec"), ns)  # noqa: S102 - the README's own code
    if "val_accuracies" in ns:  # the Flower server: its candidate evaluator on real arrays
        import torch

        w = torch.nn.utils.parameters_to_vector(ns["Net"]().parameters()).detach().numpy()
        out = ns["val_accuracies"](w, np.stack([np.zeros_like(w), 0.01 * np.ones_like(w)]))
        assert set(out) == {"U", "U_mnist", "U_usps", "U_svhn", "U_syn"}
        assert all(np.asarray(v).shape == (2,) for v in out.values())
        assert all(0 <= float(x) <= 100 for v in out.values() for x in np.ravel(v))
    if "pick" in ns:
        assert len(ns["ids"]) == 5
