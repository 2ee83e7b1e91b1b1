"""The shared helper package, ``tests/helpers``, importable by name in every test module.

``tests/`` is on ``sys.path`` only while ``helpers`` is imported: its submodules are then found
through ``helpers.__path__``. Left on the path, ``tests/fl_oracle`` and ``tests/selection``
(folders without ``__init__.py``) would be taken for the ``fl_oracle`` and ``selection``
packages wherever these come from the editable install's finder, which Python asks only after
the path, e.g. in a worker process spawned by the study runner, which inherits ``sys.path``.
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
sys.path.insert(0, _TESTS)
try:
    import helpers  # noqa: F401
finally:
    sys.path.remove(_TESTS)
