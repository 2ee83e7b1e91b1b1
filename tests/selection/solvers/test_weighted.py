"""Weighted sums of linear scores: definitions, exactness by sorting, ties, arguments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from selection.solvers.weighted import (
    WeightedSolver,
    composite_scores,
    fairness_benefit,
    parse_weights,
    weighted_scores,
    worst_domain,
)


def _z(v):
    return (v - v.mean()) / v.std()


def test_worst_domain_and_r(make_problem):
    p = make_problem(12, 3, seed=1)
    means = p.Ud.mean(axis=0)
    d = int(np.argmin(means))
    assert worst_domain(p) == d
    np.testing.assert_allclose(fairness_benefit(p), p.Ud[:, d])


def test_weight_positions(make_problem):
    p = make_problem(12, 3, seed=2, kind="random")
    R = fairness_benefit(p)
    np.testing.assert_allclose(weighted_scores(p, [1]), _z(p.U))
    np.testing.assert_allclose(weighted_scores(p, [0, 1]), _z(R))
    np.testing.assert_allclose(weighted_scores(p, [0, 0, 1]), p.F_z)
    np.testing.assert_allclose(weighted_scores(p, [0, 0, 0, 1]), _z(p.cos_g))
    np.testing.assert_allclose(weighted_scores(p, [0, 0, 0, 0, 1]), -_z(p.B))
    np.testing.assert_allclose(
        weighted_scores(p, [2, 0.5, -1, 0, 3]),
        2 * _z(p.U) + 0.5 * _z(R) - p.F_z - 3 * _z(p.B),
    )


def test_composite_score(make_problem):
    p = make_problem(10, 3, seed=3)
    s = composite_scores(p, 0.5, 2.0, 0.1)
    np.testing.assert_allclose(s, 0.5 * np.log(1 + p.F) + 2.0 * p.cos_g + 0.1 * fairness_benefit(p))
    r = WeightedSolver(composite=(0.5, 2.0, 0.1)).solve(p)
    assert set(r.selected) == set(np.argsort(-s)[:3].tolist())
    assert r.param == "S=0.5,2,0.1"


def test_plain_utility_gives_u_star(make_problem):
    from selection.objectives import u_star

    p = make_problem(15, 4, seed=4)
    r = WeightedSolver().solve(p)
    assert r.objectives["utility"] == pytest.approx(u_star(p))
    assert r.status == "optimal" and r.param == "w=1"


@pytest.mark.parametrize("w", [(1, 0, 0), (1, 1), (0.3, 0, 1, 1, 1), (0, 0, 0, 0, 1)])
def test_top_k_is_the_exact_weighted_optimum(make_problem, w):
    p = make_problem(9, 3, seed=7, kind="random")
    s = weighted_scores(p, w)
    best = max(sum(s[list(S)]) for S in itertools.combinations(range(p.n), 3))
    r = WeightedSolver(weights=w).solve(p)
    assert sum(s[list(r.selected)]) == pytest.approx(best)


def test_ties_go_to_lower_index(make_stats):
    df = make_stats(6, seed=1)
    df["U"] = 50.0  # all scores tie under w_U only... z-score is 0 everywhere
    from selection.problem import SelectionProblem

    p = SelectionProblem.from_stats(df, 2)
    assert WeightedSolver(weights=(1,)).solve(p).selected == (0, 1)


def test_string_weights(make_problem):
    p = make_problem(8, 2)
    a = WeightedSolver(weights="1, 0.5").solve(p)
    b = WeightedSolver(weights=(1, 0.5)).solve(p)
    assert a.selected == b.selected and parse_weights("1,0,0") == (1.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weights": ()}, "0 entries"),
        ({"weights": (1, 2, 3, 4, 5, 6)}, "6 entries"),
        ({"weights": (0, 0)}, "all zero"),
        ({"weights": (1, float("nan"))}, "finite"),
        ({"weights": "1,x"}, "'x'"),
        ({"composite": (1, 2)}, "expected 3"),
        ({"weights": (1,), "composite": (1, 1, 1)}, "not both"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WeightedSolver(**kwargs)
