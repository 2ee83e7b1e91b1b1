#!/usr/bin/env bash
# The fair-fight study (issue 61), as run: benchmarks/studies/fair_fight.toml on seeds 0-9.
# Resumable: the same command continues an interrupted study.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/fedsel study --config benchmarks/studies/fair_fight.toml --out results/study-fair-fight --workers 2 --no-progress
