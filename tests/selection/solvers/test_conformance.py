"""One conformance suite over every registered formulation × every route it takes.

Iterates the registries (formulations, MILP backends), not a hand-kept list: a newly
registered formulation or backend is checked without editing this file. For each, on small
seeded rounds under the ``mean`` and ``weighted`` surrogates and at the first values of its
default grid:

* a solved point holds K distinct clients and its reported objectives are those
  :func:`selection.objectives.evaluate` gives the selection;
* an exact formulation (one with an enumeration rule) answers what exhaustive enumeration
  answers under that rule: the same feasibility, and a selection that meets the rule and
  attains the optimal lexicographic key;
* every route of one formulation agrees with the others.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.base import solver_options
from selection.solvers.exhaustive import _blocks, _pick
from selection.solvers.milp.model import milp_backends
from selection.solvers.registry import solvers
from selection.synthetic import synthetic_stats

SEEDS = (1, 7)
LIMIT = 10.0  # seconds per solve: these rounds take milliseconds; a stop here is a defect


def _routes(cls) -> list[str | None]:
    return ["enum", *milp_backends()] if "backend" in solver_options(cls) else [None]


def _values(cls) -> list:
    grid = list(cls.default_grid or [])
    if cls.param is None:
        return [None]
    if not grid:  # eps: no default grid (its default is the complete sweep)
        return [math.inf, 20.0, 8.0]
    return grid[:3]


def _case(name, route, v, surrogate):
    if name == "nsga2":  # a heuristic with default generations: seconds a case
        return pytest.param(name, route, v, surrogate, marks=pytest.mark.slow)
    return pytest.param(name, route, v, surrogate)


CASES = [
    _case(name, route, v, surrogate)
    for name, cls in solvers().items()
    for route in _routes(cls)
    for v in _values(cls)
    for surrogate in ("mean", "weighted")
]


def _problem(seed: int, surrogate: str) -> SelectionProblem:
    return SelectionProblem.from_stats(synthetic_stats(10, seed=seed), 3, surrogate=surrogate)


def _solve(name: str, route: str | None, v, problem):
    cls = solvers()[name]
    kw = {} if cls.param is None else {cls.param: v}
    if route is not None:
        kw["backend"] = route
    if "time_limit" in solver_options(cls):
        kw["time_limit"] = LIMIT
    return cls(**kw).solve(problem)


def _key(problem, idx, keys) -> tuple[float, ...]:
    o = evaluate(problem, idx)
    return tuple(round(o[k] * s, 6) for k, s in keys)


@pytest.mark.parametrize(("name", "route", "value", "surrogate"), CASES, ids=lambda x: str(x))
def test_every_formulation_on_every_route(name, route, value, surrogate):
    for seed in SEEDS:
        problem = _problem(seed, surrogate)
        r = _solve(name, route, value, problem)
        assert str(r.status) != "time_limit", f"{name}/{route} seed {seed}: {r.message}"
        if not r.ok:
            assert str(r.status) == "infeasible", f"{name}/{route}: {r.status} {r.message}"
        else:
            sel = list(r.selected)
            assert len(sel) == problem.k == len(set(sel)), sel
            want = evaluate(problem, sel)
            for obj, got in r.objectives.items():
                if obj in want:
                    assert got == pytest.approx(want[obj], abs=1e-6), (name, route, obj)
        cls = solvers()[name]
        solver = cls(**({} if cls.param is None else {cls.param: value}))
        if not hasattr(solver, "_rule"):
            continue
        mask_fn, keys = solver._rule(problem)
        best = _pick(_blocks(problem, 10**6), mask_fn, keys)
        assert r.ok == bool(best), f"{name}/{route} seed {seed}: feasibility differs"
        if r.ok:
            block = next(_blocks(problem, 10**6))
            row = np.flatnonzero((block["idx"] == np.array(sorted(r.selected))).all(axis=1))
            assert row.size and bool(mask_fn(block)[row[0]]), f"{name}/{route}: breaks its rule"
            assert _key(problem, list(r.selected), keys) == _key(problem, list(best), keys), (
                f"{name}/{route} seed {seed} ({surrogate}): not the enumeration's optimum"
            )
