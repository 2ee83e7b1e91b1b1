"""The ε solve warm-started from the previous round's selection, per MILP backend.

    .venv/bin/python benchmarks/eps_warm_start.py [--seeds 0,1,2] [--rounds 10] [--repeats 3]
        [--eps 5,10] [--backends highs,cbc,scip,cpsat] [--time-limit 30] [--out DIR]

The rounds are a study's own: ``eps:5@predicted`` at N = 200 (50 clients a domain), K = 20,
on the study's oracle settings (:class:`~fl_oracle.experiments.study.settings.StudySettings`),
``--rounds`` rounds on each of ``--seeds``; each round's problem (the predicted utilities the
selector solved) and the selection the run committed are recorded. The runs solve on SCIP
(the quickest route on these rounds; the selections are the exact optimum whichever route
answers). Then, per backend and ε of ``--eps`` (the entry's 5, and a looser one where more
previous selections satisfy the new round's ε row), each round t >= 1 is solved by
``EpsSolver(eps=ε)`` cold and warm (``EpsSolver.start``: round t−1's committed selection,
given to stage 1 where it is feasible for round t's ε row), the two alternated ``--repeats``
times, the fastest of each kept; a solve gets ``--time-limit`` seconds (a pair that both reach
it is not repeated). Warm and cold must return the same selection (``identical``);
``time_limited`` counts the rounds where either stopped on the limit. Writes
``results/benchmarks/eps_warm_start.md`` and ``.csv`` (one row per backend, ε, round and
mode).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from oracle import machine_facts, markdown_table  # noqa: E402

OUT = ROOT / "results" / "benchmarks"
ENTRY = "eps:5@predicted"
CLIENTS_PER_DOMAIN, K = 50, 20
CAPTURE_ROUTE = "scip"


def capture(seed: int, rounds: int) -> list[tuple]:
    """(problem, committed ids) of each round of one run of :data:`ENTRY`."""
    import torch

    from fl_oracle.experiments.runner import OracleFactory, RunTask, run_one
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.selectors import make_selector, parse_spec

    torch.set_num_threads(1)
    got: list[tuple] = []

    def routed(spec, *, seed: int = 0):
        sel = make_selector(spec, seed=seed)
        make = sel._make  # the per-round solver, on the capture's route
        sel._make = partial(lambda s, make: _routed(make(s)), make=make)
        inner = sel.choose

        def choose(problem):
            ids = inner(problem)
            got.append((problem, tuple(ids)))
            return ids

        sel.choose = choose
        return sel

    settings = StudySettings()
    factory = OracleFactory({**settings.oracle, "clients_per_domain": CLIENTS_PER_DOMAIN})
    factory.load()
    run_one(factory, routed, RunTask(parse_spec(ENTRY), seed, rounds, K, records=()), {})
    return got


def _routed(solver):
    import dataclasses

    solver.options = dataclasses.replace(solver.options, backend=CAPTURE_ROUTE)
    return solver


def solve(problem, backend: str, eps: float, start, time_limit: float):
    from selection.solvers.eps import EpsSolver

    solver = EpsSolver(eps=eps, backend=backend, time_limit=time_limit)
    solver.start = start
    t0 = time.perf_counter()
    r = solver.solve(problem)
    return time.perf_counter() - t0, r


def feasible_start(problem, ids, eps: float) -> bool:
    """Whether the previous round's selection satisfies this round's ε row."""
    from selection.objectives import gap

    where = {str(c): i for i, c in enumerate(problem.ids)}
    x = np.zeros(problem.n)
    x[[where[str(c)] for c in ids]] = 1.0
    return bool(gap(problem, x)[0] <= eps + 1e-9)


def values(problem, backend: str, selected) -> dict[str, float]:
    """(U, gap) of a selection on the true data and on the data ``backend`` solves (CP-SAT:
    rounded to 1/scale), so that two different answers can be told tied or not."""
    from selection.solvers.eps import EpsSolver

    if not selected:
        return {}
    x = np.zeros(problem.n)
    x[list(selected)] = 1.0
    out = {}
    for what, data in (("", {"U": problem.U, "Ud": problem.Ud}),
                       ("model_", EpsSolver(backend=backend).model_data(problem))):  # fmt: skip
        out[f"{what}utility"] = float(x @ data["U"]) / problem.k
        out[f"{what}gap"] = float(np.ptp(x @ data["Ud"])) / problem.k
    return out


def measure(runs, backends, epsilons, repeats: int, time_limit: float, progress) -> pd.DataFrame:
    rows = []
    for backend, eps in ((b, e) for b in backends for e in epsilons):
        for seed, got in runs.items():
            for t in range(1, len(got)):
                problem, start = got[t][0].linear_view(), got[t - 1][1]
                best = {"cold": np.inf, "warm": np.inf}
                answers = {"cold": set(), "warm": set()}
                status = {}
                for rep in range(repeats):
                    order = ("cold", "warm") if rep % 2 == 0 else ("warm", "cold")
                    for mode in order:
                        sec, r = solve(problem, backend, eps, start if mode == "warm" else None,
                                       time_limit)  # fmt: skip
                        best[mode] = min(best[mode], sec)
                        answers[mode].add(r.selected)
                        status[mode] = str(r.status)
                    if all(s == "time_limit" for s in status.values()):
                        break
                progress(f"{backend} ε {eps:g} seed {seed} round {t}: "
                         f"cold {best['cold']:.2f} s, warm {best['warm']:.2f} s")  # fmt: skip
                same = len(answers["cold"] | answers["warm"]) == 1
                for mode in ("cold", "warm"):
                    rows.append({
                        "backend": backend, "eps": eps, "seed": seed, "round": t,
                        "mode": mode, "seconds": round(best[mode], 4), "status": status[mode],
                        "start_feasible": feasible_start(problem, start, eps),
                        "identical": same,
                        **values(problem, backend, min(answers[mode])),
                    })  # fmt: skip
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (backend, eps), g in df.groupby(["backend", "eps"], sort=False):
        wide = g.pivot_table(index=["seed", "round"], columns="mode", values="seconds")
        limited = g.groupby(["seed", "round"])["status"].agg(lambda s: (s == "time_limit").any())
        proven = wide[~limited.reindex(wide.index).to_numpy()]
        per = proven["warm"] / proven["cold"]
        cold = g[g["mode"] == "cold"]
        out.append({
            "backend": backend,
            "eps": f"{eps:g}",
            "rounds": len(wide),
            "optimal": int((cold["status"] == "optimal").sum()),
            "infeasible": int((cold["status"] == "infeasible").sum()),
            "start_feasible": int(cold["start_feasible"].sum()),
            "cold_s": round(float(wide["cold"].sum()), 2),
            "warm_s": round(float(wide["warm"].sum()), 2),
            "ratio_warm_cold": round(float(wide["warm"].sum() / wide["cold"].sum()), 3),
            "median_round_ratio": round(float(per.median()), 3) if len(per) else float("nan"),
            "time_limited": int(limited.sum()),
            "identical": f"{int(cold['identical'].sum())}/{len(wide)}",
        })  # fmt: skip
    return pd.DataFrame(out)


def per_round(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (ε, seed, round), one column per backend and mode."""
    wide = df.pivot_table(index=["eps", "seed", "round"], columns=["backend", "mode"],
                          values="seconds", sort=False)  # fmt: skip
    wide.columns = [f"{b} {m}" for b, m in wide.columns]
    return wide.round(3).reset_index()


def reading(df: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """What the tables say, in sentences read from them."""
    lo, hi = table["ratio_warm_cold"].min(), table["ratio_warm_cold"].max()
    first = table.drop_duplicates("eps")
    feasible = ", ".join(f"{r.start_feasible} of {r.rounds} at ε = {r.eps}"
                         for r in first.itertuples())  # fmt: skip
    cold = df[df["mode"] == "cold"]
    slow = cold.loc[cold.groupby("backend", sort=False)["seconds"].idxmax()]
    slowest = "; ".join(
        f"{r.backend} {r.seconds:.2f} s ({r.status}; ε {r.eps:g}, seed {r.seed}, round {r['round']})"
        for _, r in slow.iterrows()
    )
    lines = [
        "**Reading.** Warm over cold, summed over the rounds: "
        f"{lo:.3g} to {hi:.3g} across backends and ε (timing noise on a shared machine is "
        "about ±10 %). A previous selection satisfied the new round's ε row in "
        f"{feasible}: the rest break it or the ε is infeasible, and get no start. "
        f"The slowest cold round per backend: {slowest}.",
    ]
    odd = df[~df["identical"] & (df["mode"] == "cold")]
    for _, r in odd.iterrows():
        w = df[(df["mode"] == "warm") & (df["backend"] == r.backend) & (df["eps"] == r.eps)
               & (df["seed"] == r.seed) & (df["round"] == r["round"])].iloc[0]  # fmt: skip
        tied = (
            abs(w.model_utility - r.model_utility) < 1e-9 and abs(w.model_gap - r.model_gap) < 1e-9
        )
        lines.append(
            f"\n{r.backend}, ε {r.eps:g}, seed {r.seed}, round {r['round']}: cold and warm picked "
            f"different selections, (U, gap) = ({r.utility:.6f}, {r.gap:.6f}) cold and "
            f"({w.utility:.6f}, {w.gap:.6f}) warm on the true data; on the data this backend "
            f"solves they are {'tied' if tied else 'not tied'} "
            f"(({r.model_utility:.6f}, {r.model_gap:.6f}) and ({w.model_utility:.6f}, "
            f"{w.model_gap:.6f})): which of the selections tied in both stages a solve returns is "
            "the backend's, and a start, like the seed, may change it."
        )
    return lines


def render(df: pd.DataFrame, table: pd.DataFrame, args, command: str, seconds: float) -> str:
    return "\n".join([
        "# The ε solve warm-started from the previous round's selection",
        "",
        f"`{command}`",
        "",
        f"Machine: {machine_facts(__import__('torch').device('cpu'))}. Wall {seconds:.0f} s.",
        "",
        f"The rounds of `{ENTRY}` at N = {4 * CLIENTS_PER_DOMAIN}, K = {K}: seeds {args.seeds}, "
        f"rounds 1 .. {args.rounds - 1} of each run, solved at ε = {args.eps} (round t "
        "warm-started from round t−1's committed selection). Per backend and ε, cold and warm "
        f"alternated {args.repeats} times per round, "
        f"the fastest of each kept; {args.time_limit:g} s per solve. `cold_s`/`warm_s`: the "
        "rounds' summed seconds; `ratio_warm_cold`: warm_s / cold_s (below 1: the warm start "
        "helps); `median_round_ratio`: the median of the per-round ratios over the rounds "
        "neither stopped on the time limit; `optimal`/`infeasible`: the cold solves' statuses "
        "(an infeasible ε: the selector falls back to the smallest-gap point); "
        "`start_feasible`: rounds whose previous selection satisfies the new ε row (a start is "
        "given only then); `identical`: rounds where every warm and cold solve returned the "
        "same selection.",
        "",
        markdown_table(table),
        "",
        *reading(df, table),
        "",
        "Every round (fastest seconds; statuses in the csv):",
        "",
        markdown_table(per_round(df)),
        "",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--eps", default="5,10")
    ap.add_argument("--backends", default="highs,cbc,scip,cpsat")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    from rich.console import Console

    from selection.atomic import write_table_atomic, write_text_atomic

    console = Console(stderr=True)
    given = sys.argv[1:] if argv is None else argv
    command = shlex.join([".venv/bin/python", "benchmarks/eps_warm_start.py", *given])
    t0 = time.perf_counter()
    runs = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        console.print(f"seed {seed}: {args.rounds} rounds of {ENTRY}")
        runs[seed] = capture(seed, args.rounds)
    epsilons = [float(e) for e in args.eps.split(",")]
    df = measure(runs, args.backends.split(","), epsilons, args.repeats, args.time_limit,
                 console.print)  # fmt: skip
    table = summary(df)
    args.out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(df, args.out / "eps_warm_start.csv")
    text = render(df, table, args, command, time.perf_counter() - t0)
    write_text_atomic(text, args.out / "eps_warm_start.md")
    console.print(markdown_table(table))


if __name__ == "__main__":
    main()
