"""Small rooms (issue 49): a module of the package or a benchmark past 450 lines says at its
top why it is one (a ``Why`` sentence in its docstring), or it is split by job."""

from __future__ import annotations

import ast

from helpers import ROOT

LIMIT = 450


def test_every_long_module_says_why_it_is_one():
    long = {}
    for folder in ("selection", "fl_oracle", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            n = text.count("\n")
            if n <= LIMIT:
                continue
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "Why " not in doc or "450 lines" not in doc:
                long[path.relative_to(ROOT).as_posix()] = n
    assert long == {}, f"past {LIMIT} lines without saying why: {long}"
