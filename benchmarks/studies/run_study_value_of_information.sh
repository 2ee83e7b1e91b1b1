#!/usr/bin/env bash
# The value-of-information race (issue 62): benchmarks/studies/value_of_information.toml.
# Resumable: the same command continues an interrupted race to the same decisions.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/fedsel study --config benchmarks/studies/value_of_information.toml --out results/study-value-of-information --workers 2 --no-progress
# the second federation (label skew within each domain): the same race
.venv/bin/fedsel study --config benchmarks/studies/value_of_information_alpha05.toml --out results/study-value-of-information-alpha05 --workers 2 --no-progress
