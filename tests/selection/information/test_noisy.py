"""``noisy:R``: fresh truth degraded to rank correlation R/100, measured every round."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from selection.errors import SelectionError
from selection.information.base import RoundInputs, make_information
from selection.information.noisy import calibrated_scale, noise_scale

DOMAINS = ("mnist", "usps", "svhn", "syn")


def _inputs(t: int, rng, n: int = 20, clustered: bool = False) -> RoundInputs:
    clients = pd.DataFrame({"client_id": [f"c{i}" for i in range(n)],
                            "domain": [DOMAINS[i % 4] for i in range(n)], "n_samples": 100})  # fmt: skip
    if clustered:  # as a round's utilities are: a domain's own clients far ahead on it
        own = clients["domain"].to_numpy()
        u = {f"U_{d}": np.where(own == d, rng.normal(88, 3, n), rng.normal(35, 10, n)).clip(0, 100)
             for d in DOMAINS}  # fmt: skip
    else:
        u = {f"U_{d}": rng.uniform(20, 90, n) for d in DOMAINS}
    measured = clients.assign(round=t, U=np.mean(list(u.values()), axis=0), **u)
    return RoundInputs(t=t, k=5, clients=clients, domains=DOMAINS, measured=measured)


@pytest.mark.parametrize("clustered", [False, True], ids=["uniform", "clustered"])
@pytest.mark.parametrize("r", [50, 70, 90])
def test_the_achieved_rank_correlation_is_the_nominal_within_005(r, clustered):
    """Over 60 logged rounds of 20 clients, the mean achieved ρ is within 0.05 of R/100 —
    also where the utilities cluster by domain, where a calibration that assumes normal
    columns falls short."""
    model = make_information(f"noisy:{r}", seed=1)
    rng = np.random.default_rng(0)
    got = []
    for t in range(60):
        inp = _inputs(t, rng, clustered=clustered)
        view = model.view(inp)
        got.append(model.quality()["info_rho"])
        assert view["predicted"].all() and (view["measured_round"] == t).all()
        assert view[["U", *(f"U_{d}" for d in DOMAINS)]].stack().between(0, 100).all()
        assert (view["client_id"] == inp.measured["client_id"]).all()
    assert abs(np.mean(got) - r / 100) <= 0.05


@pytest.mark.parametrize("r", [60, 80, 90])
def test_the_calibration_is_solved_on_the_column_not_assumed_normal(r):
    """On domain-clustered columns the closed form for normal values (noise_scale) falls
    short of the nominal ρ (by more than 0.05 at 0.9); the calibrated σ meets it within 0.02 over 200 draws, and
    the same column always gets the same σ."""
    rng = np.random.default_rng(11)
    rho = r / 100
    closed, solved = [], []
    for _ in range(200):
        x = _inputs(0, rng, clustered=True).measured["U_mnist"].to_numpy()
        noise = rng.standard_normal(len(x))
        for out, sigma in ((closed, noise_scale(x.std(), rho)), (solved, calibrated_scale(x, rho))):
            out.append(spearmanr(x, np.clip(x + sigma * noise, 0, 100)).statistic)
    assert abs(np.mean(solved) - rho) <= 0.02
    if r >= 80:  # the closed form's shortfall, as on the race's first runs
        assert np.mean(closed) < rho - (0.05 if r == 90 else 0.03)
    assert calibrated_scale(x, rho) == calibrated_scale(x.copy(), rho) > 0
    assert calibrated_scale(x, 1.0) == 0.0 and calibrated_scale(np.full(20, 7.0), rho) == 0.0
    # monotone in the asked quality: less noise for a higher ρ
    assert calibrated_scale(x, 0.5) > calibrated_scale(x, 0.7) > calibrated_scale(x, 0.9)


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
