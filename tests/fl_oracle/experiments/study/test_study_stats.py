"""The family-wise claim: a candidate beats every baseline only where Holm over the
(baselines × metrics) Wilcoxon tests rejects every comparison, not on intervals alone."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fl_oracle.experiments.study.stats import METRICS, dominance


def _metrics(diffs: dict[str, np.ndarray], seeds: int = 10) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    base = rng.normal(70, 3, seeds)
    rows = []
    for entry, d in diffs.items():
        for s in range(seeds):
            row = {"entry": entry, "seed": s, "reached": True}
            for m in METRICS:
                row[m] = base[s] + d[s]
            rows.append(row)
    return pd.DataFrame(rows)


def test_all_seeds_better_passes_holm_one_seed_worse_does_not():
    up = np.linspace(1.0, 2.0, 10)
    mixed = up.copy()
    mixed[0] = -1.6  # one seed clearly worse: Wilcoxon p ≈ 0.02, above Holm's 0.05/4
    m = _metrics({"b1": np.zeros(10), "b2": np.full(10, 0.1), "good": up + 0.2, "mixed": mixed})
    dom = dominance(m, ["good", "mixed"], ["b1", "b2"], resamples=2000)
    g = dom[dom["entry"] == "good"]
    assert g["beats"].all() and g["beats_fw"].all()
    assert np.allclose(g["p_final_avg"], 2 / 1024)  # exact Wilcoxon, every pair positive
    assert np.allclose(g["p_holm_final_avg"], 4 * 2 / 1024)  # Holm over 2 baselines × 2 metrics
    x = dom[dom["entry"] == "mixed"]
    assert x["beats"].all()  # its intervals alone exclude zero ...
    assert not x["beats_fw"].all()  # ... the family-wise test does not agree


def test_the_study_wide_family_holds_every_comparison_of_the_plane():
    """Per entry, Holm runs over its 2 baselines × 2 metrics (4 tests: 4·2/1024 < 0.05);
    study-wide over every entry's (12 tests with three candidates: 12·2/1024 ≈ 0.023 for the
    smallest p, still < 0.05; with 30 candidates the same entry would not pass)."""
    up = np.linspace(1.0, 2.0, 10)
    few = {"b1": np.zeros(10), "b2": np.full(10, 0.1), "a": up + 0.2, "b": up + 0.3, "c": up}
    dom = dominance(_metrics(few), ["a", "b", "c"], ["b1", "b2"], resamples=500)
    assert np.allclose(dom["p_holm_sw_final_avg"].min(), 12 * 2 / 1024)
    assert dom["beats_sw"].all() and dom["beats_fw"].all()
    many = {"b1": np.zeros(10), "b2": np.full(10, 0.1)}
    many.update({f"e{i}": up + 0.01 * i for i in range(30)})
    dom = dominance(_metrics(many), [f"e{i}" for i in range(30)], ["b1", "b2"], resamples=200)
    assert dom["beats_fw"].all()  # each entry's own family of 4 rejects ...
    assert not dom["beats_sw"].any()  # ... 120 comparisons in one family do not


def test_damaged_run_files_are_named_and_never_counted(tmp_path):
    from fl_oracle.experiments.study.runs import run_file_problem

    good = pd.DataFrame(
        {"round": range(3), "entry": "eps:5", "seed": 1, "acc_avg": 50.0, "acc_worst": 40.0,
         "acc_gap": 5.0}
    )  # fmt: skip
    cases = {
        "ok": (good, ""),
        "cut": (good.iloc[:1], "holds rounds [0] (1 row), not 0..2"),
        "header": (good.iloc[:0], "holds rounds [] (0 rows)"),
        "dup": (pd.concat([good, good.iloc[[2]]]), "(4 rows)"),
        "relabel": (good.assign(entry=["eps:5", "eps:9", "eps:5"]), "row 3: entry is 'eps:9'"),
        "seed": (good.assign(seed=2), "seed is not 1"),
        "text": (good.assign(acc_avg=["50", "x", "51"]), "row 3: column acc_avg is not a number"),
        "dropped": (good.drop(columns="acc_worst"), "has no column acc_worst"),
    }
    for name, (df, why) in cases.items():
        p = tmp_path / f"{name}.csv"
        df.to_csv(p, index=False)
        got = run_file_problem(p, "eps:5", 1, 3)
        assert (why in got) and (bool(got) == bool(why)), (name, got)


def test_study_settings_are_checked_before_any_run():
    import pytest

    from fl_oracle.experiments.study.settings import StudySettings

    cases = {
        "seeds = 2\n[oracle]\nlrr = 0.1\n": "did you mean 'lr'?",
        "seeds = 2\n[oracle]\nseed = 3\n": "set per run by the study",
        "front_rounds = 3\n": "front_rounds = 3 must be a list",
        'target_worst = "high"\n': "target_worst = 'high' must be a number",
        "seedz = 3\n": "did you mean 'seeds'?",
        'seeds = 2\n[oracle]\nlr = "fast"\n': "lr='fast'",
        'selectors = ["proportional", "eps:5", "eps: 5"]\n': "are the same selector",
    }
    for text, msg in cases.items():
        with pytest.raises(ValueError, match=msg.replace("?", r"\?")):
            StudySettings.from_toml(text)


def test_float_noise_is_no_difference_and_prints_as_zero():
    """Accuracies equal up to float noise gave ci_hi = -1.4e-14 in the paired table (and
    counted it 'worse': the interval 'excluded' zero) and '[-10.35, -0.00]' in the verdict: the
    differences are kept to 1e-9 points, -0 is 0, and the report prints 0.00."""

    from fl_oracle.experiments.study.page import _table
    from fl_oracle.experiments.study.settings import StudySettings
    from fl_oracle.experiments.study.stats import paired_differences
    from fl_oracle.experiments.study.verdict import verdict, verdict_table

    acc = np.array([100 / 7, 200 / 7, 300 / 7, 400 / 7])  # 14.29 %, ... as the runs give them
    noisy = np.array([1 / 7 * 100, (1 / 7 + 1 / 7) * 100, 3 * (1 / 7) * 100, (4 / 7) * 100])
    assert not np.array_equal(acc, noisy)  # the same accuracies, as float arithmetic has them
    rows = []
    for entry, values in (("ref", acc), ("same", noisy), ("lower", noisy - [20.7, 0, 10.35, 0])):
        rows += [{"entry": entry, "seed": s, **dict.fromkeys(METRICS, v)}
                 for s, v in enumerate(values)]  # fmt: skip
    paired = paired_differences(pd.DataFrame(rows), "ref", resamples=500)
    for col in ("diff", "ci_lo", "ci_hi"):
        v = paired[col].to_numpy(float)
        assert not ((v != 0) & (np.abs(v) < 1e-9)).any(), (col, v)
        assert not np.signbit(v[v == 0]).any(), (col, v)  # no -0.0
    same = paired[paired["entry"] == "same"]
    assert (same["diff"] == 0).all() and not same["worse"].any() and not same["better"].any()
    # what the report prints of an interval ending at float noise below zero
    row = paired[(paired["entry"] == "lower") & (paired["metric"] == "final_worst")]
    noise = row.assign(ci_hi=-1.4e-14, diff=-10.35, ci_lo=-20.7, p=1.5e-5, p_holm=3e-5)
    s = StudySettings(seeds=4, rounds=2, k=3, selectors=("proportional", "lower"),
                      reference="proportional")  # fmt: skip
    cell = verdict_table(s, noise, {}).iloc[0]["final worst"]
    assert cell.startswith("-10.35 [-20.70, 0.00]"), cell
    said = " ".join(verdict(s, noise.assign(worse=True), {}))
    assert "[-20.70, 0.00]" in said and "-0.00" not in said
    html = _table(noise[["entry", "ci_hi", "p", "p_holm"]], 3)
    assert "e-14" not in html and "-0.000" not in html and ">0.000<" in html
    assert "1.5e-05" in html  # a tiny p-value keeps its two significant digits
