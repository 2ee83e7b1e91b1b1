"""The smallest-gap point at cross-device scale: ε bisection (before) against the bounded route.

Before: ``min_gap_point`` as it was, a bisection over ε with one exact ε MILP per step (``auto``:
CBC), stopped here at ``--cap`` seconds (the gap it had reached is reported). After:
``min_gap_point`` now (:mod:`selection.solvers.min_gap`: local search, then two HiGHS MILPs
stopped at a node limit), run twice to check that it returns the same selection.

Instances: the generated families of :mod:`selection.synthetic` (seed 0) at (N, K) = (200, 20)
and (1,000, 50), and the ``oracle`` family (the last round of a cached simulator run,
benchmarks/_families.py) at (200, 20). Wall and CPU seconds (this process and its CBC
subprocesses) are reported: the machine runs other work beside it.

Run: ``.venv/bin/python benchmarks/min_gap.py`` (writes results/benchmarks/min_gap.{csv,md});
``--cases near-tied:200:20 --cap 240 --name min_gap_long``: one case, the bisection given longer.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _families import FAMILIES

from selection.atomic import write_table_atomic, write_text_atomic
from selection.problem import SelectionProblem
from selection.solvers.eps import EpsSolver, min_gap_point
from selection.solvers.min_gap import default_nodes

ROOT = Path(__file__).resolve().parents[1]

CASES = (
    ("synthetic", 200, 20),
    ("near-tied", 200, 20),
    ("cross-penalty", 200, 20),
    ("oracle", 200, 20),
    ("synthetic", 1000, 50),
    ("near-tied", 1000, 50),
    ("cross-penalty", 1000, 50),
)


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (CBC runs as one)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bisection(problem: SelectionProblem, cap: float) -> dict:
    """The former ``min_gap_point``: bisect ε between 0 and the U* point's gap (tolerance
    1e-6 pp), one exact ε MILP per step; stopped once ``cap`` seconds have passed (the last
    step gets what is left as its time limit)."""
    t0, c0 = time.perf_counter(), _cpu()
    solver = EpsSolver()
    best = solver.with_param(None).solve(problem)
    lo, hi, steps, stopped = 0.0, float(best.objectives["gap"]), 1, False
    for _ in range(64):
        if hi - lo <= 1e-6:
            break
        left = cap - (time.perf_counter() - t0)
        if left <= 0:
            stopped = True
            break
        mid = 0.5 * (lo + hi)
        r = EpsSolver(eps=mid, time_limit=left).solve(problem)
        steps += 1
        if r.ok:
            best, hi = r, min(mid, float(r.objectives["gap"]))
            stopped = stopped or str(r.status) == "time_limit"
        elif str(r.status) == "time_limit":
            stopped = True
            break
        else:
            lo = mid
    return {
        "before_s": time.perf_counter() - t0,
        "before_cpu_s": _cpu() - c0,
        "before_steps": steps,
        "before_stopped": stopped,
        "before_gap": float(best.objectives["gap"]),
        "before_U": float(best.objectives["utility"]),
        "before_lower": lo,
    }


def bounded(problem: SelectionProblem) -> dict:
    """``min_gap_point`` now, twice (the second run checks the selection is the same)."""
    t0, c0 = time.perf_counter(), _cpu()
    r = min_gap_point(problem)
    out = {
        "after_s": time.perf_counter() - t0,
        "after_cpu_s": _cpu() - c0,
        "status": str(r.status),
        "backend": r.backend,
        "nodes": default_nodes(problem.n),
        "after_gap": float(r.objectives["gap"]),
        "after_U": float(r.objectives["utility"]),
        "after_lower": float(r.bound),
        "message": r.message,
    }
    again = min_gap_point(problem)
    out["same_selection"] = again.selected == r.selected and again.message == r.message
    return out


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cap", type=float, default=20.0, help="seconds for the bisection")
    ap.add_argument("--cases", default=None, help="FAMILY:N:K,... (default: the seven of CASES)")
    ap.add_argument("--name", default="min_gap", help="file stem of the tables")
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    cases = CASES
    if args.cases:
        cases = [(f, int(n), int(k)) for f, n, k in (c.split(":") for c in args.cases.split(","))]
    t0, load0 = time.perf_counter(), os.getloadavg()
    rows = []
    for fam, n, k in cases:
        table = FAMILIES[fam](n) if fam == "oracle" else FAMILIES[fam](n, seed=0)
        p = SelectionProblem.from_stats(table, k)
        row = {"family": fam, "N": n, "K": k, **bisection(p, args.cap), **bounded(p)}
        rows.append(row)
        print(fam, n, k, f"{row['before_s']:.1f}s -> {row['after_s']:.1f}s", file=sys.stderr)
    df = pd.DataFrame(rows)
    out = Path(args.out)
    write_table_atomic(df, out / f"{args.name}.csv")
    given = sys.argv[1:] if argv is None else argv
    text = render(df, given, args.cap, time.perf_counter() - t0, load0, os.getloadavg())
    write_text_atomic(text, out / f"{args.name}.md")
    print(text)
    return df


def render(df: pd.DataFrame, argv, cap: float, wall: float, load0, load1) -> str:
    cmd = "nice -n 15 .venv/bin/python benchmarks/min_gap.py" + (
        " " + " ".join(argv) if argv else ""
    )
    lines = [
        "# The smallest-gap point at scale: ε bisection against the bounded route",
        "",
        f"Command: `{cmd}`; one run, whole run {wall:.0f} s. 2 CPU cores shared with other "
        f"work: load average (1, 5, 15 min) {', '.join(f'{v:.2f}' for v in load0)} before, "
        f"{', '.join(f'{v:.2f}' for v in load1)} after.",
        "",
        f"*before*: bisection over ε, one exact ε MILP (CBC) per step, stopped at {cap:g} s "
        "(`stopped`: the gap it had reached then, not its end). *after*: local search, then "
        "two HiGHS MILPs stopped at the node limit `nodes`; `lower` is its proven lower bound "
        "on the smallest gap (the smallest gap lies in [lower, gap]); `same` = a second run "
        "returned the same selection. `cpu` = this process and its CBC subprocesses. `ratio` "
        "= before / after wall seconds (≥ where the bisection was stopped).",
        "",
        "| family | N | K | before s | before cpu s | steps | stopped | before gap | "
        "after s | after cpu s | nodes | status | after gap | lower | U before → after | "
        "same | ratio |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---|---|---:|",
    ]
    for r in df.itertuples():
        ratio = r.before_s / r.after_s
        lines.append(
            f"| {r.family} | {r.N} | {r.K} | {r.before_s:.1f} | {r.before_cpu_s:.1f} | "
            f"{r.before_steps} | {'yes' if r.before_stopped else 'no'} | {r.before_gap:.4g} | "
            f"{r.after_s:.1f} | {r.after_cpu_s:.1f} | {r.nodes} | {r.status} | "
            f"{r.after_gap:.4g} | {r.after_lower:.3g} | {r.before_U:.3f} → {r.after_U:.3f} | "
            f"{'yes' if r.same_selection else 'NO'} | "
            f"{'≥ ' if r.before_stopped else ''}{ratio:.1f}x |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
