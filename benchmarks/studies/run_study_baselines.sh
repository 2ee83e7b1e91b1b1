#!/usr/bin/env bash
# The baselines-of-record study (issue 47) and its held-out confirmation, as run.
# 1. seeds 0-9, 40 rounds, K = 5: the six baselines, the baselines of record, the best affordable
#    entries of results/study-costs, and the long-term formulations. The study was grown with
#    --add as the rules were built (every entry runs the same seeds and settings; runs are
#    validated against the stored settings before reuse).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=results/study-baselines
.venv/bin/fedsel study --out $OUT --workers 2 --no-progress --selectors "proportional,random,stratified,power-of-choice:10,fisher-topk,qffl:1,oort:0.9,clustered:1,eps:5@predicted,fisher-fair:1@predicted,fisher-fair:1@probe,eps-rel:0.5@probe,maxmin:2@probe"
# grown by the rules and formulations built after the first 13 entries ran (same seeds, same
# settings; divfl:fresh is DivFL's upper bound, not counted as a baseline)
.venv/bin/fedsel study --out $OUT --workers 2 --no-progress --add "divfl:stale,divfl:probe,clustered:2,fedcor:5,eps-lt:5@probe,eps-lt:5@predicted,eps-lt:5@stale,eps-lt:2@probe,divfl:fresh"
.venv/bin/fedsel study --out $OUT --workers 2 --no-progress --add "fisher-lt:5@probe,fisher-lt:5@predicted"
# 2. held-out seeds 10-19, entries fixed from step 1 before this ran (written here before step 1
#    finished): every baseline the study counts, and the formulation entries within 1.25x
#    proportional's client compute per round that beat the most counted baselines on both final
#    metrics in step 1 (dominance.csv, paired 95 % intervals; the top three, ties broken by final
#    worst-domain accuracy), so a winner or a near-winner is confirmed or refuted on new seeds.
ENTRIES=$(.venv/bin/python - <<'PY'
import pandas as pd
from fl_oracle.experiments.study.settings import is_baseline
from selection.specs import parse_spec
d = pd.read_csv("results/study-baselines/dominance.csv")
c = pd.read_csv("results/study-baselines/cost.csv").set_index("entry")
m = pd.read_csv("results/study-baselines/summary.csv").set_index("entry")
entries = list(c.index)
base = [e for e in entries if is_baseline(parse_spec(e))]
forms = [e for e in entries if e not in base and not c.loc[e, "upper_bound"]
         and c.loc[e, "compute_ratio"] <= 1.25 and e in set(d["entry"])]
beats = d[d["baseline"].isin(base)].groupby("entry")["beats"].sum()
worst = m["final_worst_mean"] if "final_worst_mean" in m.columns else m.iloc[:, 0]
top = sorted(forms, key=lambda e: (-int(beats.get(e, 0)), -float(worst.get(e, 0.0))))[:3]
print(",".join(base + top))
PY
)
.venv/bin/fedsel study --out results/study-baselines-confirm --first-seed 10 --seeds 10 --workers 2 --no-progress --selectors "$ENTRIES"
# 3. the predictor bench's best model (boosted, results/benchmarks/predictor_bench.md) served to
#    the study's two strongest formulation families, on the same seeds (grown after step 2)
.venv/bin/fedsel study --out results/study-baselines --workers 2 --no-progress --add "eps-lt:5@boosted,fisher-fair:1@boosted"
# 4. uncertainty used: the same two formulations on boosted's conformal 20 % lower bound
#    (boosted-lcb:20) against the point predictions of step 3, same seeds
.venv/bin/fedsel study --out results/study-baselines --workers 2 --no-progress --add "eps-lt:5@boosted-lcb:20,fisher-fair:1@boosted-lcb:20"
