"""Every example in the public API's docstrings runs and prints what it says (doctest), so the
API reference's examples stay true (issue 50). Modules are found by their ``>>>`` lines."""

from __future__ import annotations

import doctest
import importlib

import pytest

from helpers import ROOT


def _modules() -> list[str]:
    out = []
    for pkg in ("selection", "fl_oracle"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if ">>> " in path.read_text(encoding="utf-8"):
                rel = path.relative_to(ROOT).with_suffix("")
                parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
                out.append(".".join(parts))
    return out


MODULES = _modules()


def test_the_tutorial_functions_have_examples():
    named = {"selection.problem", "selection.solvers.registry", "selection.solvers.sweeps",
             "selection.selectors", "selection.compare", "selection.indicators",
             "selection.solvers.eps", "selection.solvers.bb.front", "selection.example"}  # fmt: skip
    assert named <= set(MODULES), named - set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def _reference_members() -> list[tuple[str, object]]:
    """Every public function and class the API reference renders: the members defined in each
    ``::: module`` of ``docs/reference/api/*.md`` that have a docstring (mkdocstrings shows
    those only, ``_``-names filtered)."""
    import inspect
    import re

    out = []
    for page in sorted((ROOT / "docs" / "reference" / "api").glob("*.md")):
        for name in re.findall(r"^:::\s*(\S+)", page.read_text(encoding="utf-8"), flags=re.M):
            module = importlib.import_module(name)
            for attr, obj in vars(module).items():
                public = not attr.startswith("_") and getattr(obj, "__module__", None) == name
                if public and (inspect.isfunction(obj) or inspect.isclass(obj)):
                    if inspect.getdoc(obj):
                        out.append((f"{name}.{attr}", obj))
    return out


def test_every_public_function_in_the_reference_has_an_example():
    members = _reference_members()
    assert len(members) > 100, "the API reference renders fewer members than it did"
    missing = [name for name, obj in members if ">>> " not in (obj.__doc__ or "")]
    assert missing == [], f"{len(missing)} of {len(members)} without an example: {missing}"
