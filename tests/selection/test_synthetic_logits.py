"""Synthetic validation logits: the table's utilities are what the logits give, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.synthetic_logits import synthetic_logits


def test_the_table_reads_what_the_logits_give():
    table, logits = synthetic_logits(12, seed=3, samples_per_domain=25)
    assert logits.z.shape == (12, 100, 10) and logits.z.dtype == np.float16
    assert list(logits.ids) == list(table["client_id"])
    p = SelectionProblem.from_stats(table, 1, surrogate="ensemble", logits=logits)
    for i in range(p.n):  # an ensemble of one client is that client's own accuracy
        got = evaluate(p, [i])
        assert got["utility"] == pytest.approx(table["U"].iloc[i])
        for d in p.domains:
            assert got[f"U_{d}"] == pytest.approx(table[f"U_{d}"].iloc[i])


def test_same_seed_same_logits_other_seed_others():
    a, b, c = (synthetic_logits(8, seed=s, samples_per_domain=10)[1] for s in (0, 0, 1))
    assert np.array_equal(a.z, b.z) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.z, c.z)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="classes=1"):
        synthetic_logits(4, classes=1)
