"""The privacy mode of reported statistics: clipping, noise against the accountant, secure
aggregation's refusals, the loop's columns (fl_oracle.experiments.privacy)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fl_oracle.experiments.loop import run_training
from fl_oracle.experiments.plan import plan_run
from fl_oracle.experiments.privacy import FIELDS, RunAccountant, StatsPrivacy
from selection.selectors import make_selector

from helpers import fake_oracle as fake

pytest.importorskip("opacus")


class _Zero:
    """An rng whose noise is zero: what is left is the clipping."""

    def normal(self, loc, scale, size):
        return np.zeros(size)


def _report(n: int = 6) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "client_id": [f"c{i}" for i in range(n)],
            "loss": np.linspace(-5, 50, n),
            "F": np.geomspace(1e-9, 1e9, n),
            "B": np.linspace(-1, 2, n),
            "cos_g": np.linspace(-3, 3, n),
            "x_a": np.linspace(-4, 4, n),
            "x_b": np.zeros(n),
            "U": np.arange(n, dtype=float),  # not a report: never touched
        }
    )


def test_every_reported_field_is_clipped_to_its_box_and_nothing_else_changes():
    p = StatsPrivacy(epsilon=1.0, rounds=10)
    out = p.privatize(_report(), ("loss", "F", "B", "cos_g", "x"), _Zero())
    for col, (lo, hi) in [
        ("loss", FIELDS["loss"]),
        ("B", FIELDS["B"]),
        ("cos_g", FIELDS["cos_g"]),
        ("x_a", FIELDS["x"]),
    ]:
        assert out[col].min() == pytest.approx(lo) and out[col].max() == pytest.approx(hi)
    lo, hi = FIELDS["F"]
    assert np.log(out["F"]).min() == pytest.approx(lo) and np.log(out["F"]).max() == pytest.approx(
        hi
    )
    assert (out["U"] == _report()["U"]).all() and (out["client_id"] == _report()["client_id"]).all()


def test_one_clients_report_moves_at_most_sqrt_m_in_unit_widths():
    """The L2 sensitivity the noise is calibrated to: any two clipped reports of m fields."""
    rng = np.random.default_rng(0)
    p = StatsPrivacy(epsilon=1.0, rounds=10)
    cols = ["loss", "B", "cos_g", "x_a", "x_b"]
    for _ in range(200):
        a = pd.DataFrame({c: rng.normal(0, 100, 2) for c in cols})
        out = p.privatize(a, ("loss", "B", "cos_g", "x"), _Zero())
        unit = np.column_stack(
            [(out[c] - FIELDS["x" if c.startswith("x_") else c][0])
             / np.diff(FIELDS["x" if c.startswith("x_") else c])[0] for c in cols]
        )  # fmt: skip
        assert np.linalg.norm(unit[0] - unit[1]) <= math.sqrt(len(cols)) + 1e-12


def test_the_noise_multiplier_composes_to_the_asked_budget():
    for eps, rounds in ((8.0, 40), (2.0, 40), (1.0, 10)):
        p = StatsPrivacy(epsilon=eps, delta=1e-5, rounds=rounds)
        acc = RunAccountant(p)
        spent = [acc.step() for _ in range(rounds)]
        assert spent == sorted(spent)  # the budget is spent round by round
        assert spent[-1] <= eps and spent[-1] == pytest.approx(eps, rel=0.01)
    assert StatsPrivacy(epsilon=2.0, rounds=40).z > StatsPrivacy(epsilon=8.0, rounds=40).z
    assert StatsPrivacy().z == 0.0 and not StatsPrivacy().on


def test_the_noise_has_the_calibrated_scale():
    """Unit-width noise of standard deviation z·√m: measured on many clients, mid-box."""
    p = StatsPrivacy(epsilon=5000.0, rounds=1)  # a small z: the second clip stays inactive
    n, m = 20_000, 2
    table = pd.DataFrame({"cos_g": np.zeros(n), "x_a": np.zeros(n)})
    out = p.privatize(table, ("cos_g", "x"), np.random.default_rng(1))
    sd = (out["cos_g"].to_numpy() / 2.0).std()  # width 2 -> unit
    assert sd == pytest.approx(p.z * math.sqrt(m), rel=0.03)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "2", True])
def test_a_bad_epsilon_is_refused(bad):
    with pytest.raises(ValueError, match="epsilon"):
        StatsPrivacy(epsilon=bad)


def test_a_budget_no_noise_can_meet_is_refused_in_one_line():
    with pytest.raises(ValueError, match="too small for the accountant"):
        StatsPrivacy(epsilon=1e-6, rounds=400)


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-5, float("nan")])
def test_a_bad_delta_is_refused(bad):
    with pytest.raises(ValueError, match="delta"):
        StatsPrivacy(epsilon=1.0, delta=bad)


# ------------------------------------------------------------------------- in the loop
def _oracle():
    pytest.importorskip("fl_oracle.sim.oracle")
    from fl_oracle.experiments.runner import OracleFactory

    return OracleFactory(fake.tiny_overrides(), fake.tiny_data())(0)


def _run(spec, mode, privacy, rounds=3):
    return run_training(
        _oracle(),
        plan_run(make_selector(spec, seed=0), rounds=rounds, k=3, name=spec,
                 stats_mode=mode, privacy=privacy, records=()),
    ).history  # fmt: skip


def test_privacy_off_changes_nothing_but_adds_its_columns():
    plain = _run("maxmin:2", "probe", None)
    off = _run("maxmin:2", "probe", StatsPrivacy(rounds=3))
    assert (plain["selected"] == off["selected"]).all()
    assert (plain["acc_worst"] == off["acc_worst"]).all()
    assert "dp_epsilon" not in plain and np.isinf(off["dp_epsilon"]).all()


def test_a_private_run_records_its_budget_and_repeats_for_the_same_seed():
    p = StatsPrivacy(epsilon=2.0, rounds=3)
    a, b = _run("maxmin:2", "probe", p), _run("maxmin:2", "probe", p)
    assert (a["selected"] == b["selected"]).all()  # the noise is the seed's
    assert a["dp_epsilon"].is_monotonic_increasing
    assert a["dp_epsilon"].iloc[-1] == pytest.approx(2.0, rel=0.01)
    assert (a["dp_z"] == p.z).all()


def test_a_rule_reports_only_what_it_reads():
    """fisher-topk's picks follow the noised F: with a huge noise they differ from the
    noiseless picks on some round, and its charge is the same as without privacy."""
    plain = _run("fisher-topk", "rule", None, rounds=4)
    noisy = _run("fisher-topk", "rule", StatsPrivacy(epsilon=0.3, rounds=4), rounds=4)
    assert (plain["selected"] != noisy["selected"]).any()
    # what the rule reads and sends is the same with the mode (the picks' training differs)
    cost = ["cost_probe_samples", "cost_bytes_up", "cost_bytes_down"]
    assert (plain[cost].to_numpy() == noisy[cost].to_numpy()).all()
    assert (plain["cost_probe_samples"] > 0).all()


@pytest.mark.parametrize("mode", ["fresh", "pool:4", "stale", "predicted"])
def test_secure_aggregation_refuses_the_models_that_read_one_clients_update(mode):
    with pytest.raises(ValueError, match=f"{mode.split(':')[0]} is impossible under secure"):
        _run("maxmin:2", mode, StatsPrivacy(rounds=3, secure_aggregation=True))


def test_under_secure_aggregation_probe_runs_uncalibrated():
    p = StatsPrivacy(rounds=3, secure_aggregation=True)
    h = _run("maxmin:2", "probe", p)
    assert len(h) == 3 and h["stats_mode"].eq("probe").all()
    assert _run("fisher-topk", "rule", p)["stats_mode"].eq("rule").all()


def test_study_settings_carry_and_check_the_privacy_mode():
    from fl_oracle.experiments.study.settings import StudySettings

    s = StudySettings(dp_epsilon=2.0, selectors=("proportional", "maxmin:2@probe"))
    assert s.privacy.epsilon == 2.0 and s.privacy.rounds == s.rounds
    assert StudySettings.from_toml(s.to_toml()) == s
    assert StudySettings().privacy is None
    with pytest.raises(ValueError, match="maxmin:2@pool:10.*impossible under secure"):
        StudySettings(secure_aggregation=True, selectors=("proportional", "maxmin:2@pool:10"))
    with pytest.raises(ValueError, match="epsilon"):
        StudySettings.from_toml("dp_epsilon = -3.0")


def test_the_secure_aggregation_help_names_what_the_models_declare():
    """The help says which models secure aggregation leaves (every one but probe): what the
    registry declares (server_evaluates), not a hand-kept list (it once named four of seven)."""
    from fl_oracle.cli.options import SECURE_AGGREGATION
    from selection.information import information_models

    left = [name for name, model in information_models().items() if not model.server_evaluates]
    assert left == ["probe"]
    assert "every information model but probe refused" in SECURE_AGGREGATION.help


@pytest.mark.parametrize("epsilon", [1e12, 1e50, 1e308])
def test_a_huge_epsilon_is_calibrated_at_once(epsilon):
    """The accountant's search is bounded: an ε no deployment would ask for still returns (it
    hung at 1e50 and 1e308), with a noise multiplier that shrinks as ε grows."""
    from fl_oracle.experiments.privacy import StatsPrivacy

    z = StatsPrivacy(epsilon=epsilon, rounds=40).z
    assert 0 < z < 1e-5
