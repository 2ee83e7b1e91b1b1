"""benchmarks/studies/drop_entries.py: a study forgets some entries' runs (files and packed
rows) and keeps every other run byte for byte, so only those run again."""

from __future__ import annotations

import runpy

import pandas as pd

from fl_oracle.experiments.study.runs import PACKED, restore_runs, run_path
from fl_oracle.experiments.study.settings import StudySettings


def test_dropped_entries_are_neither_on_disk_nor_restored(tmp_path):
    from fl_oracle.experiments.study.runs import write_packed_history

    from helpers import ROOT

    settings = StudySettings(selectors=("fedavg", "oort:0.9"), seeds=2, rounds=2)
    frames = []
    for e in settings.selectors:
        for s in settings.seed_list:
            h = pd.DataFrame({"round": [0, 1], "seed": s, "acc_avg": [50.0 + s, 60.5],
                              "acc_worst": [40.0, 41.25], "acc_gap": [9.5, 8.0],
                              "entry": e})  # fmt: skip
            p = run_path(tmp_path, e, s)
            p.parent.mkdir(parents=True, exist_ok=True)
            h.to_csv(p, index=False)
            frames.append(h)
    write_packed_history(settings, pd.concat(frames, ignore_index=True), tmp_path)
    kept = run_path(tmp_path, "fedavg", 1).read_bytes()
    (tmp_path / "study.toml").write_text("")

    drop = runpy.run_path(str(ROOT / "benchmarks" / "studies" / "drop_entries.py"))
    files, rows = drop["drop_entries"](tmp_path, ["oort:0.9"])
    assert (files, rows) == (2, 4)
    assert not run_path(tmp_path, "oort:0.9", 0).parent.exists()
    assert set(pd.read_parquet(tmp_path / PACKED)["entry"]) == {"fedavg"}
    # the kept entry's files come back byte for byte from the packed history; the dropped
    # entry's do not (the study runs them again)
    run_path(tmp_path, "fedavg", 1).unlink()
    assert restore_runs(settings, tmp_path) == [("fedavg", 1)]
    assert run_path(tmp_path, "fedavg", 1).read_bytes() == kept
