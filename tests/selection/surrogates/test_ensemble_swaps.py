"""The ensemble's one-swap neighbours, scored incrementally, equal the block's values; its value
bounds hold for every selection; a sample no member gets right can still be right."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from selection.logits import ValidationLogits
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.surrogates import get_surrogate
from selection.surrogates.base import Swaps
from selection.synthetic_logits import synthetic_logits


def _problem(n: int, k: int, seed: int = 0, samples: int = 30) -> SelectionProblem:
    table, logits = synthetic_logits(n, seed=seed, samples_per_domain=samples)
    return SelectionProblem.from_stats(table, k, surrogate="ensemble", logits=logits)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_incremental_neighbours_equal_the_block(seed):
    p = _problem(30, 5, seed)
    sur = get_surrogate("ensemble")
    sel = np.random.default_rng(seed).choice(p.n, p.k, replace=False)
    fast, slow = sur.swaps(p, sel), Swaps(sur, p, sel)
    assert type(fast) is not Swaps
    U0, Ud0 = fast.current()
    assert U0 == pytest.approx(evaluate(p, sel)["utility"])
    outside = np.setdiff1d(np.arange(p.n), sel)
    for out in sel:
        cand = np.r_[out, outside]  # row 0: the selection itself
        U1, Ud1, score = fast.values(int(out), cand)
        U2, Ud2, _ = slow.values(int(out), cand)
        np.testing.assert_allclose(U1, U2, atol=1e-9)
        np.testing.assert_allclose(Ud1, Ud2, atol=1e-9)
        assert U1[0] == pytest.approx(U0) and np.allclose(Ud1[0], Ud0)
        assert score.shape == (len(cand),) and np.isfinite(score).all()
    # a move keeps the sums: the neighbour becomes the current selection
    fast.move_to(np.r_[sel[1:], outside[0]])
    assert fast.current()[0] == pytest.approx(evaluate(p, np.r_[sel[1:], outside[0]])["utility"])


def test_value_bounds_hold_for_every_selection():
    p = _problem(9, 3, seed=4)
    lo, up = get_surrogate("ensemble").value_bounds(p)
    for sel in itertools.combinations(range(p.n), p.k):
        Ud = np.array([evaluate(p, sel)[f"U_{d}"] for d in p.domains])
        assert (lo - 1e-9 <= Ud).all() and (Ud <= up + 1e-9).all()
    w = get_surrogate("ensemble").domain_shares(p)
    assert w.sum() == pytest.approx(1.0)


def test_a_sample_no_member_gets_right_can_be_right():
    # two members: one predicts class 0, the other class 1, both rank the label 2 second;
    # their mean logits rank 2 first: the share some member gets right bounds nothing
    z = np.array([[[10.0, 0.0, 9.0]], [[0.0, 10.0, 9.0]]], dtype=np.float16)
    lg = ValidationLogits(0, np.array(["a-0", "b-0"]), z, np.array([2]), np.array([0]), ("a",))
    table = pd.DataFrame(
        {"round": 0, "client_id": ["a-0", "b-0"], "domain": "a", "n_samples": [10, 10],
         "U": 0.0, "U_a": 0.0, "F": 1.0, "B": 0.1, "cos_g": 0.0}
    )  # fmt: skip
    p = SelectionProblem.from_stats(table, 2, surrogate="ensemble", logits=lg)
    assert evaluate(p, [0, 1])["utility"] == 100.0
    lo, up = get_surrogate("ensemble").value_bounds(p)
    assert up[0] == 100.0 and lo[0] == 100.0
