"""The small study whose history is committed as a reference (issue 48's "the same answers").

:func:`reference_history` runs it in this process on the tiny injected federation
(:func:`helpers.fake_oracle.tiny_data`): every kind of entry — baseline rules reading nothing,
a probe pass, candidates' or picks' losses; formulations on ``stale``, ``probe``,
``predicted``, ``pool:P`` and ``fresh`` statistics, the ``ensemble`` surrogate — over two
seeds. The committed file ``tests/fl_oracle/experiments/study/reference/history.csv`` was
written by the code before the throughput work; the test compares today's history with it.

Regenerate (only when a change of the training itself is intended, and say so in the commit):

    .venv/bin/python tests/helpers/reference_study.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd

ENTRIES = (
    "proportional",
    "random",
    "stratified",
    "fisher-topk",
    "power-of-choice:4",
    "qffl:1",
    "eps:5@stale",
    "maxmin:2@probe",
    "eps:5@predicted",
    "eps-rel:0.5@pool:4",
    "eps-rel:0.5",
    "eps-rel:0.5@stale+ensemble",
)
SEEDS, ROUNDS, K = 2, 4, 3
#: columns that measure the machine, not the answer
TIMING = ("round_seconds", "round_cpu_seconds", "solve_seconds")
PATH = Path(__file__).resolve().parents[1] / "fl_oracle/experiments/study/reference/history.csv"


def reference_history(records: tuple[str, ...] = ("global", "predictions")) -> pd.DataFrame:
    """The reference study's history (every run, in settings order), timing columns dropped.

    ``records``: the study's ``records`` (every record by default, as the code that wrote the
    reference computed them all)."""
    from fl_oracle.experiments.runner import OracleFactory
    from fl_oracle.experiments.study.runs import run_study
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.selectors import make_selector

    from helpers import fake_oracle as fake

    settings = StudySettings(
        seeds=SEEDS,
        rounds=ROUNDS,
        k=K,
        selectors=ENTRIES,
        bootstrap=200,
        target_worst=50.0,
        **({"records": records} if records else {}),
    )
    factory = OracleFactory(fake.tiny_overrides(), fake.tiny_data())
    with tempfile.TemporaryDirectory() as tmp:
        h = run_study(settings, tmp, make_oracle=factory, make_selector=make_selector)
    return h.drop(columns=[c for c in TIMING if c in h.columns])


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    out = reference_history()
    PATH.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(PATH, index=False, float_format="%.17g")
    print(f"wrote {PATH} ({len(out)} rows, {len(out.columns)} columns)")
