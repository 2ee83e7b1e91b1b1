"""The same answers after the throughput work: a small study's history equals the committed
reference that the code before it wrote (tests/helpers/reference_study.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers.reference_study import PATH, reference_history

pytest.importorskip("fl_oracle.sim.oracle")

#: what the default study skips (``StudySettings.records = ()``): the global statistics are
#: absent, a baseline rule's predicted objectives NaN
GLOBAL = ("global_loss", "B_dissimilarity")
PRED = ("pred_utility", "pred_gap", "pred_worst")


def _reference() -> pd.DataFrame:
    return pd.read_csv(PATH, dtype={"selected": str, "fallback": str}, keep_default_na=False)


def _same(a: pd.DataFrame, b: pd.DataFrame, columns) -> None:
    for c in columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            x = pd.to_numeric(pd.Series(x), errors="coerce").to_numpy(dtype=float)
            y = pd.to_numeric(pd.Series(y), errors="coerce").to_numpy(dtype=float)
            same = (x == y) | (np.isnan(x) & np.isnan(y))
        else:
            same = x.astype(str) == y.astype(str)
        bad = np.flatnonzero(~same)
        assert not len(bad), f"column {c}, row {bad[0]}: {x[bad[0]]!r} != reference {y[bad[0]]!r}"


def _as_stored(h: pd.DataFrame, tmp_path) -> pd.DataFrame:
    """The history as the reference file holds it (written and read back as CSV)."""
    p = tmp_path / "h.csv"
    h.to_csv(p, index=False, float_format="%.17g")
    return pd.read_csv(p, dtype={"selected": str, "fallback": str}, keep_default_na=False)


def test_every_record_asked_gives_the_reference_bit_for_bit(tmp_path):
    ref = _reference()
    now = _as_stored(reference_history(), tmp_path)
    assert list(now.columns) == list(ref.columns)
    _same(now, ref, ref.columns)


def test_the_default_study_skips_only_records_nobody_reads(tmp_path):
    ref = _reference()
    now = _as_stored(reference_history(records=()), tmp_path)
    assert set(ref.columns) - set(now.columns) == set(GLOBAL)  # U_local is in no history
    kept = [c for c in ref.columns if c not in GLOBAL and c not in PRED]
    _same(now, ref, kept)  # choices, accuracies, costs, routes: identical
    # a rule predicts nothing; the reference entry's first run keeps every client's truth
    truth = (now["entry"] == "proportional") & (now["seed"] == 0)
    rule = (now["stats_mode"] == "rule") & ~truth
    pred = now[list(PRED)].apply(pd.to_numeric, errors="coerce")
    assert rule.sum() == 5 * 2 * 4 + 4 and pred[rule].isna().all().all()
    _same(now[~rule].reset_index(drop=True), ref[~rule].reset_index(drop=True), PRED)
