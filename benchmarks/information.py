"""How well does each information model predict what a client's update would do, and what
does it cost a deployment? MAE and within-round Spearman ρ of U_{i,d}, U_d(S), worst(S).

For every round of training on the study's default federation (its oracle settings), the
trajectory committed by FedAvg's sampling (``proportional``), every client is trained and
measured for the ground truth (the simulator's; no model sees it unless it trains that
client). Each information model (:mod:`selection.information`) then builds the table a
selector would see, exactly as in ``fedsel train``: ``stale`` from the clients' last reports,
``probe`` from every client's probe batch calibrated on the clients that trained, ``pool:P``
from its P trained candidates, ``predicted`` from its regressor; ``fresh`` is the truth
itself (the upper bound: its U_{i,d} error is 0 by definition, its U_d(S) error is the mean
surrogate's).

Per model, over seeds × rounds:

* MAE (pp) and within-round Spearman ρ (mean over rounds and domains) of U_{i,d} against the
  true single-client utilities, over the clients the model shows (all; pool: its P);
* MAE (pp) and within-round ρ of U_d(S) and worst(S) — the mean surrogate on the model's
  table — against the realized accuracy of the sample-weighted aggregate
  (``Oracle.evaluate_aggregate``), over ``--random`` random K-subsets per round (of the pool's
  candidates for ``pool``);
* deployment cost per round relative to FedAvg's committing the same K clients: client
  compute (train + probe samples) and bytes (up + down) (:mod:`fl_oracle.experiments.cost`).

Writes ``results/benchmarks/information.csv`` (one row per model), ``information_rounds.csv``
(per seed and round) and ``information.md``. Run from the repository root::

    .venv/bin/python benchmarks/information.py      # 3 seeds x 40 rounds, K = 5
    .venv/bin/python benchmarks/information.py --resume   # after a stop: only the seeds left

Each finished seed is written to ``information_rounds.part.csv`` (removed when the whole run
ends), so a stopped run continues with ``--resume``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fl_oracle.experiments.cost import round_cost
from fl_oracle.experiments.run_record import cpu_model
from fl_oracle.experiments.study.settings import STUDY_ORACLE
from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.loading import load_federation_data
from fl_oracle.sim.oracle import Oracle
from selection.atomic import write_table_atomic, write_text_atomic
from selection.baselines.sampling import proportional_sample
from selection.information import RoundInputs, make_information
from selection.information.probe import Calibrated
from selection.progress import rich_progress

OUT = Path("results/benchmarks")
MODELS = ("fresh", "stale", "probe", "pool:10", "predicted")


def _rho(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def _round(oracle, models, k, n_random, rng, t, seed) -> list[dict]:
    domains = list(oracle.domains)
    truth = oracle.round_stats()  # every client trains: the simulator's ground truth
    work = oracle.local_work()
    probe, acc, sizes = oracle.probe_table()
    clients = oracle.clients
    ids = list(clients["client_id"])
    n = clients["n_samples"].to_numpy(float)
    picks = [ids[i] for i in proportional_sample(n, k, rng)]  # FedAvg's commit this round
    fedavg = round_cost(trained={c: work[c] for c in picks}, probed=(), probe_sizes={},
                        probe_floats=0, model_bytes=oracle.model_bytes)  # fmt: skip
    by_id = truth.set_index("client_id")
    realized: dict[tuple[str, ...], np.ndarray] = {}

    def real(sel) -> np.ndarray:
        key = tuple(sorted(sel))
        if key not in realized:
            realized[key] = oracle.evaluate_aggregate(list(key))[1]
        return realized[key]

    rows = []
    for name, m in models.items():
        before = m.trains_before(t, clients, k)
        measured = None if before is None else by_id.loc[before].reset_index()
        inputs = RoundInputs(
            t=t, k=k, clients=clients, domains=tuple(domains), measured=measured,
            probe=probe if isinstance(m, Calibrated) else None,
            base_acc=acc, val_sizes=sizes,
        )  # fmt: skip
        view = m.view(inputs).set_index("client_id")
        shown = list(view.index)
        ud_pred = view.loc[shown, [f"U_{d}" for d in domains]].to_numpy(float)
        ud_true = by_id.loc[shown, [f"U_{d}" for d in domains]].to_numpy(float)
        rho_i = np.nanmean([_rho(ud_pred[:, j], ud_true[:, j]) for j in range(len(domains))])
        subsets = [list(rng.choice(shown, k, replace=False)) for _ in range(n_random)]
        pos = {c: i for i, c in enumerate(shown)}
        pred_S = np.array([ud_pred[[pos[c] for c in S]].mean(0) for S in subsets])
        real_S = np.array([real(S) for S in subsets])
        # who trained and who probed: the picks (committed) plus the model's own
        trained = {c: work[c] for c in dict.fromkeys([*(before or ()), *picks])}
        probed = m.probed(ids, before, picks)
        # as the loop charges (fl_oracle/experiments/loop.py): a model that probes every client
        # before the choice sends w_t and the D validation gradients down to each
        down = (
            m.down_messages(len(probed), len(trained), len(domains))
            if m.probes and not before
            else None
        )
        cost = round_cost(trained=trained, probed=probed, probe_sizes=oracle.probe_sizes(),
                          probe_floats=m.probe_floats(oracle.n_classes, len(domains)),
                          model_bytes=oracle.model_bytes, down_messages=down)  # fmt: skip
        compute = cost["cost_train_samples"] + cost["cost_probe_samples"]
        sent = cost["cost_bytes_up"] + cost["cost_bytes_down"]
        rows.append(
            {
                "model": name, "seed": seed, "round": t,
                "mae_Uid": float(np.abs(ud_pred - ud_true).mean()),
                "rho_Uid": float(rho_i),
                "mae_UdS": float(np.abs(pred_S - real_S).mean()),
                "rho_UdS": float(np.nanmean(
                    [_rho(pred_S[:, j], real_S[:, j]) for j in range(len(domains))])),
                "mae_worst": float(np.abs(pred_S.min(1) - real_S.min(1)).mean()),
                "rho_worst": _rho(pred_S.min(1), real_S.min(1)),
                "compute_ratio": compute / fedavg["cost_train_samples"],
                "bytes_ratio": sent / (fedavg["cost_bytes_up"] + fedavg["cost_bytes_down"]),
            }
        )  # fmt: skip
        m.observe(t, by_id.loc[list(dict.fromkeys([*(before or ()), *picks]))].reset_index()
                  if name == "pool:10" else by_id.loc[picks].reset_index(), inputs)  # fmt: skip
    oracle.step(picks)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--random", type=int, default=20, help="random K-subsets per round")
    ap.add_argument("--resume", action="store_true",
                    help="keep the seeds information_rounds.part.csv holds; run the others")  # fmt: skip
    args = ap.parse_args(argv)
    part = OUT / "information_rounds.part.csv"
    over = dict(STUDY_ORACLE, threads=None)
    data = load_federation_data(OracleConfig(seed=0, **over))
    rows: list[dict] = []
    if args.resume and part.is_file():  # whole seeds only: a seed is written when it ends
        rows = pd.read_csv(part).to_dict("records")
    done = {int(r["seed"]) for r in rows}
    t0 = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    with rich_progress(transient=False) as progress:
        for seed in range(args.seeds):
            if seed in done:
                continue
            oracle = Oracle(OracleConfig(seed=seed, **over), data=data)
            models = {name: make_information(name, seed=seed) for name in MODELS}
            rng = np.random.default_rng([seed, 0x696E66])
            for t in range(args.rounds):
                rows += _round(oracle, models, args.k, args.random, rng, t, seed)
                progress(seed * args.rounds + t + 1, args.seeds * args.rounds,
                         "information benchmark")  # fmt: skip
            write_table_atomic(pd.DataFrame(rows), part)
    per_round = pd.DataFrame(rows)
    cols = ["mae_Uid", "rho_Uid", "mae_UdS", "rho_UdS", "mae_worst", "rho_worst",
            "compute_ratio", "bytes_ratio"]  # fmt: skip
    table = per_round.groupby("model", sort=False)[cols].mean().reset_index()
    write_table_atomic(per_round, OUT / "information_rounds.csv")
    write_table_atomic(table, OUT / "information.csv")
    head = (
        f"# Information models: prediction quality and deployment cost\n\n"
        f"`.venv/bin/python benchmarks/information.py --seeds {args.seeds} --rounds "
        f"{args.rounds} --k {args.k} --random {args.random}` — {args.seeds} seeds × "
        f"{args.rounds} rounds of FedAvg's trajectory (the study's federation), K = {args.k}; "
        f"{cpu_model()}, {platform.python_version()}, {time.perf_counter() - t0:.0f} s.\n\n"
        "MAE in points; ρ: within-round Spearman, mean over rounds (and domains); U_d(S) and "
        f"worst(S) over {args.random} random K-subsets per round against the realized "
        "aggregate; cost per round relative to FedAvg committing the same K clients. `fresh` "
        "is the truth (every client trains): its U_{i,d} error is 0 by construction.\n\n"
    )
    lines = ["| model | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for r in table.itertuples(index=False):
        lines.append(f"| {r[0]} | " + " | ".join(f"{v:.3f}" for v in r[1:]) + " |")
    write_text_atomic(head + "\n".join(lines) + "\n", OUT / "information.md")
    part.unlink(missing_ok=True)
    print(head + "\n".join(lines))


if __name__ == "__main__":
    main()
