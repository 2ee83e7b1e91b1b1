#!/usr/bin/env bash
# The fair-fight study (issue 61), as run: benchmarks/studies/fair_fight.toml on seeds 0-9.
# Resumable: the same command continues an interrupted study.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/fedsel study --config benchmarks/studies/fair_fight.toml --out results/study-fair-fight --workers 2 --no-progress
# (As run: the study first ran 19 entries; when FedCor became the published rule and DivFL's
#  stale variant the official partial gradients, their runs were dropped and run again, and
#  the two agg=best entries were added, by
#  .venv/bin/python benchmarks/studies/drop_entries.py results/study-fair-fight fedcor:5 divfl:stale
#  fedsel study --out results/study-fair-fight --add "eps-lt:5@probe+weighted+agg=best,fisher-fair:1@probe+weighted+agg=best"
#  the other entries' stored runs re-run bit-identically under the new code beforehand (seed 0
#  of fedavg, eps-lt:5@probe, oort:0.9, fisher-fair:1@probe+agg=domain; timings aside).)
# 2. held-out seeds 10-19, entries fixed by this rule before step 1 finished (written here
#    while it ran): every counted baseline, and the three formulation entries that beat the
#    most counted baselines on both final metrics in step 1 (dominance.csv, paired 95 %
#    intervals; ties broken by final worst-domain accuracy). No formulation entry runs within
#    1.25x fedavg's client compute per round (fedavg draws clients uniformly, so its picks are
#    small on average), so the budget does not filter them here; cost.csv states each ratio.
ENTRIES=$(.venv/bin/python - <<'PY'
import pandas as pd
from fl_oracle.experiments.study.settings import is_baseline
from selection.specs import parse_spec
d = pd.read_csv("results/study-fair-fight/dominance.csv")
m = pd.read_csv("results/study-fair-fight/summary.csv").set_index("entry")
entries = list(m.index)
base = [e for e in entries if is_baseline(parse_spec(e))]
forms = [e for e in entries if e not in base and e in set(d["entry"])]
beats = d[d["baseline"].isin(base)].groupby("entry")["beats"].sum()
worst = m["final_worst_mean"]
top = sorted(forms, key=lambda e: (-int(beats.get(e, 0)), -float(worst.get(e, 0.0))))[:3]
print(",".join(base + top))
PY
)
# (As run: after the rerun of step 1 the rule chose the same entries; the confirmation's
#  fedcor:5 and divfl:stale runs were dropped the same way and run again.)
.venv/bin/fedsel study --config benchmarks/studies/fair_fight.toml --out results/study-fair-fight-confirm --first-seed 10 --seeds 10 --workers 2 --no-progress --selectors "$ENTRIES"
