"""Helpers shared by the tests, one package imported by name (``from helpers.cdp import Browser``).

* :mod:`helpers.cdp` — a headless Chromium driven through the DevTools protocol.
* :mod:`helpers.reports` — one small page of each report kind (browser test, screenshots).
* :mod:`helpers.fake_oracle` — a pure-numpy stand-in for the oracle, with the same methods.
* :mod:`helpers.oracle` — tiny injected Digits-like data and configurations for the real oracle.
* :mod:`helpers.docs_site` — ``mkdocs build --strict`` of the documentation site.
* :mod:`helpers.rules` — one small round of a baseline rule (sizes, losses, update vectors).

``tests/conftest.py`` imports this package (the tests then import its modules by name).
:data:`ROOT` is the repository's root; :data:`PYTHONPATH` is the ``PYTHONPATH`` of a child
Python that imports ``helpers`` (the root comes with ``tests/``, so that ``fl_oracle`` and
``selection`` are the packages, not the folders of the same names under ``tests/``).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join((str(ROOT), str(ROOT / "tests")))
