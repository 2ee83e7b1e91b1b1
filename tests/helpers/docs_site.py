"""Build the documentation site once per test session (shared by the docs tests)."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def serve(folder: Path):
    """``folder`` on an HTTP server at 127.0.0.1 for the block; yields its base URL (search's
    worker and the version selector's ``versions.json`` need a server, file:// refuses them)."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
