"""How well does each surrogate predict what training realizes? Bias, MAE, ρ, regret, cost.

For every round of live training on the study's default federation (the study's oracle
settings), the round's candidates — the driver's own selection plus ``--random`` random
K-subsets — are scored twice: *predicted* by each registered surrogate of U_d(S) from the
round's statistics and validation logits, and *realized*: validation accuracy of the
sample-weighted aggregate w_t + Σ p_i Δ_i (``Oracle.evaluate_aggregate``, one forward pass
each). Then the driver's selection is committed and training goes on.

Per surrogate (over seeds × drivers × K × rounds):

* bias and MAE (pp) of U_d(S) over every candidate and domain, and on the worst domain;
* Spearman ρ between predicted and realized values *within a round* (mean over rounds), for
  all (candidate, domain) pairs, for worst(S) and for gap(S);
* regret (pp): realized worst(S) of the candidate the surrogate ranks best on worst(S),
  below the best realized worst(S) among the round's candidates (mean over rounds);
* cost per round relative to the round's own time (statistics + the driver's choice +
  commit): the surrogate scoring every C(N, K) selection (what a formulation's enumeration
  costs), and ``verify=8`` (eight realized aggregates).

Writes ``results/benchmarks/surrogates.csv`` (one row per surrogate and K) and
``surrogates.md``. Run from the repository root::

    .venv/bin/python benchmarks/surrogates.py             # 3 seeds x 40 rounds x 2 drivers x K=5,10
    .venv/bin/python benchmarks/surrogates.py --ks 10 --append   # add K=10 to the stored K=5 rows
    .venv/bin/python benchmarks/surrogates.py --ks 50 --clients-per-domain 50 --append  # N = 200

Beyond ``ENUM_LIMIT`` selections (K = 50 of 200) the enumeration cost is not measured (``—``).

With ``--append`` the stored per-round rows of the K values not measured now are kept (and
the command, machine and time of every part are listed in ``surrogates_runs.csv`` and the
table's header), so a long benchmark can be measured in parts.
"""

from __future__ import annotations

import argparse
import itertools
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fl_oracle.experiments.run_record import cpu_model
from fl_oracle.experiments.study.settings import STUDY_ORACLE
from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.loading import load_federation_data
from fl_oracle.sim.oracle import Oracle
from selection.atomic import write_table_atomic, write_text_atomic
from selection.problem import SelectionProblem
from selection.selectors import make_selector
from selection.surrogates import get_surrogate, surrogates

OUT = Path("results/benchmarks")
# scoring every selection is measured up to this many (C(20, 10) = 184,756 is); beyond it the
# enumeration cost is left empty: no formulation enumerates there
ENUM_LIMIT = 2_000_000


def _rho(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def run(seeds, rounds, drivers, ks, n_random, progress=True, clients_per_domain=None):
    """One row per (seed, driver, K, round, surrogate) with the round's measures; the study's
    federation, or ``clients_per_domain`` clients a domain (N = 4× that) where given."""
    data = None
    rows = []
    names = list(surrogates())
    settings = dict(STUDY_ORACLE)
    if clients_per_domain:
        settings["clients_per_domain"] = clients_per_domain
    total = len(seeds) * len(drivers) * len(ks) * rounds
    done, t_start = 0, time.perf_counter()
    for seed, driver, k in itertools.product(seeds, drivers, ks):
        config = OracleConfig(seed=seed, **settings)
        data = data or load_federation_data(config)
        oracle = Oracle(config, data=data)
        pick = make_selector(driver, seed=seed)
        rng = np.random.default_rng([seed, k, 7])
        for t in range(rounds):
            t0 = time.perf_counter()
            stats = oracle.round_stats()
            logits = oracle.round_logits()
            ids = pick(stats, k, logits=logits)
            t_round = time.perf_counter() - t0
            base = SelectionProblem.from_stats(stats, k, logits=logits)
            pos = {c: i for i, c in enumerate(base.ids)}
            cands = [tuple(sorted(pos[c] for c in ids))]
            while len(cands) < n_random + 1:
                c = tuple(sorted(rng.choice(base.n, k, replace=False).tolist()))
                if c not in cands:
                    cands.append(c)
            idx = np.array(cands)
            t1 = time.perf_counter()
            real = [oracle.evaluate_aggregate(base.ids_of(c)) for c in cands]
            t_eval = (time.perf_counter() - t1) / len(cands)
            Ud_real = np.array([r[1] for r in real])
            enumerable = math.comb(base.n, k) <= ENUM_LIMIT
            for name in names:
                p = base.with_surrogate(name)
                sur = get_surrogate(name)
                _, Ud = sur.block(p, idx)
                t2 = time.perf_counter()
                for chunk in _chunks(itertools.combinations(range(base.n), k), enumerable):
                    sur.block(p, chunk)
                t_all = time.perf_counter() - t2 if enumerable else float("nan")
                w_pred, w_real = Ud.min(1), Ud_real.min(1)
                err = Ud - Ud_real
                rows.append(
                    dict(
                        seed=seed,
                        driver=driver,
                        n=base.n,
                        k=k,
                        round=t,
                        surrogate=name,
                        bias=float(err.mean()),
                        mae=float(np.abs(err).mean()),
                        bias_worst=float((w_pred - w_real).mean()),
                        mae_worst=float(np.abs(w_pred - w_real).mean()),
                        rho_all=_rho(Ud.ravel(), Ud_real.ravel()),
                        rho_worst=_rho(w_pred, w_real),
                        rho_gap=_rho(np.ptp(Ud, 1), np.ptp(Ud_real, 1)),
                        regret_worst=float(w_real.max() - w_real[int(np.argmax(w_pred))]),
                        cost_enum=t_all / t_round,
                        cost_verify8=8 * t_eval / t_round,
                        round_seconds=t_round,
                    )
                )
            oracle.step(ids)
            done += 1
            if progress:
                el = time.perf_counter() - t_start
                eta = el / done * (total - done)
                print(f"surrogates: {done}/{total} rounds, ETA {eta:.0f} s", file=sys.stderr)
    return pd.DataFrame(rows)


def _chunks(combos, enumerable: bool, size: int = 1 << 16):
    """Every K-subset in index blocks of ``size`` rows (none when not ``enumerable``)."""
    while enumerable:
        block = np.array(list(itertools.islice(combos, size)))
        if not len(block):
            return
        yield block


def summarize(per_round: pd.DataFrame) -> pd.DataFrame:
    # rows stored before N was kept are the study's federation, N = 20
    n = per_round["n"].fillna(20) if "n" in per_round else 20
    per_round = per_round.assign(n=n).astype({"n": int})
    g = per_round.groupby(["n", "k", "surrogate"], sort=False)
    out = g.agg(
        bias=("bias", "mean"),
        mae=("mae", "mean"),
        bias_worst=("bias_worst", "mean"),
        mae_worst=("mae_worst", "mean"),
        rho_all=("rho_all", "mean"),
        rho_worst=("rho_worst", "mean"),
        rho_gap=("rho_gap", "mean"),
        regret_worst=("regret_worst", "mean"),
        cost_enum=("cost_enum", "median"),
        cost_verify8=("cost_verify8", "median"),
        rounds=("round", "size"),
    ).reset_index()
    return out


def markdown(summary: pd.DataFrame, parts: pd.DataFrame, n_random: int) -> str:
    cols = [
        ("n", "N", "{}"),
        ("k", "K", "{}"),
        ("surrogate", "surrogate", "`{}`"),
        ("bias", "bias (pp)", "{:+.2f}"),
        ("mae", "MAE (pp)", "{:.2f}"),
        ("mae_worst", "MAE worst (pp)", "{:.2f}"),
        ("rho_all", "ρ all", "{:.2f}"),
        ("rho_worst", "ρ worst", "{:.2f}"),
        ("rho_gap", "ρ gap", "{:.2f}"),
        ("regret_worst", "regret worst (pp)", "{:.2f}"),
        ("cost_enum", "enumeration / round", "{:.2f}×"),
        ("cost_verify8", "verify=8 / round", "{:.3f}×"),
    ]
    head = "| " + " | ".join(c[1] for c in cols) + " |"
    sep = "|" + "|".join("---" if c == "surrogate" else "---:" for c, _, _ in cols) + "|"
    body = [
        "| " + " | ".join("—" if r[c] != r[c] else f.format(r[c]) for c, _, f in cols) + " |"
        for r in summary.to_dict("records")
    ]
    best = summary.sort_values("mae").iloc[0]
    lines = [
        "# Surrogates of U_d(S) against the realized aggregate",
        "",
        *(
            f"K = {r['ks']}: `{r['command']}` — {r['cpu']}, {r['python']}, {r['seconds']:.0f} s."
            for r in parts.to_dict("records")
        ),
        "",
        "Candidates per round: the driver's selection plus "
        f"{n_random} random K-subsets; realized = validation accuracy of the sample-weighted "
        "aggregate. ρ is Spearman's within a round, averaged over rounds; regret = best realized "
        "worst-domain accuracy among the candidates minus that of the surrogate's top candidate; "
        "costs are medians relative to the round (statistics, choice, commit).",
        "",
        head,
        sep,
        *body,
        "",
        f"Lowest MAE: `{best['surrogate']}` at K = {best['k']} ({best['mae']:.2f} pp, "
        f"worst-domain ρ {best['rho_worst']:.2f}). Targets (MAE ≤ 2 pp, worst-domain ρ ≥ 0.75) "
        + (
            "met"
            if (summary["mae"] <= 2).any() and (summary["rho_worst"] >= 0.75).any()
            else "not met"
        )
        + " by the best surrogate per K: "
        + "; ".join(
            f"K = {k}: `{r['surrogate']}` MAE {r['mae']:.2f}, ρ worst {r['rho_worst']:.2f}"
            for k, r in (
                (k, grp.sort_values("mae").iloc[0]) for k, grp in summary.groupby("k", sort=False)
            )
        )
        + ".",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--drivers", default="proportional,eps:5")
    ap.add_argument("--ks", default="5,10")
    ap.add_argument("--random", type=int, default=15)
    ap.add_argument(
        "--clients-per-domain",
        type=int,
        default=None,
        help="clients a domain (N = 4x; default: the study's 5, N = 20)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--append",
        action="store_true",
        help="keep the stored rows of the K values not measured now",
    )
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    command = (
        f".venv/bin/python benchmarks/surrogates.py --seeds {args.seeds} --rounds {args.rounds} "
        f"--drivers {args.drivers} --ks {args.ks} --random {args.random}"
        + (f" --clients-per-domain {args.clients_per_domain}" if args.clients_per_domain else "")
        + (" --append" if args.append else "")
    )
    t0 = time.perf_counter()
    per_round = run(
        list(range(args.seeds)),
        args.rounds,
        [d.strip() for d in args.drivers.split(",")],
        ks,
        args.random,
        clients_per_domain=args.clients_per_domain,
    )
    part = pd.DataFrame(
        [
            dict(
                ks=args.ks,
                command=command,
                cpu=cpu_model(),
                python=platform.python_version(),
                seconds=time.perf_counter() - t0,
            )
        ]
    )
    parts_file = args.out / "surrogates_runs.csv"
    stored_file = args.out / "surrogates_per_round.csv"
    if args.append and stored_file.exists():
        stored = pd.read_csv(stored_file)
        per_round = pd.concat([stored[~stored["k"].isin(ks)], per_round], ignore_index=True)
        per_round = per_round.sort_values("k", kind="stable").reset_index(drop=True)
        if parts_file.exists():
            old = pd.read_csv(parts_file, dtype={"ks": str})
            keep = old["ks"].map(lambda v: not set(int(k) for k in str(v).split(",")) & set(ks))
            part = pd.concat([old[keep], part], ignore_index=True)
    summary = summarize(per_round)
    text = markdown(summary, part, args.random)
    write_table_atomic(summary, args.out / "surrogates.csv")
    write_table_atomic(per_round, stored_file)
    write_table_atomic(part, parts_file)
    write_text_atomic(text, args.out / "surrogates.md")
    print(text)


if __name__ == "__main__":
    main()
