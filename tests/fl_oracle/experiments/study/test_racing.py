"""Racing (fl_oracle/experiments/study/racing.py): the comparisons with the best by hand, the
error rate over many synthetic races with known differences, a clearly worse entry dropped at
the first look, a tie declared tied, and a killed race resumed to the identical log."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from fl_oracle.experiments.study.racing import (
    Race,
    finished,
    look_table,
    mcb,
    next_entries,
    race_verdict,
)


def _metrics(means: dict[str, tuple[float, float]], seeds: int, rng, sd: float = 3.0,
             skew: bool = False) -> pd.DataFrame:  # fmt: skip
    """Per-seed final metrics of entries with known means (worst, average): a seed effect
    shared by every entry (common random numbers) plus each run's own noise, clipped to
    [0, 100]; ``skew``: the noise is a centred exponential (a long upper tail)."""
    rows = []
    for s in range(seeds):
        shared = rng.normal(0, 5, size=2)
        for e, (w, a) in means.items():
            if skew:
                noise = (rng.exponential(sd, size=2) - sd) * np.array([1.0, 0.5])
            else:
                noise = rng.normal(0, sd, size=2) * np.array([1.0, 0.5])
            x = np.clip(np.array([w, a]) + shared + noise, 0, 100)
            rows.append({"entry": e, "seed": s, "final_worst": x[0], "final_avg": x[1]})
    return pd.DataFrame(rows)


def _race(metrics: pd.DataFrame, race: Race, keep=()) -> pd.DataFrame:
    running = list(dict.fromkeys(metrics["entry"]))
    m = len(running)
    logs = []
    for j, n in enumerate(race.looks(), start=1):
        look = look_table(metrics, running, list(range(n)), race, m)
        logs.append(look.assign(look=j))
        if finished(look, running):
            break
        running = next_entries(look, running, keep=keep)
    return pd.concat(logs, ignore_index=True)


def _wrong_claims(log: pd.DataFrame, means: dict, delta: float) -> bool:
    """Any claim of the race false: an entry 'worse' that is a best one, 'tied' or 'best'
    that lies more than δ below the best, 'best' that is not a best one."""
    for col, metric in ((0, "final_worst"), (1, "final_avg")):
        mu = {e: v[col] for e, v in means.items()}
        top = max(mu.values())
        for _, r in log[log["metric"] == metric].iterrows():
            gap = mu[r["entry"]] - top
            if r["status"] == "worse" and gap == 0:
                return True
            if r["status"] in ("tied", "best") and gap < -delta:
                return True
            if r["status"] == "best" and gap < 0:
                return True
    return False


def test_mcb_by_hand():
    """Three entries, differences exact (no noise): the intervals are the differences."""
    v = pd.DataFrame({"a": [70.0, 72, 74], "b": [69.0, 71, 73], "c": [60.0, 62, 64]})
    t = mcb(v, 0.05)  # every paired difference constant: se 0, d·se 0
    assert t["half_width"].tolist() == [0.0, 0.0, 0.0]
    assert t.loc["a", "lower"] == 0.0 and t.loc["a", "upper"] == pytest.approx(1.0)
    assert t.loc["b", "upper"] == 0.0 and t.loc["b", "lower"] == pytest.approx(-1.0)
    assert t.loc["c", "lower"] == pytest.approx(-10.0)


@pytest.mark.parametrize("skew", [False, True])
def test_the_error_rate_over_many_races_is_at_most_alpha(skew):
    """150 races of five entries (two tied for best, one 0.5 below, one 2 below, one 8
    below), α = 0.1: the share of races with any false claim stays at most α (Bonferroni
    makes the true rate far lower; an anti-conservative procedure, e.g. one uncorrected
    t-interval per look, fails this)."""
    means = {"a": (80.0, 85.0), "b": (80.0, 84.0), "c": (79.5, 85.0), "d": (78.0, 83.0),
             "e": (72.0, 80.0)}  # fmt: skip
    race = Race(delta=1.0, first=5, batch=5, alpha=0.1, budget=20)
    rng = np.random.default_rng(7)
    wrong = sum(
        _wrong_claims(_race(_metrics(means, 20, rng, skew=skew), race), means, race.delta)
        for _ in range(150)
    )
    assert wrong / 150 <= race.alpha


def test_a_clearly_worse_entry_is_dropped_at_the_first_look():
    means = {"a": (80.0, 85.0), "b": (79.0, 84.0), "bad": (50.0, 60.0)}
    race = Race(delta=1.0, first=10, batch=5, budget=40)
    log = _race(_metrics(means, 40, np.random.default_rng(1)), race)
    first = log[log["look"] == 1]
    assert (first[first["entry"] == "bad"]["status"] == "worse").all()
    assert "bad" not in set(log[log["look"] == 2]["entry"])  # it ran no more seeds


def test_a_tie_is_declared_tied_and_the_race_stops():
    """Two entries equal in both metrics, little noise: tied within δ, and the race stops
    before its budget once nothing is unresolved."""
    means = {"a": (80.0, 85.0), "b": (80.0, 85.0)}
    race = Race(delta=1.0, first=10, batch=5, budget=60)
    log = _race(_metrics(means, 60, np.random.default_rng(2), sd=0.8), race)
    v = race_verdict(log, race)
    assert set(v["status"]) <= {"tied", "best"} and (v["status"] == "tied").any()
    assert log["n"].max() < 60


def test_a_killed_race_resumes_to_the_identical_log(tmp_path):
    """A racing study run whole, and the same study killed after its first look (its later
    run files and its log gone) and run again: the same log, the same history."""
    from fl_oracle.experiments.study.runs import RACE_LOG, load_history, run_path, run_study
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.selectors import make_selector

    from helpers import fake_oracle as fake

    def oracle(seed):
        return fake.FakeOracle(seed, clients_per_domain=2)

    s = StudySettings(seeds=6, rounds=3, k=3, selectors=("proportional", "random", "fisher-topk"),
                      bootstrap=100, race=True, race_first=3, race_batch=3)  # fmt: skip
    whole = tmp_path / "whole"
    h = run_study(s, whole, make_oracle=oracle, make_selector=make_selector)
    log = pd.read_csv(whole / RACE_LOG)
    assert set(log["look"]) <= {1, 2} and log["n"].min() == 3
    killed = tmp_path / "killed"
    shutil.copytree(whole, killed)
    (killed / RACE_LOG).unlink()
    for e in s.selectors:
        for seed in (3, 4, 5):
            run_path(killed, e, seed).unlink(missing_ok=True)
    again = run_study(s, killed, make_oracle=oracle, make_selector=make_selector)
    pd.testing.assert_frame_equal(pd.read_csv(killed / RACE_LOG), log)
    timing = [c for c in h.columns if c.endswith("_seconds")]
    pd.testing.assert_frame_equal(again.drop(columns=timing), h.drop(columns=timing))
    assert len(load_history(s, killed)) == len(h)


def test_race_settings_are_checked():
    from fl_oracle.experiments.study.settings import StudySettings

    for bad, match in ((dict(race="yes"), "race = 'yes'"), (dict(race_first=1), "race_first"),
                       (dict(race_delta=0), "race_delta"), (dict(race_alpha=1.5), "race_alpha")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            StudySettings(**bad)
    s = StudySettings(race=True, seeds=22)
    assert s.racing.looks() == [10, 15, 20, 22] and StudySettings.from_toml(s.to_toml()) == s
