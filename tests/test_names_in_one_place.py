"""Knowledge by declaration, not by name (issue 49): no code in the package compares a value
with the name of a formulation, surrogate, information model, baseline rule, MILP backend or
route, outside the module that parses specs and the registries.

A formulation's behaviour is declared on its class (``param_type``, ``front_constraints``,
``reachable``, ``gap_bound``, ``symbol``), a surrogate's structure is a
:class:`~selection.surrogates.Structure`, a route a :class:`~selection.solvers.params.Route`,
an information model is asked what it does (``upper_bound``, ``remembers``), a rule's reads are
:class:`~selection.baselines.reads.Reads`. Read from the syntax tree (docstrings and comments are
not code), as the import-layer contracts read the imports. ``auto`` and ``all`` are left out:
they are option words of other vocabularies too (``--device auto``, ``--rounds all``).
Benchmarks are outside the package: they select the rows they measure by name.
"""

from __future__ import annotations

import ast

from helpers import ROOT

# the parsing module and the registries: where names are the subject
ALLOWED = {
    "selection/specs.py",
    "selection/solvers/registry.py",
    "selection/solvers/milp/registry.py",
    "selection/surrogates/base.py",
    "selection/information/base.py",
    "selection/baselines/base.py",
}
OPTION_WORDS = {"auto", "all"}


def _names() -> set[str]:
    from selection.baselines import baselines
    from selection.information import RULE, information_models
    from selection.solvers.milp.registry import milp_backends
    from selection.solvers.params import Route
    from selection.solvers.registry import solvers
    from selection.surrogates import Structure, surrogates

    names = {*solvers(), *surrogates(), *information_models(), *baselines(), *milp_backends()}
    names |= {str(r) for r in Route} | {str(s) for s in Structure} | {RULE}
    return names - OPTION_WORDS


def _compared_names(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        consts = []
        for side in sides:
            if isinstance(side, ast.Constant):
                consts.append(side.value)
            elif isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                consts += [e.value for e in side.elts if isinstance(e, ast.Constant)]
        if any(isinstance(c, str) and c in names for c in consts):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_name_comparisons_outside_parsing_and_registries():
    names = _names()
    assert {"eps", "maxmin", "mean", "stale", "pool", "fisher-topk", "highs", "enum"} <= names
    found = {}
    for package in ("selection", "fl_oracle"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ALLOWED:
                continue
            hits = _compared_names(ast.parse(path.read_text(encoding="utf-8")), names)
            if hits:
                found[rel] = hits
    assert found == {}, found


def test_the_check_sees_a_comparison():
    """The reader is not blind: each form it must catch is caught."""
    code = 'a == "eps"\nb != "stale"\nc in ("mean", "x")\n"highs" == d\ne == "unrelated"\n'
    hits = _compared_names(ast.parse(code), _names())
    assert [line for line, _ in hits] == [1, 2, 3, 4]
