"""Complete fronts certified within a tolerance: the bi-objective branch-and-bound against the
ε loop, and the certificate the search holds when a cap stops it.

Writes results/benchmarks/biobj_tolerance.{csv,md}: per instance (the families of
``benchmarks/biobj.py``, K = N/10) and tolerance τ (points), the complete (U, gap) front
certified within τ by

* ``loop`` — ``sweep_eps(complete=True, tolerance=τ)`` with ``BB_TOLERANCE_MIN_N`` set out of
  reach: ``auto``'s ε loop (each point within τ of its max U, ε stepped by τ), the route ``auto``
  took before this benchmark set the rule;
* ``bb`` — ``sweep_eps(complete=True, backend="bb", tolerance=τ)`` (:mod:`selection.solvers.bb`).

Both are capped at ``--cap`` seconds (``max_seconds``; so bb takes its boxes in the anytime
order, :data:`selection.solvers.bb.search.ORDERS`). ``sweep order``: bb's search again with the
boxes in the ε loop's order (what it takes without a time limit), same cap. ``certified`` is what the route
proves about the whole front: every exact point (U*, g*) has a returned point with
U >= U* − c and gap <= g* + c (loop: the larger of its max_off and its gap slack, only where
it finished; bb: its certificate, also where the cap stopped it). ``bb at 1 s`` is the
certificate bb held after one second (its history), in each order. Single-threaded; run one at a time.
Run: ``.venv/bin/python benchmarks/biobj_tolerance.py``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from biobj import FAMILIES
from exact_peers import bounded_ratio

from selection.atomic import write_table_atomic, write_text_atomic
from selection.problem import SelectionProblem
from selection.solvers import sweeps
from selection.solvers.base import SweepOptions
from selection.solvers.bb.front import bb_search

ROOT = Path(__file__).resolve().parents[1]


def run(p: SelectionProblem, tau: float, cap: float, backend: str) -> dict:
    rule = sweeps.BB_TOLERANCE_MIN_N
    sweeps.BB_TOLERANCE_MIN_N = math.inf  # "auto": the ε loop, never bb
    t0 = time.perf_counter()
    try:
        f = sweeps.sweep_eps(
            p, complete=True, max_seconds=cap, options=SweepOptions(backend=backend, tolerance=tau)
        )
    finally:
        sweeps.BB_TOLERANCE_MIN_N = rule
    secs = time.perf_counter() - t0
    a = f.attrs
    done = bool(a.get("complete")) and not a.get("unproven")
    if backend == "bb":
        cert = float(a["certified"])
        early = [c for s, _, c in a["history"] if s <= 1.0]
        at1 = early[-1] if early else float("nan")
    else:
        cert = max(float(a["max_off"]), float(a["gap_slack"])) if done else float("nan")
        at1 = float("nan")
    return {
        "seconds": secs,
        "status": "complete" if done else "capped",
        "points": int((f["selected"] != "").sum()),
        "certified": cert,
        "at1": at1,
    }


def run_sweep_order(p: SelectionProblem, tau: float, cap: float) -> dict:
    """bb's search with the boxes in the ε loop's order (what it takes without a time limit)."""
    t0 = time.perf_counter()
    out = bb_search(p, "gap", tolerance=tau, time_limit=cap, order="sweep")
    early = [c for s, _, c in out.history if s <= 1.0]
    return {
        "seconds": time.perf_counter() - t0,
        "status": "complete" if out.complete else "capped",
        "at1": early[-1] / p.k if early else float("nan"),
    }


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,100,200")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--tau", default="0.1", help="tolerances, points, comma-separated")
    ap.add_argument("--cap", type=float, default=10.0, help="seconds per instance and route")
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    shown = argv if argv is not None else sys.argv[1:]
    command = " ".join(["`.venv/bin/python benchmarks/biobj_tolerance.py", *shown]).rstrip()
    load = os.getloadavg()[0]
    rows = []
    t_all = time.perf_counter()
    for fam in args.families.split(","):
        for n in (int(v) for v in args.sizes.split(",")):
            k = max(1, n // 10)
            p = SelectionProblem.from_stats(FAMILIES[fam](n), k)
            for tau in (float(v) for v in args.tau.split(",")):
                bb = run(p, tau, args.cap, "bb")
                loop = run(p, tau, args.cap, "auto")
                sweep = run_sweep_order(p, tau, args.cap)
                rows.append({"family": fam, "N": n, "K": k, "tau": tau,
                             **{f"bb_{c}": v for c, v in bb.items()},
                             **{f"sweep_{c}": v for c, v in sweep.items()},
                             **{f"loop_{c}": v for c, v in loop.items()}})  # fmt: skip
                print(f"{fam} N={n} τ={tau}: bb {bb['seconds']:.2f}s {bb['status']} "
                      f"c={bb['certified']:.4g}, loop {loop['seconds']:.2f}s {loop['status']}",
                      file=sys.stderr, flush=True)  # fmt: skip
    df = pd.DataFrame(rows)
    out = Path(args.out)
    write_table_atomic(df, out / "biobj_tolerance.csv")

    def cell(r, route: str) -> str:
        s, st = getattr(r, f"{route}_seconds"), getattr(r, f"{route}_status")
        return f"{s:.2f}" + ("" if st == "complete" else " (capped)")

    def num(v: float) -> str:
        return "n/a" if v != v else f"{v:.3g}"

    lines = [
        "# Complete fronts within a tolerance: bb against the ε loop",
        "",
        f"Command: {command}`; whole run {time.perf_counter() - t_all:.0f} s, load average "
        f"{load:.1f} at start, one run, single-threaded, on 2 cores shared with a long "
        "experiment: the seconds drift with the load.",
        "",
        "Complete (max U, min gap) front certified within τ points, K = N/10, the families of "
        "benchmarks/biobj.py. `loop` = `sweep_eps(complete=True, tolerance=τ)` with the bb rule "
        "off (auto's ε loop, as before `BB_TOLERANCE_MIN_N`); "
        '`bb` = `sweep_eps(complete=True, backend="bb", tolerance=τ)`. Cap '
        f"{args.cap:.0f} s per instance and route. certified c (pp): every exact front point "
        "(U*, g*) has a returned point with U >= U* − c and gap <= g* + c (loop: only where it "
        "finished; bb: also where the cap stopped it). `bb at 1 s`: bb's certificate after "
        "one second; `sweep order`: bb with the boxes in the ε loop's order (its order without a "
        "time limit), same cap. loop/bb = loop's seconds / bb's (> 1: bb faster; a capped side makes it a "
        "bound).",
        "",
        "| family | N | K | τ | bb s | bb points | bb certified | bb at 1 s | sweep order s | "
        "sweep order at 1 s | loop s | loop points | loop certified | loop/bb |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in df.itertuples(index=False):
        rt = bounded_ratio(r.loop_seconds, r.loop_status, r.bb_seconds, r.bb_status, digits=2)
        lines.append(
            f"| {r.family} | {r.N} | {r.K} | {r.tau:g} | {cell(r, 'bb')} | {r.bb_points} | "
            f"{num(r.bb_certified)} | {num(r.bb_at1)} | {cell(r, 'sweep')} | "
            f"{num(r.sweep_at1)} | {cell(r, 'loop')} | {r.loop_points} | "
            f"{num(r.loop_certified)} | {rt} |"
        )
    write_text_atomic("\n".join(lines) + "\n", out / "biobj_tolerance.md")
    print("\n".join(lines))
    return df


if __name__ == "__main__":
    main()
