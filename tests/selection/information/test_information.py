"""Information models (selection.information): registry, specs, and each model's view."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from selection.errors import SelectionError
from selection.information import (
    RoundInputs,
    information_models,
    make_information,
    parse_information,
)
from selection.schema import validate_stats
from selection.selectors import parse_spec

DOMAINS = ("a", "b", "c")


def _clients(n_per: int = 3) -> pd.DataFrame:
    rows = [
        {"client_id": f"{d}-{j}", "domain": d, "n_samples": 10 * (j + 1) + 5 * i}
        for i, d in enumerate(DOMAINS)
        for j in range(n_per)
    ]
    return pd.DataFrame(rows)


def _probe(clients: pd.DataFrame, rng) -> pd.DataFrame:
    p = clients.copy()
    p["loss"] = rng.uniform(0.5, 2.0, len(p))
    p["F"] = rng.uniform(0.1, 5.0, len(p))
    p["B"] = rng.uniform(0.0, 0.3, len(p))
    p["cos_g"] = rng.uniform(-1, 1, len(p))
    p["steps"] = 3
    for d in DOMAINS:
        p[f"x_{d}"] = rng.normal(0, 1, len(p))
    return p


def _truth(probe: pd.DataFrame, base: dict, slope=(2.0, 3.0, 1.0), own=5.0) -> pd.DataFrame:
    """Round-stats rows whose U_d follow base_d + 1 + slope_d x_d + own·[domain = d]."""
    rows = probe[["client_id", "domain", "n_samples", "F", "B", "cos_g", "loss"]].copy()
    for s, d in zip(slope, DOMAINS, strict=True):
        rows[f"U_{d}"] = base[d] + 1.0 + s * probe[f"x_{d}"] + own * (probe["domain"] == d)
    rows["U"] = rows[[f"U_{d}" for d in DOMAINS]].mean(axis=1)
    rows.insert(0, "round", 0)
    return rows


def _inputs(t, clients, probe=None, measured=None, base=None):
    return RoundInputs(
        t=t,
        k=2,
        clients=clients,
        domains=DOMAINS,
        measured=measured,
        probe=probe,
        base_acc=base,
        val_sizes={d: 10 for d in DOMAINS},
    )


def test_registry_lists_every_model_and_parses_canonical_forms():
    assert list(information_models()) == [
        "fresh",
        "noisy",
        "stale",
        "probe",
        "pool",
        "predicted",
        "boosted",
        "boosted-lcb",
        "drift",
    ]
    assert information_models()["fresh"].upper_bound
    # the upper bounds read fresh truth: fresh itself, and noisy:R degrades it on purpose
    assert {n for n, c in information_models().items() if c.upper_bound} == {"fresh", "noisy"}
    assert parse_information("pool:10.0") == "pool:10"
    for bad, needle in (("pool", "needs P"), ("pool:0", ">= 1"), ("stale:3", "no argument"),
                        ("nope", "unknown information model")):  # fmt: skip
        with pytest.raises(SelectionError, match=needle):
            parse_information(bad)


def test_spec_information_defaults_and_canonical_spelling():
    assert parse_spec("eps:5").information == "fresh"
    assert parse_spec("eps:5@fresh").canonical == "eps:5"
    assert parse_spec("proportional").information == "rule"
    assert parse_spec("fisher-topk@stale").information == "stale"
    s = parse_spec("maxmin:2@weighted+pool:10.0")
    assert (s.canonical, s.selector_spec, s.information) == (
        "maxmin:2@pool:10+weighted",
        "maxmin:2@weighted",
        "pool:10",
    )
    with pytest.raises(SelectionError, match="needs the trained clients' validation logits"):
        parse_spec("eps:5@probe+ensemble")
    with pytest.raises(SelectionError, match="two information model modifiers"):
        parse_spec("eps:5@probe+stale")
    assert parse_spec("eps:5@stale+ensemble").information == "stale"
    for spec in ("eps:5@probe+verify", "eps:5@stale+ensemble+verify", "eps:5@predicted+verify"):
        with pytest.raises(SelectionError, match="verified picks evaluate the true aggregate"):
            parse_spec(spec)
    assert parse_spec("eps:5@pool:10+ensemble+verify").verify


def test_pool_draws_p_candidates_per_round_and_seed():
    clients = _clients(4)
    m = make_information("pool:5", seed=1)
    a, b = m.trains_before(0, clients, 2), m.trains_before(1, clients, 2)
    assert len(a) == len(set(a)) == 5 and set(a) <= set(clients["client_id"])
    assert a == make_information("pool:5", seed=1).trains_before(0, clients, 2)
    assert a != b or a != make_information("pool:5", seed=2).trains_before(0, clients, 2)
    with pytest.raises(SelectionError, match="k=6 <= P"):
        m.trains_before(0, clients, 6)
    # draws follow the sample sizes: over many rounds the largest clients are drawn most
    counts = pd.Series(
        [c for t in range(300) for c in m.trains_before(t, clients, 2)]
    ).value_counts()
    n = clients.set_index("client_id")["n_samples"]
    assert spearmanr(n[counts.index], counts).statistic > 0.8


def test_stale_keeps_each_clients_last_report_and_its_age():
    rng = np.random.default_rng(0)
    clients = _clients()
    base = {d: 50.0 for d in DOMAINS}
    m = make_information("stale")
    ids = list(clients["client_id"])
    assert m.trains_before(0, clients, 2) == ids  # round 0: nothing reported yet
    rows0 = _truth(_probe(clients, rng), base)
    v0 = m.view(_inputs(0, clients, measured=rows0))
    assert (v0["measured_round"] == 0).all() and not v0["predicted"].any()
    rows1 = _truth(_probe(clients, rng), base)
    rows1["round"] = 1
    picks = ids[:2]
    m.observe(1, rows1[rows1["client_id"].isin(picks)])
    assert m.trains_before(2, clients, 2) is None
    v2 = m.view(_inputs(2, clients)).set_index("client_id")
    assert (v2.loc[picks, "measured_round"] == 1).all() and (v2.loc[picks, "age"] == 1).all()
    assert (v2.drop(picks)["age"] == 2).all()
    np.testing.assert_allclose(v2.loc[picks, "U"], rows1.set_index("client_id").loc[picks, "U"])
    validate_stats(v2.reset_index())


def test_probe_calibration_recovers_a_linear_map_from_the_trained_clients():
    rng = np.random.default_rng(1)
    clients = _clients()
    m = make_information("probe")
    base = {"a": 40.0, "b": 30.0, "c": 20.0}
    # round 0: no calibration yet; the within-round z-score of x, in points
    p0 = _probe(clients, rng)
    v0 = m.view(_inputs(0, clients, probe=p0, base=base))
    z = (p0["x_a"] - p0["x_a"].mean()) / p0["x_a"].std(ddof=0)
    np.testing.assert_allclose(v0["U_a"], np.clip(40.0 + z, 0, 100))
    assert v0["predicted"].all()
    validate_stats(v0)
    for t in range(3):  # three rounds of trained clients (3 of 9 each)
        p = _probe(clients, rng)
        inputs = _inputs(t, clients, probe=p, base=base)
        m.view(inputs)
        truth = _truth(p, base)
        m.observe(t, truth.iloc[3 * t : 3 * t + 3], inputs)
    p = _probe(clients, rng)
    view = m.view(_inputs(3, clients, probe=p, base=base))
    truth = _truth(p, base)
    for d in DOMAINS:  # the fit is exact up to the small ridge
        np.testing.assert_allclose(view[f"U_{d}"], truth[f"U_{d}"].clip(0, 100), atol=0.05)
    np.testing.assert_allclose(view["U"], view[[f"U_{d}" for d in DOMAINS]].mean(axis=1))
    np.testing.assert_allclose(view["F"], p["F"])  # F, loss, B: exact from the probe pass
    assert m.probe_floats(10, 3) == 2 + 10 + 3


@pytest.mark.parametrize("name", ["predicted", "boosted"])
def test_predicted_learns_from_the_trained_clients_where_the_probe_map_is_not_linear(name):
    rng = np.random.default_rng(2)
    clients = _clients(4)
    base = {d: 50.0 for d in DOMAINS}
    m = make_information(name, seed=0)

    def truth_of(p):  # a saturating map: linear calibration misses it, a GP need not
        rows = _truth(p, base, slope=(0.0, 0.0, 0.0), own=0.0)
        for d in DOMAINS:
            rows[f"U_{d}"] = base[d] + 8.0 * np.tanh(2.0 * p[f"x_{d}"]) + 4.0 * p["loss"]
        rows["U"] = rows[[f"U_{d}" for d in DOMAINS]].mean(axis=1)
        return rows

    for t in range(8):
        p = _probe(clients, rng)
        inputs = _inputs(t, clients, probe=p, base=base)
        m.view(inputs)
        m.observe(t, truth_of(p).sample(6, random_state=t), inputs)
    p = _probe(clients, rng)
    view = m.view(_inputs(8, clients, probe=p, base=base))
    truth = truth_of(p)
    validate_stats(view)
    err = np.abs(
        view[[f"U_{d}" for d in DOMAINS]].to_numpy() - truth[[f"U_{d}" for d in DOMAINS]].to_numpy()
    )
    assert err.mean() < 1.0  # points, on a target spanning about 25 points
    rho = spearmanr(view["U_a"], truth["U_a"]).statistic
    assert rho > 0.9


@pytest.fixture
def toy_information():
    """A toy information model in one class: the first half of the clients train."""
    from selection.information import InformationModel, register
    from selection.information.base import _REGISTRY

    # --8<-- [start:toy-information]
    @register
    class Half(InformationModel):
        name = "half"
        summary = "the first half of the clients train before the choice"
        logits = True
        order = 99

        def trains_before(self, t, clients, k):
            ids = [str(c) for c in clients["client_id"]]
            return ids[: max(k, len(ids) // 2)]

        def view(self, inputs):
            return inputs.measured.assign(measured_round=inputs.t, predicted=False)

    # --8<-- [end:toy-information]

    yield Half
    _REGISTRY.pop("half")


def test_a_new_information_model_is_one_class(toy_information, capsys):
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from selection.cli import app
    from selection.selectors import make_selector

    from helpers import fake_oracle as fake

    assert parse_spec("eps:50@half").information == "half"
    from typer.testing import CliRunner

    out = CliRunner().invoke(app, ["methods"]).output
    assert "half" in out and "the first half of the clients train" in out
    o = fake.FakeOracle(seed=0)
    res = run_training(
        o, plan_run(make_selector("eps:50"), rounds=2, k=2, name="x", stats_mode="half")
    )
    assert set(res.stats["client_id"]) <= set(o.clients["client_id"][:4])
    assert list(res.history["stats_mode"]) == ["half", "half"]


def test_logits_files_that_are_damaged_or_wrong_are_refused_in_one_line(tmp_path):
    from selection.logits import ValidationLogits, read_logits, read_run_logits, write_logits

    good = ValidationLogits(
        round=1,
        ids=np.array(["a", "b"]),
        z=np.zeros((2, 4, 3), dtype=np.float16),
        y=np.array([0, 1, 2, 0]),
        domain=np.array([0, 0, 1, 1]),
        domains=("x", "y"),
    )
    path = write_logits(good, tmp_path / "logits" / "round_0001.npz")
    assert read_logits(path).round == 1
    raw = path.read_bytes()
    cases = {
        "empty.npz": b"",
        "half.npz": raw[: len(raw) // 2],
        "lastbyte.npz": raw[:-1],
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SelectionError, match="cannot read logits"):
            read_logits(tmp_path / name)
    arrays = dict(np.load(path))
    for name, change, needle in (
        ("nan.npz", {"z": np.full((2, 4, 3), np.nan)}, "NaN"),
        ("text.npz", {"z": np.full((2, 4, 3), "x")}, "not numbers"),
        ("frac.npz", {"y": np.array([0.0, 1.5, 2.0, 0.0])}, "y must hold integers"),
    ):
        np.savez(tmp_path / name, **{**arrays, **change})
        with pytest.raises(SelectionError, match=needle):
            read_logits(tmp_path / name)
    # a run folder whose round-1 file says round 5 is not round 1's logits
    np.savez(path, **{**arrays, "round": np.array(5)})
    with pytest.raises(SelectionError, match="of round 5, not of round 1"):
        read_run_logits(tmp_path, 1)


def test_a_baseline_with_a_surrogate_is_refused():
    from selection.selectors import make_selector

    for spec in ("random@ensemble", "proportional@weighted", "all@weighted"):
        with pytest.raises(SelectionError, match="baseline rule: it reads no surrogate"):
            make_selector(spec)
