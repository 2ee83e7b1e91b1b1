"""One route-options object and one status vocabulary (issue 64).

The route options (``backend``, ``time_limit``, ``seed``, ``threads``, ``scale``,
``enum_limit``, ``mip_gap``, ``counts``, ``tolerance``) are declared once, by
:class:`~selection.solvers.options.RouteOptions`; every solver that takes them gets them as
``options=`` or as keywords mapped into it, and :class:`~selection.solvers.base.SweepOptions`
inherits them. Inside the MILP layer a search answers a :class:`~selection.solvers.result.Status`
(:class:`~selection.solvers.milp.answer.Answer`), never a string.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from dataclasses import fields

import numpy as np
import pytest

from selection.example import example_stats
from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions, solver_options
from selection.solvers.eps import EpsSolver
from selection.solvers.eps_rel import EpsRelSolver
from selection.solvers.fisher_fair import FisherFairSolver
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.milp.answer import Answer
from selection.solvers.min_gap import MinGapSolver
from selection.solvers.nsga2 import NSGA2Solver, Pick
from selection.solvers.options import Counts, RouteOptions
from selection.solvers.registry import solvers
from selection.solvers.result import Status

from helpers import ROOT

ROUTED = [EpsSolver, MaxminSolver, FisherFairSolver, EpsRelSolver, MinGapSolver]


@pytest.fixture(scope="module")
def problem():
    return SelectionProblem.from_stats(example_stats(), k=5)


def test_the_defaults_are_declared_once_and_inherited_by_the_sweeps():
    route = {f.name: f.default for f in fields(RouteOptions)}
    assert route == {
        "backend": "auto",
        "time_limit": None,
        "seed": 0,
        "threads": None,
        "scale": 1000,
        "enum_limit": 200_000,
        "mip_gap": 0.0,
        "counts": Counts.AUTO,
        "tolerance": 0.0,
    }
    sweep = {f.name: f.default for f in fields(SweepOptions)}
    assert {name: sweep[name] for name in route} == route
    for cls in [*solvers().values(), MinGapSolver]:
        own = set(inspect.signature(cls.__init__).parameters)
        redeclared = own & set(RouteOptions.names()) - ({"seed"} if cls is NSGA2Solver else set())
        assert not redeclared, (cls.__name__, redeclared)


@pytest.mark.parametrize("cls", ROUTED)
def test_keywords_and_the_options_object_are_one_path(cls, problem):
    takes = cls.route_options
    assert takes <= set(RouteOptions.names()) and takes <= solver_options(cls)
    given = {"backend": "highs", "seed": 3, "time_limit": 30.0}
    a = cls(**given)
    b = cls(options=RouteOptions(**given))
    assert a.options == b.options == RouteOptions.of(RouteOptions(**given), takes=takes)
    ra, rb = a.solve(problem), b.solve(problem)
    assert (ra.selected, str(ra.status), ra.backend) == (rb.selected, str(rb.status), rb.backend)
    assert ra.ok


def test_a_solver_takes_only_the_route_options_it_honours():
    with pytest.raises(TypeError, match=r"EpsRelSolver.__init__\(\) got an unexpected .*'threads'"):
        EpsRelSolver(threads=2)
    with pytest.raises(TypeError, match="'tolerance'"):
        MinGapSolver(tolerance=0.5)
    # the fields an options object sets beyond them keep their defaults (a sweep's options
    # are handed to every method alike)
    kept = EpsRelSolver(options=RouteOptions(tolerance=0.5, seed=4)).options
    assert kept.tolerance == 0.0 and kept.seed == 4


def test_options_are_validated_and_normalized_at_construction():
    o = RouteOptions(time_limit=math.inf, counts="on", seed=np.int64(2), tolerance=1)
    assert o.time_limit is None and o.counts is Counts.ON and o.seed == 2
    assert isinstance(o.seed, int) and isinstance(o.tolerance, float)
    assert EpsSolver(counts="off").options.counts is Counts.OFF
    # a sweep keeps inf: its None is the complete sweep's per-point budget, inf none
    assert SweepOptions(time_limit=math.inf).time_limit == math.inf
    for bad, needle in [
        ({"counts": "maybe"}, "counts='maybe' must be auto, on or off"),
        ({"mip_gap": 1.0}, "mip_gap=1.0 must be a relative gap in [0, 1)"),
        ({"time_limit": 0}, "time_limit=0 must be > 0 seconds"),
        ({"seed": -1}, "seed=-1 must be an integer >= 0"),
        ({"threads": 0}, "threads=0 must be an integer >= 1"),
        ({"enum_limit": -1}, "enum_limit=-1 must be an integer >= 0"),
        ({"backend": "bb"}, "backend bb computes a whole front, not one point"),
    ]:
        with pytest.raises(ValueError, match=re.escape(needle)):
            RouteOptions(**bad)
    assert SweepOptions(backend="bb").backend == "bb"  # a whole front's route


def test_a_copy_for_another_limit_shares_the_route():
    s = EpsSolver(eps=5.0, backend="cbc", threads=2)
    point = s.with_param(3.0)
    assert point.options is s.options and point.eps == 3.0


def test_a_backend_written_to_the_documented_words_is_read_in_the_vocabulary():
    v = np.ones(3)
    assert Answer.of(("optimal", v, 2.0)) == Answer(Status.OPTIMAL, v, 2.0)
    assert Answer.of(("infeasible", None, math.nan)).status is Status.INFEASIBLE
    assert Answer.of(("limit", v, 1.0)).status is Status.TIME_LIMIT
    assert Answer.of(("time_limit", v, 1.0)).status is Status.TIME_LIMIT
    out = Answer.of(("error:license expired", None, math.nan))
    assert out.status is Status.ERROR and out.message == "license expired"
    odd = Answer.of(("solved?", v, 1.0))
    assert odd.status is Status.ERROR and "'solved?'" in odd.message
    own = Answer(Status.OPTIMAL, v, 2.0)
    assert Answer.of(own) is own


def test_nsga2_pick_is_an_enum_that_prints_as_before(problem):
    s = NSGA2Solver(pick="min-gap", pop_size=8, n_gen=3)
    assert s.pick is Pick.MIN_GAP
    assert s.solve(problem).param == "min-gap"
    with pytest.raises(ValueError, match="pick='best' must be one of knee, max-utility, min-gap"):
        NSGA2Solver(pick="best")


STATUS_WORDS = {"optimal", "feasible", "time_limit", "limit", "infeasible", "error", "other"}


def _string_statuses(tree: ast.AST) -> list[tuple[int, str]]:
    """Comparisons with a status word, and ``.startswith("error")``-style tests."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            consts = []
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant):
                    consts.append(side.value)
                elif isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                    consts += [e.value for e in side.elts if isinstance(e, ast.Constant)]
            if any(c in STATUS_WORDS for c in consts if isinstance(c, str)):
                out.append((node.lineno, ast.unparse(node)))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith")
            and any(
                isinstance(a, ast.Constant) and str(a.value).rstrip(":") in STATUS_WORDS
                for a in node.args
            )
        ):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_status_is_compared_as_a_string_in_the_solvers():
    found = {}
    for path in sorted((ROOT / "selection" / "solvers").rglob("*.py")):
        hits = _string_statuses(ast.parse(path.read_text(encoding="utf-8")))
        if hits:
            found[path.relative_to(ROOT).as_posix()] = hits
    assert found == {}, found


def test_the_status_check_sees_a_comparison():
    code = 'a == "optimal"\nb in ("limit", "x")\nc.startswith("error")\nd != "unrelated"\n'
    assert [line for line, _ in _string_statuses(ast.parse(code))] == [1, 2, 3]
