#!/usr/bin/env bash
# The cross-device study (issue 37): N = 200, K = 20, 5 seeds x 60 rounds, settings in
# benchmarks/studies/cross_device.toml. Resumable: the same command continues an interrupted study.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/fedsel study --out results/study-cross-device --config benchmarks/studies/cross_device.toml --workers "${WORKERS:-2}"
