#!/usr/bin/env bash
# The committed map (issue 51), as run: eight cells x 15 entries, screened on seeds 0-2, the
# cells whose leader was ahead confirmed on held-out seeds 100-104. Resumable: run it again.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/fedsel study --config benchmarks/studies/map.toml --out results/map --workers 2 --no-progress
