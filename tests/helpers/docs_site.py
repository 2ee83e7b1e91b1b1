"""Build the documentation site once per test session (shared by the docs tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT


def build(site_dir: Path, config: Path | None = None) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` into ``site_dir``; the completed process (not checked)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONWARNINGS": "ignore"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)]
    if config is not None:
        cmd += ["--config-file", str(config)]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
