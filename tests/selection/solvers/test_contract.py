"""One contract suite run against every registered solver (SOLVERS).

A solver module that registers itself is picked up automatically with its default
arguments; add its valid/invalid constructor arguments to ``CASES`` to widen the check.
"""

from __future__ import annotations

import pytest

from selection.problem import SelectionProblem
from selection.solvers import SOLVERS, Status, make_solver
from selection.synthetic import synthetic_stats

VOCABULARY = {s.value for s in Status}

# name -> (valid constructor kwargs, invalid constructor kwargs)
CASES: dict[str, tuple[list[dict], list[dict]]] = {
    "exhaustive": (
        [{}, {"eps": 12.0}, {"delta": 1.0}, {"eps": 0.0}],
        [{"eps": -1.0}, {"delta": -1.0}, {"max_count": 0}, {"eps": 1.0, "delta": 1.0}],
    ),
    "weighted": (
        [{}, {"weights": (1, 1, 0)}, {"weights": "0,1"}, {"composite": (1.0, 0.5, 0.1)}],
        [{"weights": ()}, {"weights": (1,) * 6}, {"weights": (0, 0)}, {"composite": (1, 2)}],
    ),
    "eps": (
        [
            {},
            {"eps": 10.0, "backend": "highs"},
            {"eps": 5.0, "backend": "cbc"},
            {"eps": 5.0, "backend": "cpsat"},
            {"eps": 0.0, "backend": "highs", "time_limit": 10.0},
        ],
        [
            {"eps": -1.0},
            {"backend": "nope"},
            {"time_limit": 0},
            {"time_limit": -2.0},
            {"seed": -1},
            {"mip_gap": -0.1},
        ],
    ),
    "maxmin": (
        [
            {},
            {"delta": 2.0, "backend": "highs"},
            {"delta": 1.0, "backend": "cbc"},
            {"delta": 1.0, "backend": "cpsat"},
        ],
        [{"delta": -1.0}, {"backend": "nope"}, {"time_limit": 0}, {"threads": 0}],
    ),
    "nsga2": (
        [{"pop_size": 20, "n_gen": 5, "seed": 3}],
        [{"pop_size": 2}, {"pick": "nope"}, {"objectives": ("utility",)}],
    ),
}


def _valid(name):
    return CASES.get(name, ([{}], []))[0]


def _invalid(name):
    return CASES.get(name, ([{}], []))[1]


VALID = [(n, kw) for n in sorted(SOLVERS) for kw in _valid(n)]
INVALID = [(n, kw) for n in sorted(SOLVERS) for kw in _invalid(n)]


@pytest.fixture(scope="module")
def problem() -> SelectionProblem:
    return SelectionProblem.from_stats(synthetic_stats(12, seed=7), 4)


def _id(case):
    name, kw = case
    return f"{name}-{','.join(f'{k}={v}' for k, v in kw.items()) or 'default'}"


@pytest.mark.parametrize("case", VALID, ids=_id)
def test_k_respected_and_status_in_vocabulary(problem, case):
    name, kw = case
    r = make_solver(name, **kw).solve(problem)
    assert str(r.status) in VOCABULARY
    assert r.method == name and r.seconds >= 0
    if r.ok:
        assert len(r.selected) == problem.k == len(set(r.selected))
        assert all(0 <= i < problem.n for i in r.selected)
        assert list(r.ids) == problem.ids_of(r.selected)
        assert set(r.objectives) >= {"utility", "gap", "worst"}
    else:
        assert r.selected == () and r.objectives == {}


@pytest.mark.parametrize("case", VALID, ids=_id)
def test_same_arguments_same_result(problem, case):
    name, kw = case
    a = make_solver(name, **kw).solve(problem)
    b = make_solver(name, **kw).solve(problem)
    assert (a.status, a.selected, a.param) == (b.status, b.selected, b.param)


@pytest.mark.parametrize("case", INVALID, ids=_id)
def test_invalid_constructor_arguments_raise(case):
    name, kw = case
    with pytest.raises(ValueError):
        make_solver(name, **kw)


def test_every_builtin_solver_is_registered():
    assert {"exhaustive", "weighted", "eps", "maxmin"} <= set(SOLVERS)


def test_unknown_method_is_named():
    with pytest.raises(ValueError, match="'bogus'"):
        make_solver("bogus")


def test_non_problem_input_is_rejected():
    with pytest.raises(ValueError, match="SelectionProblem"):
        make_solver("eps").solve("not a problem")
