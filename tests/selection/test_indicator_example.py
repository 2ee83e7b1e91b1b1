"""The worked example of the indicators page (docs/concepts/indicators.md): its numbers are
these assertions."""

import pytest


def test_the_worked_example():
    # --8<-- [start:example]
    from selection.indicators import epsilon_indicator, hypervolume_ratio, igd, on_front_count

    # (utility %, gap pp): the exact front of a round, and two approximations of it
    exact = [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]
    ends_only = [[80.0, 10.0], [70.0, 1.0]]  # the two ends, the middle point missed
    near = [[78.0, 9.0], [74.0, 5.0], [70.0, 1.0]]  # three points, two of them off the front

    for name, points in (("ends only", ends_only), ("near", near)):
        print(
            name,
            on_front_count(points, exact),
            round(hypervolume_ratio(points, exact), 3),
            round(igd(points, exact), 3),
            round(epsilon_indicator(points, exact), 3),
        )
    # ends only 2 0.387 0.2 0.5
    # near 1 0.84 0.126 0.2
    # --8<-- [end:example]
    assert on_front_count(ends_only, exact) == 2 and on_front_count(near, exact) == 1
    assert hypervolume_ratio(ends_only, exact) == pytest.approx(0.21 / 0.54333, abs=1e-4)
    assert round(hypervolume_ratio(near, exact), 3) == 0.84
    assert igd(ends_only, exact) == pytest.approx((0.25 + 1 / 9) ** 0.5 / 3)
    assert round(igd(near, exact), 3) == 0.126
    assert epsilon_indicator(ends_only, exact) == pytest.approx(0.5)
    assert epsilon_indicator(near, exact) == pytest.approx(0.2)
    assert epsilon_indicator(exact, exact) == 0.0
