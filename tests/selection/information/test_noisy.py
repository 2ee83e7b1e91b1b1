"""``noisy:R``: fresh truth degraded to rank correlation R/100, measured every round."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.information.base import RoundInputs, make_information
from selection.information.noisy import noise_scale

DOMAINS = ("mnist", "usps", "svhn", "syn")


def _inputs(t: int, rng, n: int = 20) -> RoundInputs:
    clients = pd.DataFrame({"client_id": [f"c{i}" for i in range(n)],
                            "domain": [DOMAINS[i % 4] for i in range(n)], "n_samples": 100})  # fmt: skip
    u = {f"U_{d}": rng.uniform(20, 90, n) for d in DOMAINS}
    measured = clients.assign(round=t, U=np.mean(list(u.values()), axis=0), **u)
    return RoundInputs(t=t, k=5, clients=clients, domains=DOMAINS, measured=measured)


@pytest.mark.parametrize("r", [50, 70, 90])
def test_the_achieved_rank_correlation_is_the_nominal_within_005(r):
    """Over 100 logged rounds of 20 clients, the mean achieved ρ is within 0.05 of R/100."""
    model = make_information(f"noisy:{r}", seed=1)
    rng = np.random.default_rng(0)
    got = []
    for t in range(100):
        inp = _inputs(t, rng)
        view = model.view(inp)
        got.append(model.quality()["info_rho"])
        assert view["predicted"].all() and (view["measured_round"] == t).all()
        assert view[["U", *(f"U_{d}" for d in DOMAINS)]].stack().between(0, 100).all()
        assert (view["client_id"] == inp.measured["client_id"]).all()
    assert abs(np.mean(got) - r / 100) <= 0.05


def test_full_quality_is_the_truth_and_the_noise_is_seeded():
    rng = np.random.default_rng(3)
    inp = _inputs(4, rng)
    exact = make_information("noisy:100").view(inp)
    pd.testing.assert_series_equal(exact["U_usps"], inp.measured["U_usps"])
    a = make_information("noisy:60", seed=7).view(inp)
    b = make_information("noisy:60", seed=7).view(inp)
    c = make_information("noisy:60", seed=8).view(inp)
    assert a["U_usps"].equals(b["U_usps"]) and not a["U_usps"].equals(c["U_usps"])
    assert noise_scale(5.0, 0.5) == pytest.approx(
        5.0 * np.sqrt(1 / (2 * np.sin(np.pi / 12)) ** 2 - 1)
    )


def test_it_is_an_upper_bound_where_every_client_trains():
    model = make_information("noisy:70")
    clients = _inputs(0, np.random.default_rng(0)).clients
    assert model.upper_bound and model.trains_before(0, clients, 5) == list(clients["client_id"])
    for bad in ("noisy:0", "noisy:101", "noisy"):
        with pytest.raises(SelectionError):
            make_information(bad)


def test_the_history_records_the_achieved_quality():
    pytest.importorskip("fl_oracle.experiments.loop")
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from selection.selectors import make_selector

    from helpers import fake_oracle as fake

    oracle = fake.FakeOracle(0, clients_per_domain=3)
    sel = make_selector("eps-rel:0.5@noisy:60", seed=0)
    h = run_training(
        oracle, plan_run(sel, rounds=3, k=3, name="e", stats_mode=sel.spec.information)
    ).history
    assert {"info_rho", "info_mae"} <= set(h.columns)
    assert h["info_rho"].between(-1, 1).all() and (h["info_mae"] >= 0).all()
    assert h["upper_bound"].all()
