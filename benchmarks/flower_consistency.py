"""How far an honest client's update sits below the SGD bound its Fisher trace sets.

    .venv/bin/python benchmarks/flower_consistency.py [--rounds 3]

A Flower node reports F (the mean squared per-sample gradient norm at w_t) and its update
Δ after ``steps`` SGD steps of size lr; the strategy refuses a reply whose
ρ = ‖Δ‖ / (lr · steps · √F) exceeds ``guard.RHO_MAX`` (see ``fl_oracle/experiments/flower/
guard.py``). This measures ρ for every honest client of the Digits-4 federation on the default
data, through the Flower ClientApp's own code (``digits.client_update``: what a node computes),
round after round of FedAvg over all 20 clients, in three settings: the default, a large step
with FedProx and two epochs, and small clients with the small model (the tests' scale).
Writes ``results/benchmarks/flower_consistency.{csv,md}``: per setting the largest, 99th
percentile and median ρ, and the margin RHO_MAX / largest.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from rich.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks"
SETTINGS = {
    "default (cnn, lr 0.05, 1 epoch)": {},
    "large step (lr 0.2, 2 epochs, mu 0.01)": {"lr": 0.2, "local_epochs": 2.0, "mu": 0.01},
    "small clients (cnn-small, lr 0.2, batch 8)": {
        "lr": 0.2,
        "model": "cnn-small",
        "batch_size": 8,
        "fisher_samples": 8,
        "samples_per_client": {"mnist": 20, "usps": 8, "svhn": 24, "syn": 10},
    },
}


def measure(changes: dict, rounds: int, tick: Callable[[], None]) -> pd.DataFrame:
    """ρ of every client, every round, FedAvg over all clients (the configuration's mu)."""
    from fl_oracle.experiments.flower.digits import DigitsServer, DigitsSettings, client_update
    from fl_oracle.sim.config import OracleConfig

    cfg = OracleConfig(seed=0, threads=1, **changes)
    settings = DigitsSettings.of(cfg)
    w = DigitsServer(settings).initial_params()
    rows = []
    for t in range(rounds):
        deltas, sizes = [], []
        for i in range(4 * cfg.clients_per_domain):
            d, info = client_update(settings, i, w, round_=t, mu=cfg.mu)
            norm = float(np.linalg.norm(d))
            rho = norm / (cfg.lr * info["steps"] * np.sqrt(info["F"]))
            rows.append({"round": t, "client_id": info["client_id"], "domain": info["domain"],
                         "F": info["F"], "steps": info["steps"], "norm": norm, "rho": rho})  # fmt: skip
            deltas.append(d)
            sizes.append(info["n_samples"])
            tick()
        n = np.asarray(sizes, dtype=float)
        w = w + (n[:, None] * np.stack(deltas)).sum(0) / n.sum()
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from oracle import markdown_table  # benchmarks/oracle.py, beside this script

    from fl_oracle.experiments.flower.guard import RHO_MAX
    from selection.atomic import write_table_atomic, write_text_atomic

    start = time.perf_counter()
    frames = []
    with Progress(transient=True) as progress:
        task = progress.add_task("client updates", total=len(SETTINGS) * args.rounds * 20)
        for name, changes in SETTINGS.items():
            frames.append(
                measure(changes, args.rounds, lambda: progress.advance(task)).assign(setting=name)
            )
    df = pd.concat(frames, ignore_index=True)
    OUT.mkdir(parents=True, exist_ok=True)
    write_table_atomic(df, OUT / "flower_consistency.csv")
    g = df.groupby("setting", sort=False)["rho"]
    summary = pd.DataFrame({
        "updates": g.size(),
        "largest rho": g.max().round(3),
        "p99 rho": g.quantile(0.99).round(3),
        "median rho": g.median().round(3),
        "RHO_MAX / largest": (RHO_MAX / g.max()).round(1),
    }).reset_index()  # fmt: skip
    by_domain = df.groupby(["setting", "domain"], sort=False)["rho"].max().round(3).unstack()
    lines = [
        "# Honest clients' updates against the bound their Fisher trace sets",
        "",
        f"Command: `.venv/bin/python benchmarks/flower_consistency.py --rounds {args.rounds}` "
        f"({time.perf_counter() - start:.0f} s here). ρ = ‖Δ‖ / (lr · steps · √F) of every "
        f"client's update in {args.rounds} rounds of FedAvg over the 20 Digits-4 clients "
        "(default data), computed by the Flower ClientApp's own code. The strategy refuses "
        f"a reply with ρ > RHO_MAX = {RHO_MAX:g}; a 100x scaled update multiplies ρ by 100.",
        "",
        markdown_table(summary),
        "",
        "Largest ρ by domain:",
        "",
        markdown_table(by_domain.reset_index()),
        "",
    ]
    write_text_atomic("\n".join(lines), OUT / "flower_consistency.md")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
