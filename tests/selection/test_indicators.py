"""Quality indicators on hand-computed 2-D fronts (objectives: max utility, min gap)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selection.errors import SelectionError
from selection.indicators import (
    Normalization,
    hypervolume,
    hypervolume_ratio,
    igd,
    nondominated,
    nondominated_mask,
    on_front_count,
    reference_front,
)

# (utility %, gap pp): ideal (10, 1), nadir (6, 5); normalized (0, 1), (0.5, 0.5), (1, 0).
REF = np.array([[10.0, 5.0], [8.0, 3.0], [6.0, 1.0]])


def test_normalization_maps_ideal_to_zero_and_nadir_to_one():
    norm = Normalization.from_front(REF)
    assert norm.ideal.tolist() == [10.0, 1.0]
    assert norm.nadir.tolist() == [6.0, 5.0]
    np.testing.assert_allclose(norm.apply(REF), [[0, 1], [0.5, 0.5], [1, 0]])


def test_hypervolume_of_the_reference_front_by_hand():
    # staircase to (1.1, 1.1): 0.5*0.1 + 0.5*0.6 + 0.1*1.1 = 0.46
    assert hypervolume(REF, Normalization.from_front(REF)) == pytest.approx(0.46)


def test_hypervolume_ratio_of_one_extreme_point():
    # (10, 5) -> (0, 1): box 1.1 x 0.1 = 0.11
    assert hypervolume_ratio(REF[:1], REF) == pytest.approx(0.11 / 0.46)
    assert hypervolume_ratio(REF, REF) == pytest.approx(1.0)


def test_points_beyond_the_reference_point_add_nothing():
    worse = np.array([[5.0, 6.0]])  # normalized (1.25, 1.25): outside the box
    assert hypervolume_ratio(worse, REF) == 0.0


def test_igd_by_hand():
    # the two extremes found: the middle point is sqrt(0.5) away, the others 0
    assert igd(REF[[0, 2]], REF) == pytest.approx(math.sqrt(0.5) / 3)
    assert igd(REF, REF) == pytest.approx(0.0)
    assert igd(np.empty((0, 2)), REF) == math.inf


def test_nondominated_drops_dominated_and_duplicate_points():
    P = np.array([[10, 5], [9, 6], [8, 3], [8, 3], [6, 1], [5, 1]], dtype=float)
    assert nondominated_mask(P).tolist() == [True, False, True, False, True, False]
    assert nondominated(P).tolist() == REF.tolist()


def test_senses_follow_the_objective_names():
    # (utility, worst): both maximized, so (8, 4) dominates (7, 3)
    P = np.array([[8.0, 4.0], [7.0, 3.0], [6.0, 5.0]])
    assert nondominated_mask(P, ("utility", "worst")).tolist() == [True, False, True]


def test_reference_front_prefers_the_exact_front():
    union = reference_front([REF[:1], np.array([[7.0, 4.0]])])
    assert union.tolist() == [[10.0, 5.0], [7.0, 4.0]]
    exact = reference_front([REF[:1]], exact=REF)
    assert exact.tolist() == REF.tolist()


def test_on_front_count():
    P = np.array([[10.0, 5.0], [10.0, 5.0], [8.0, 3.0 + 1e-3], [6.0, 1.0]])
    assert on_front_count(P, REF) == 2


def test_bad_input_raises():
    with pytest.raises(SelectionError, match="unknown objective 'nope'"):
        nondominated_mask(REF, ("utility", "nope"))
    with pytest.raises(SelectionError, match="NaN"):
        hypervolume_ratio(np.array([[np.nan, 1.0]]), REF)
    with pytest.raises(ValueError, match="shape"):
        igd(np.ones((2, 3)), REF)
