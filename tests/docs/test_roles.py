"""No docstring splits a cross-reference role across lines (``:meth:`~a.b.`` then ``c``` on
the next): the API reference would show the raw role."""

from __future__ import annotations

import ast
import re

from helpers import ROOT

ROLE_SPLIT = re.compile(r":(meth|func|class|mod|attr|data|exc):`[^`]*\n")


def test_no_role_is_split_across_lines():
    split = []
    for package in ("selection", "fl_oracle"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(
                    node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
                ):
                    doc = ast.get_docstring(node, clean=False)
                    if doc and ROLE_SPLIT.search(doc):
                        split.append(f"{path.relative_to(ROOT)}:{getattr(node, 'name', '')}")
    assert split == []
