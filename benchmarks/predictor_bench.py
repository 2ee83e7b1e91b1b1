"""The predictor bench: log what a deployment can see and what each client's update truly does,
then evaluate predictors of U_{i,d} on the log strictly forward in time, in seconds.

``log`` trains on the study's default federation (its oracle settings) along the trajectories
of several drivers — FedAvg's (``proportional@probe``: FedAvg's picks, the probe pass run
beside them) and a formulation's (``fisher-fair:1@probe``) — and, every round, before the
choice, records per client everything affordable (the probe pass: loss, F, B, cos_g, steps and
the first-order utilities x_<d>; the server's validation accuracy acc_<d> of w_t) and the truth
(every client trained at w_t: its U_<d>), and, for ``--subsets`` random K-subsets, the realized
accuracy of their sample-weighted aggregate per domain. Training every client does not change
the trajectory (each client's update is a function of (seed, round, client)). Seeds are tuning
seeds except ``--held-out``, a trajectory no predictor may be tuned on.

``eval`` replays the log through registered information models (:mod:`selection.information`,
those that read the probe pass: ``probe``, ``predicted``, ``boosted``, ...), exactly as the
training loop drives them: at round t a model gets only round t's probe pass and the server's
accuracies (:class:`~selection.information.RoundInputs`), answers its table, and only then
observes the truth of the clients the driver committed at t (``--train-on picks``: what a
deployment learns) or of every client (``all``: the bench's upper bound on what more labels
would buy). Per model: MAE (points) and within-round Spearman ρ of U_{i,d}; ρ of U_d(S) and of
worst(S) (the mean surrogate over the model's table) against the realized aggregates of the
logged subsets; per round and overall, mean over seeds with a bootstrap 95 % interval over the
tuning seeds, and the held-out trajectory's own row.

    .venv/bin/python benchmarks/predictor_bench.py log [--seeds 0,1,2] [--held-out 10]
        [--rounds 40] [--subsets 12] [--workers 2] [--log runs/predictor-bench]
    .venv/bin/python benchmarks/predictor_bench.py eval
        [--models probe,predicted,boosted,boosted-lcb:20,drift]
        [--train-on picks] [--log runs/predictor-bench] [--out results/benchmarks]

``log`` writes ``<log>/<driver>/seed<S>.parquet`` (clients) and ``...subsets.parquet`` per
trajectory and skips those already written (resumable); ``eval`` writes
``predictor_bench.md``, ``predictor_bench.csv`` and ``predictor_bench_rounds.csv``.

Why one script past 450 lines: logging, replay and the table are one measurement, and the
checks of its arguments belong to its own command line.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import markdown_table

from selection.atomic import write_table_atomic, write_text_atomic
from selection.information import RoundInputs, make_information

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "results" / "benchmarks"
LOG = ROOT / "runs" / "predictor-bench"
DRIVERS = ("proportional@probe", "fisher-fair:1@probe")
PROBE_COLUMNS = ("loss", "F", "B", "cos_g", "steps")
BOOT = 10000


# --------------------------------------------------------------------------------- logging
class LoggingOracle:
    """The oracle, recording at each probe pass the truth of every client and of random
    K-subsets' aggregates (the loop calls ``probe_table`` once a round, before the choice)."""

    def __init__(self, inner, k: int, subsets: int, seed: int) -> None:
        self._inner = inner
        self._k, self._subsets = int(k), int(subsets)
        self._rng = np.random.default_rng([seed, 0xBE4C])
        self.clients_log: list[pd.DataFrame] = []
        self.subsets_log: list[dict] = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def probe_table(self):
        probe, acc, sizes = self._inner.probe_table()
        truth = self._inner.round_stats(None, local=False)
        t = int(self._inner.round)
        domains = list(self._inner.domains)
        rows = probe.copy()
        rows.insert(0, "round", t)
        for d in domains:
            rows[f"acc_{d}"] = float(acc[d])
            rows[f"size_{d}"] = int(sizes[d])
        by_id = truth.set_index("client_id")
        for d in domains:
            rows[f"true_{d}"] = by_id.loc[rows["client_id"], f"U_{d}"].to_numpy(dtype=float)
        self.clients_log.append(rows)
        ids = list(probe["client_id"])
        for j in range(self._subsets):
            pick = sorted(self._rng.choice(len(ids), self._k, replace=False).tolist())
            _, ud = self._inner.evaluate_aggregate([ids[i] for i in pick])
            self.subsets_log.append(
                {"round": t, "subset": j, "ids": ";".join(ids[i] for i in pick)}
                | {f"agg_{d}": float(v) for d, v in zip(domains, ud, strict=True)}
            )
        return probe, acc, sizes


def _slug(driver: str) -> str:
    return driver.replace(":", "_")


def log_trajectory(driver: str, seed: int, rounds: int, k: int, subsets: int, out: Path) -> str:
    """Train one trajectory and write its two tables; returns a line for the console."""
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from fl_oracle.experiments.study.settings import STUDY_ORACLE
    from fl_oracle.sim.config import OracleConfig
    from fl_oracle.sim.oracle import Oracle
    from selection.selectors import make_selector
    from selection.specs import parse_spec

    t0 = time.perf_counter()
    oracle = Oracle(OracleConfig(seed=seed, **dict(STUDY_ORACLE, threads=1)))
    logger = LoggingOracle(oracle, k, subsets, seed)
    spec = parse_spec(driver)
    plan = plan_run(
        make_selector(spec, seed=seed),
        rounds=rounds,
        k=k,
        name=driver,
        seed=seed,
        stats_mode=spec.run_information(None),
    )
    result = run_training(logger, plan)
    clients = pd.concat(logger.clients_log, ignore_index=True)
    chosen = {
        (int(r), c)
        for r, sel in zip(result.history["round"], result.history["selected"], strict=True)
        for c in str(sel).split(";")
    }
    clients["chosen"] = [
        (int(r), c) in chosen for r, c in zip(clients["round"], clients["client_id"], strict=True)
    ]
    clients.insert(0, "seed", seed)
    clients.insert(0, "driver", driver)
    folder = out / _slug(driver)
    folder.mkdir(parents=True, exist_ok=True)
    subs = pd.DataFrame(logger.subsets_log).assign(seed=seed, driver=driver)
    write_table_atomic(subs, folder / f"seed{seed:02d}.subsets.parquet")
    write_table_atomic(clients, folder / f"seed{seed:02d}.parquet")
    return f"{driver} seed {seed}: {rounds} rounds in {time.perf_counter() - t0:.0f} s"


def cmd_log(args) -> None:
    seeds = [int(s) for s in args.seeds.split(",")] + [int(args.held_out)]
    jobs = [
        (d, s)
        for d in args.drivers.split(",")
        for s in seeds
        if not (args.log / _slug(d) / f"seed{s:02d}.parquet").exists()
    ]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [
            pool.submit(log_trajectory, d, s, args.rounds, args.k, args.subsets, args.log)
            for d, s in jobs
        ]
        for f in futures:
            print(f.result(), flush=True)


# ------------------------------------------------------------------------------ evaluation
def load_log(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    clients = [p for p in sorted(folder.rglob("seed*.parquet")) if "subsets" not in p.name]
    subsets = sorted(folder.rglob("seed*.subsets.parquet"))
    if not clients:
        _fail(f"no log in {folder} (run the log command first)")

    def read(p: Path) -> pd.DataFrame:
        try:
            return pd.read_parquet(p)
        except Exception as exc:  # noqa: BLE001 - any unreadable file, named
            _fail(
                f"{p}: unreadable ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
            )

    return (
        pd.concat([read(p) for p in clients], ignore_index=True),
        pd.concat([read(p) for p in subsets], ignore_index=True),
    )


def _fail(message: str):
    """One line on stderr and exit code 2, as every fedsel command refuses bad input."""
    print(f"predictor_bench: error: {message}", file=sys.stderr)
    raise SystemExit(2)


#: the bench's federation: the study's (5 clients a domain, 4 domains)
N_CLIENTS = 20


def check_args(args) -> None:
    """Every argument checked before any work (one line, exit 2)."""
    from selection.errors import SelectionError
    from selection.information import parse_information
    from selection.specs import parse_spec

    if not 1 <= args.k <= N_CLIENTS:
        _fail(f"--k {args.k}: must be in 1..{N_CLIENTS} (the bench's clients)")
    if args.held_out < 0:
        _fail(f"--held-out {args.held_out}: must be a seed >= 0")
    if args.log.exists() and not args.log.is_dir():
        _fail(f"--log {args.log} is a file, not a folder")
    if args.command == "log":
        try:
            seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
        except ValueError:
            _fail(f"--seeds {args.seeds!r}: seeds are whole numbers, comma-separated")
        if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
            _fail(f"--seeds {args.seeds!r}: distinct seeds >= 0")
        if args.held_out in seeds:
            _fail(f"--held-out {args.held_out} is a tuning seed too (--seeds {args.seeds})")
        for name, lo in (("rounds", 1), ("subsets", 0), ("workers", 1)):
            if getattr(args, name) < lo:
                _fail(f"--{name} {getattr(args, name)}: must be at least {lo}")
        for d in args.drivers.split(","):
            try:
                _ = parse_spec(d).formulation  # the name looked up: a typo refused now
            except SelectionError as exc:
                _fail(f"--drivers: {exc}")
    else:
        if args.out.exists() and not args.out.is_dir():
            _fail(f"--out {args.out} is a file, not a folder")
        for m in args.models.split(","):
            try:
                parse_information(m)
            except SelectionError as exc:
                _fail(f"--models: {exc}")


def domains_of(clients: pd.DataFrame) -> tuple[str, ...]:
    return tuple(c[5:] for c in clients.columns if c.startswith("true_"))


def _rho(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def replay(model_name: str, traj: pd.DataFrame, k: int, train_on: str, seed: int) -> pd.DataFrame:
    """One trajectory through one model, strictly forward: per round the model's U_<d> for
    every client (columns ``pred_<d>``), made before it observes that round's truth."""
    domains = domains_of(traj)
    model = make_information(model_name, seed=seed)
    clients = (
        traj[traj["round"] == traj["round"].min()][["client_id", "domain", "n_samples"]]
        .reset_index(drop=True)
        .astype({"client_id": str, "domain": str})
    )
    out = []
    for t, rows in traj.groupby("round", sort=True):
        rows = rows.reset_index(drop=True)
        probe_cols = ["client_id", "domain", "n_samples", *PROBE_COLUMNS]
        probe = rows[probe_cols + [f"x_{d}" for d in domains]].copy()
        inputs = RoundInputs(
            t=int(t),
            k=k,
            clients=clients,
            domains=domains,
            probe=probe,
            base_acc={d: float(rows[f"acc_{d}"].iloc[0]) for d in domains},
            val_sizes={d: int(rows[f"size_{d}"].iloc[0]) for d in domains},
        )
        table = model.view(inputs).set_index("client_id")
        pred = rows[["round", "client_id", "domain", "chosen"]].copy()
        for d in domains:
            pred[f"pred_{d}"] = table.loc[rows["client_id"], f"U_{d}"].to_numpy(dtype=float)
            pred[f"true_{d}"] = rows[f"true_{d}"].to_numpy(dtype=float)
            for side in ("lo", "hi"):  # a model's predictive interval, where it gives one
                if f"{side}_{d}" in table.columns:
                    values = table.loc[rows["client_id"], f"{side}_{d}"]
                    pred[f"{side}_{d}"] = values.to_numpy(dtype=float)
        out.append(pred)
        learn = rows if train_on == "all" else rows[rows["chosen"]]
        trained = learn[["client_id", "domain", "n_samples"]].copy()
        for d in domains:
            trained[f"U_{d}"] = learn[f"true_{d}"].to_numpy(dtype=float)
        model.observe(int(t), trained.reset_index(drop=True), inputs)
    return pd.concat(out, ignore_index=True)


def round_metrics(pred: pd.DataFrame, subsets: pd.DataFrame, domains) -> pd.DataFrame:
    """Per round: MAE and ρ of U_{i,d}; ρ of U_d(S), worst(S) over the logged subsets."""
    rows = []
    subs = subsets.groupby("round")
    for t, p in pred.groupby("round", sort=True):
        P = p[[f"pred_{d}" for d in domains]].to_numpy()  # noqa: N806
        T = p[[f"true_{d}" for d in domains]].to_numpy()  # noqa: N806
        row = {
            "round": int(t),
            "mae": float(np.abs(P - T).mean()),
            "rho": float(np.nanmean([_rho(P[:, j], T[:, j]) for j in range(len(domains))])),
        }
        if f"lo_{domains[0]}" in p.columns:
            lo = p[[f"lo_{d}" for d in domains]].to_numpy()
            hi = p[[f"hi_{d}" for d in domains]].to_numpy()
            ok = np.isfinite(lo) & np.isfinite(hi)
            if ok.any():
                row["cov_lower"] = float((T[ok] >= lo[ok]).mean())
                row["cov_both"] = float(((T[ok] >= lo[ok]) & (T[ok] <= hi[ok])).mean())
                row["width"] = float((hi[ok] - lo[ok]).mean())
        if t in subs.groups:
            s = subs.get_group(t)
            pos = {c: i for i, c in enumerate(p["client_id"])}
            idx = [[pos[c] for c in ids.split(";")] for ids in s["ids"]]
            ud_hat = np.array([P[i].mean(axis=0) for i in idx])
            ud = s[[f"agg_{d}" for d in domains]].to_numpy()
            row["rho_ud"] = float(
                np.nanmean([_rho(ud_hat[:, j], ud[:, j]) for j in range(len(domains))])
            )
            row["rho_worst"] = _rho(ud_hat.min(axis=1), ud.min(axis=1))
            row["mae_ud"] = float(np.abs(ud_hat - ud).mean())
        rows.append(row)
    return pd.DataFrame(rows)


def _interval(x, rng) -> tuple[float, float, float]:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return (float("nan"),) * 3
    if len(x) < 2:
        return float(x.mean()), float("nan"), float("nan")
    means = rng.choice(x, (BOOT, len(x)), replace=True).mean(axis=1)
    return float(x.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def cmd_eval(args) -> None:
    clients, subsets = load_log(args.log)
    domains = domains_of(clients)
    held = int(args.held_out)
    per_round = []
    timing = {}
    for name in args.models.split(","):
        t0 = time.perf_counter()
        for (driver, seed), traj in clients.groupby(["driver", "seed"], sort=True):
            pred = replay(name, traj, args.k, args.train_on, int(seed))
            s = subsets[(subsets["driver"] == driver) & (subsets["seed"] == seed)]
            m = round_metrics(pred, s, domains).assign(model=name, driver=driver, seed=int(seed))
            per_round.append(m)
        timing[name] = time.perf_counter() - t0
    rounds = pd.concat(per_round, ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(rounds, args.out / "predictor_bench_rounds.csv")
    rng = np.random.default_rng(0)
    metrics = [c for c in ("mae", "rho", "mae_ud", "rho_ud", "rho_worst", "cov_lower", "cov_both",
                           "width") if c in rounds.columns]  # fmt: skip
    runs = rounds.groupby(["model", "driver", "seed"], sort=False)[metrics].mean().reset_index()
    table = []
    for (name, driver), g in runs.groupby(["model", "driver"], sort=False):
        tune, hold = g[g["seed"] != held], g[g["seed"] == held]
        row = {"model": name, "driver": driver, "tuning seeds": len(tune)}
        for col in metrics:
            m, lo, hi = _interval(tune[col], rng)
            row[col], row[f"{col}_lo"], row[f"{col}_hi"] = m, lo, hi
            row[f"{col}_held_out"] = float(hold[col].mean()) if len(hold) else float("nan")
        row["replay_seconds"] = timing[name]
        table.append(row)
    out = pd.DataFrame(table)
    write_table_atomic(out, args.out / "predictor_bench.csv")

    def cell(r, col):
        lo, hi = r[f"{col}_lo"], r[f"{col}_hi"]
        span = "" if pd.isna(lo) else f" [{lo:.2f}, {hi:.2f}]"
        return f"{r[col]:.2f}{span}"

    shown = pd.DataFrame(
        [
            {
                "model": r["model"],
                "driver": r["driver"],
                "MAE U_{i,d}": cell(r, "mae"),
                "ρ U_{i,d}": cell(r, "rho"),
                "MAE U_d(S)": cell(r, "mae_ud"),
                "ρ U_d(S)": cell(r, "rho_ud"),
                "ρ worst(S)": cell(r, "rho_worst"),
                "held out: MAE / ρ / ρ worst": (
                    f"{r['mae_held_out']:.2f} / {r['rho_held_out']:.2f} / "
                    f"{r['rho_worst_held_out']:.2f}"
                ),
            }
            for _, r in out.iterrows()
        ]
    )
    cmd = " ".join(shlex.quote(a) for a in ["benchmarks/predictor_bench.py", *sys.argv[1:]])
    n_traj = clients.groupby(["driver", "seed"]).ngroups
    seeds = sorted(int(s) for s in clients["seed"].unique())
    text = f"""# Predictor bench

Each information model replayed, strictly forward in time, over {n_traj} logged trajectories
(drivers {", ".join(f"`{d}`" for d in sorted(clients["driver"].unique()))}; seeds
{", ".join(map(str, seeds))}, seed {held} held out; {int(clients["round"].max()) + 1} rounds,
K = {args.k}; truth: every client trained at w_t; {int(subsets.groupby(["driver", "seed", "round"]).size().mean())}
random K-subsets a round for U_d(S)). The model learns from the truth of the clients the
driver committed (`--train-on {args.train_on}`). Mean over the tuning seeds' per-run means,
bootstrap 95 % interval; the held-out trajectory's own values beside. Made by

    .venv/bin/python {cmd}

{markdown_table(shown)}

Replay time (every trajectory, seconds): {"; ".join(f"{k} {v:.1f}" for k, v in timing.items())}.
The issue's goal on the held-out trajectory: MAE <= 2 points, ρ U_{{i,d}} >= 0.75, ρ worst(S)
>= 0.56.
"""
    if "cov_both" in out.columns and out["cov_both"].notna().any():
        cov = pd.DataFrame(
            [
                {
                    "model": r["model"],
                    "driver": r["driver"],
                    "P(y >= lo)": cell(r, "cov_lower"),
                    "P(lo <= y <= hi)": cell(r, "cov_both"),
                    "width (points)": cell(r, "width"),
                    "held out: P(y >= lo) / P(in)": (
                        f"{r['cov_lower_held_out']:.2f} / {r['cov_both_held_out']:.2f}"
                    ),
                }
                for _, r in out.iterrows()
                if pd.notna(r.get("cov_both"))
            ]
        )
        text += f"""
## Predictive intervals

Coverage of the intervals a model carries (`lo_<d>`, `hi_<d>`: `boosted`'s conformalized
quantiles, nominal P(y >= lo) = 0.90 and P(lo <= y <= hi) = 0.80 for `boosted`; the lower
level of `boosted-lcb:A` is A %), over the rounds where they exist:

{markdown_table(cov)}
"""
    write_text_atomic(text, args.out / "predictor_bench.md")
    print(text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    lg = sub.add_parser("log", help="train and log trajectories")
    lg.add_argument("--drivers", default=",".join(DRIVERS))
    lg.add_argument("--seeds", default="0,1,2")
    lg.add_argument("--held-out", default=10, type=int)
    lg.add_argument("--rounds", default=40, type=int)
    lg.add_argument("--k", default=5, type=int)
    lg.add_argument("--subsets", default=12, type=int)
    lg.add_argument("--workers", default=2, type=int)
    lg.add_argument("--log", default=LOG, type=Path)
    ev = sub.add_parser("eval", help="replay the log through the models")
    ev.add_argument("--models", default="probe,predicted,boosted,boosted-lcb:20,drift")
    ev.add_argument("--train-on", default="picks", choices=("picks", "all"))
    ev.add_argument("--held-out", default=10, type=int)
    ev.add_argument("--k", default=5, type=int)
    ev.add_argument("--log", default=LOG, type=Path)
    ev.add_argument("--out", default=OUT, type=Path)
    args = ap.parse_args(argv)
    check_args(args)
    (cmd_log if args.command == "log" else cmd_eval)(args)


if __name__ == "__main__":
    main()
