#!/usr/bin/env bash
# issue 20's remaining entries: fisher-fair and eps-rel at two parameters, crossed with the
# four surrogates, added to the finished surrogate study; then the benchmark at K = 10.
cd "$(dirname "$0")/../.."
A=""
for f in fisher-fair:2 fisher-fair:4 eps-rel:0.25 eps-rel:0.5; do A="$A,$f,$f@weighted,$f@ensemble,$f@ensemble+verify"; done
.venv/bin/fedsel study --out results/study-surrogates --add "${A#,}" --workers 2 2>&1
echo "ADD DONE $(date -u)"
.venv/bin/python benchmarks/surrogates.py --seeds 3 --rounds 40 --drivers proportional,eps:5 --ks 10 --random 15 --append 2>&1
echo "BENCH DONE $(date -u)"
