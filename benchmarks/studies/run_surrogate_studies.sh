#!/usr/bin/env bash
# the surrogate study (seeds 0-9), then the pre-registered confirmation (seeds 10-19)
cd "$(dirname "$0")/../.."
B="proportional,random,stratified,power-of-choice:10,fisher-topk,qffl:1"
F=""
for f in eps:2 eps:5 maxmin:2 maxmin:5; do F="$F,$f,$f@weighted,$f@ensemble,$f@ensemble+verify"; done
.venv/bin/fedsel study --out results/study-surrogates --selectors "$B$F" --seeds 10 --rounds 40 --k 5 --workers 2 2>&1
echo "MAIN DONE $(date -u)"
.venv/bin/fedsel study --out results/study-surrogates-confirm --first-seed 10 --selectors "$B,maxmin:2@ensemble+verify,eps:5@ensemble+verify" --seeds 10 --rounds 40 --k 5 --workers 2 2>&1
echo "CONFIRM DONE $(date -u)"
