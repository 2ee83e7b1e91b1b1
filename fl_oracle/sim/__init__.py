"""The simulator layer: data, partition, model, local training, statistics, the oracle and its
checkpoints. It imports neither the experiments layer nor the CLI (checked by import-linter)."""
