#!/usr/bin/env bash
# The affordable-statistics study (issue 35) and its held-out confirmation, as run.
# 1. seeds 0-9: six baselines charged for what they read, the seed's formulations under the
#    affordable information models, and two fresh entries as the labelled upper bound.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/fedsel study --out results/study-costs --workers 2 --selectors "proportional,random,stratified,power-of-choice:10,fisher-topk,qffl:1,eps:5@stale,eps:5@probe,eps:5@pool:10,eps:5@predicted,eps-rel:0.5@stale,eps-rel:0.5@probe,eps-rel:0.5@pool:10,eps-rel:0.5@predicted,maxmin:2@stale,maxmin:2@probe,maxmin:2@pool:10,maxmin:2@predicted,eps-rel:0.5@stale+ensemble,eps-rel:0.5@pool:10+ensemble,fisher-fair:1@probe,fisher-fair:1@predicted,eps-rel:0.5,eps-rel:0.5@ensemble"
# 2. held-out seeds 10-19, entries fixed from step 1 before this ran: the affordable entries
#    (<= 1.25x proportional's compute per round) beating at least 4 of the 6 baselines on both
#    final metrics in step 1 (dominance.csv).
.venv/bin/fedsel study --out results/study-costs-confirm --first-seed 10 --seeds 10 --workers 2 --selectors "proportional,random,stratified,power-of-choice:10,fisher-topk,qffl:1,eps:5@predicted,fisher-fair:1@predicted,fisher-fair:1@probe,eps-rel:0.5@probe"
