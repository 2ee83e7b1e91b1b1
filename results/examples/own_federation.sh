#!/usr/bin/env bash
# "Your own federation" (README): a generated image-folder dataset of another shape than
# Digits-4 (3 domains, 7 classes, 64x64), one training run and a 2-seed study on it.
set -e
cd "$(dirname "$0")/../.."
FEDSEL="${FEDSEL:-.venv/bin/fedsel}"
[ -d runs/shapes ] || $FEDSEL data shapes -o runs/shapes --per-class 60 --size 64
$FEDSEL train --dataset runs/shapes --resolution 64 -r 30 -k 5 --lr 0.1 --local-epochs 2 \
  --selector eps-rel:0.5@ensemble -o results/examples/shapes-train --overwrite
$FEDSEL study --dataset runs/shapes --resolution 64 -o results/examples/shapes-study \
  --seeds 2 -r 30 -k 5 --workers 1 \
  --selectors proportional,fisher-topk,qffl:1,eps-rel:0.5@ensemble,maxmin:2@ensemble
