"""``boosted`` and ``boosted-lcb``: the conformal correction by hand, the intervals' coverage on
a stationary synthetic federation, and the lower bound served as U_d."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.information import RoundInputs, make_information
from selection.information.boosted import conformal_shift
from selection.specs import parse_spec

DOMAINS = ("a", "b")


def test_conformal_shift_by_hand():
    s = np.arange(1.0, 10.0)  # nine scores 1..9
    assert conformal_shift(s, 0.9) == 9.0  # ⌈10 · 0.9⌉ = 9th smallest
    assert conformal_shift(s, 0.5) == 5.0  # ⌈10 · 0.5⌉ = 5th
    assert conformal_shift(s, 0.99) == 9.0  # beyond n: the largest
    assert conformal_shift([], 0.9) == 0.0


def _round(t, rng, n=12):
    clients = pd.DataFrame(
        {
            "client_id": [f"c{i}" for i in range(n)],
            "domain": [DOMAINS[i % 2] for i in range(n)],
            "n_samples": 20,
        }
    )
    probe = clients.assign(
        loss=rng.uniform(0.5, 2, n), F=rng.uniform(0.1, 3, n), B=0.1, cos_g=0.0, steps=3
    )
    for d in DOMAINS:
        probe[f"x_{d}"] = rng.normal(size=n)
    base = {d: 50.0 for d in DOMAINS}
    truth = clients.copy()
    for d in DOMAINS:  # y = 4 x + noise whose spread grows with the loss
        noise = rng.normal(0, 1.0 + probe["loss"].to_numpy(), n)
        truth[f"U_{d}"] = base[d] + 4.0 * probe[f"x_{d}"] + noise
    inputs = RoundInputs(
        t=t, k=4, clients=clients, domains=DOMAINS, probe=probe, base_acc=base,
        val_sizes={d: 100 for d in DOMAINS},
    )  # fmt: skip
    return inputs, truth


def test_intervals_cover_about_as_promised():
    rng = np.random.default_rng(0)
    m = make_information("boosted", seed=0)
    lower, both, seen = 0, 0, 0
    for t in range(30):
        inputs, truth = _round(t, rng)
        view = m.view(inputs)
        if t >= 8:  # scores of several rounds exist
            for d in DOMAINS:
                y = truth[f"U_{d}"].to_numpy()
                lo, hi = view[f"lo_{d}"].to_numpy(), view[f"hi_{d}"].to_numpy()
                lower += int((y >= lo).sum())
                both += int(((y >= lo) & (y <= hi)).sum())
                seen += len(y)
        m.observe(t, truth.sample(6, random_state=t), inputs)  # six clients train a round
    assert 0.82 <= lower / seen <= 0.97  # nominal 0.90
    assert 0.70 <= both / seen <= 0.90  # nominal 0.80


def test_the_lower_bound_is_what_boosted_lcb_serves():
    rng = np.random.default_rng(1)
    m = make_information("boosted-lcb:20", seed=0)
    for t in range(6):
        inputs, truth = _round(t, rng)
        view = m.view(inputs)
        m.observe(t, truth.sample(6, random_state=t), inputs)
    for d in DOMAINS:
        np.testing.assert_allclose(view[f"U_{d}"], view[f"lo_{d}"])
        assert (view[f"lo_{d}"] <= view[f"hi_{d}"]).all()


@pytest.mark.parametrize(
    "spec", ["eps:5@boosted-lcb", "eps:5@boosted-lcb:0", "eps:5@boosted-lcb:50"]
)
def test_a_level_outside_1_to_49_is_refused(spec):
    with pytest.raises(SelectionError):
        parse_spec(spec)


def test_drift_blends_by_hand_and_learns_a_lasting_report():
    """γ^age · stale + (1 − γ^age) · probe; where the truth is each client's fixed own effect
    (what its report said), the decay learned is near 1 and the error near 0."""
    from selection.information.drift import blend
    from selection.information.predicted import MAX_AGE

    out = blend(
        np.array([4.0, 4.0, 4.0]), np.array([0.0, 0.0, 0.0]), np.array([1, 2, MAX_AGE]), 0.5
    )
    np.testing.assert_allclose(out, [2.0, 1.0, 0.0])

    rng = np.random.default_rng(3)
    effect = {f"c{i}": rng.normal(0, 5) for i in range(12)}
    m = make_information("drift", seed=0)
    errs = []
    for t in range(12):
        inputs, truth = _round(t, rng)
        for d in DOMAINS:
            truth[f"U_{d}"] = 50.0 + truth["client_id"].map(effect).to_numpy()
        view = m.view(inputs)
        if t >= 8:
            errs.append(np.abs(view["U_a"].to_numpy() - truth["U_a"].to_numpy()).mean())
        m.observe(t, truth.sample(6, random_state=t), inputs)
    assert m.gamma >= 0.9
    assert np.mean(errs) < 2.0  # points; clients never reported carry the probe's guess
