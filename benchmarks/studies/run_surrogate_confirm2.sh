#!/usr/bin/env bash
# issue 20: the held-out check of the entry the surrogate study found (eps-rel:0.5@ensemble,
# chosen on seeds 0-9 before any run of it on seeds 10-19), added to the confirmation study
# beside the six baselines already there; then the surrogate benchmark at K = 10.
cd "$(dirname "$0")/../.."
FEDSEL="${FEDSEL:-.venv/bin/fedsel}"
PY="${PY:-.venv/bin/python}"
$FEDSEL study --out results/study-surrogates-confirm --add eps-rel:0.5@ensemble --workers 2 2>&1
echo "ADD DONE $(date -u)"
$PY benchmarks/surrogates.py --seeds 3 --rounds 40 --drivers proportional,eps:5 --ks 10 --random 15 --append 2>&1
echo "BENCH DONE $(date -u)"
