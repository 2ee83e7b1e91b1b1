"""Speed and quality of the selection routes; writes results/benchmarks/solvers.{csv,md}.

For N in {20, 100, 1000, 5000} (K = 5 at N = 20, else N/10; D = 4; ``synthetic_stats(N,
seed=0)``) and each route (enum where C(N, K) allows, highs, cbc, cpsat):

* ``build_s`` — building the persistent MILP model;
* ``eps_median_s`` — median seconds of one ε point over a grid of 5 ε values (0.9, 0.7,
  0.5, 0.35, 0.2 of the way from the smallest gap to the top-K-by-U gap), each capped at
  ``--point-limit`` seconds (a capped point counts with its time, status ``time_limit``);
* ``front_s`` — the complete ε sweep (the exact (U, gap) front), where it ends within
  ``--front-budget`` seconds; otherwise "not finished" with the points found so far;
* for NSGA-II (when ``selection.solvers.nsga2`` is importable): hypervolume ratio against
  the exact front (enumeration, or a finished complete sweep; else the best known front,
  the union of all points) and seconds.

Each case also stops starting new ε points after ``--case-budget`` seconds; what did not
run is reported as such. Run: ``.venv/bin/python benchmarks/solvers.py``.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selection.atomic import write_table_atomic, write_text_atomic
from selection.objectives import gap
from selection.problem import SelectionProblem
from selection.solvers import make_solver
from selection.solvers.base import SweepOptions
from selection.solvers.exhaustive import exact_front
from selection.solvers.milp.formulations import eps_spec, model_data
from selection.solvers.milp.model import make_backend
from selection.solvers.sweeps import sweep_eps
from selection.synthetic import synthetic_stats

ROOT = Path(__file__).resolve().parents[1]

SIZES = [(20, 5), (100, 10), (1000, 100), (5000, 500)]
FRACTIONS = (0.9, 0.7, 0.5, 0.35, 0.2)
ENUM_MAX = 5_000_000


def eps_grid(p: SelectionProblem) -> list[float]:
    """ε values spread over [g_min, g0], percentage points.

    g0 is the gap of the top-K-by-U selection (the unconstrained optimum's, up to ties);
    g_min the smallest gap of any selection (a min-gap MILP in HiGHS, 60 s cap: an upper
    bound if capped). Fractions 0.9, 0.7, 0.5, 0.35, 0.2 of the way from g_min to g0.
    """
    top = np.argsort(-p.U, kind="stable")[: p.k]
    ud = p.Ud[top].mean(axis=0)
    g0 = float(ud.max() - ud.min())
    spec = eps_spec(model_data(p, "highs", 1000), p.k, None, None)
    spec.objectives = spec.objectives[1:]  # only: minimize hi - lo
    spec.stage_values = []  # (the exact value of the dropped U stage)
    out = make_backend("highs", spec).solve(time_limit=60.0)
    g_min = float(gap(p, np.isin(np.arange(p.n), out.selected))[0]) if out.selected else 0.0
    return [round(g_min + f * (g0 - g_min), 4) for f in FRACTIONS]


def run_grid(p, backend, grid, point_limit, case_budget, mip_gap=0.0):
    """Solve the grid until the case budget is spent; (seconds list, statuses, not run, build)."""
    kw = {} if backend == "enum" else {"time_limit": point_limit, "mip_gap": mip_gap}
    solver = make_solver("eps", backend=backend, **kw)
    build = math.nan
    if backend != "enum":
        build = solver.model(p).build_seconds
    secs, statuses, t0 = [], [], time.perf_counter()
    for e in grid:
        if time.perf_counter() - t0 > case_budget:
            break
        r = solver.with_param(e).solve(p)
        secs.append(r.seconds)
        statuses.append(str(r.status))
    return secs, statuses, len(grid) - len(secs), build


def run_front(p, backend, budget, point_limit):
    """The complete ε sweep within ``budget`` seconds: (frame, seconds, finished)."""
    p = SelectionProblem.from_stats(p.table, p.k)  # a fresh problem: no cached enumeration
    t0 = time.perf_counter()
    limit = None if backend == "enum" else point_limit
    options = SweepOptions(backend=backend, time_limit=limit)
    df = sweep_eps(p, complete=True, max_seconds=budget, options=options)
    return df, time.perf_counter() - t0, bool(df.attrs.get("complete"))


def nsga2_quality(p, reference: np.ndarray):
    """(HV ratio, seconds, n points) of NSGA-II's default run, or None when unavailable."""
    try:
        from selection.indicators import hypervolume_ratio
        from selection.solvers.nsga2 import NSGA2Solver
    except ImportError:
        return None
    solver = NSGA2Solver(seed=0)
    t0 = time.perf_counter()
    results = solver.front(p)
    seconds = time.perf_counter() - t0
    pts = np.array([[r.objectives["utility"], r.objectives["gap"]] for r in results])
    ref = np.vstack([reference, pts]) if len(reference) else pts
    from selection.indicators import reference_front

    front = reference_front([ref], ("utility", "gap"))
    return hypervolume_ratio(pts, front, ("utility", "gap")), seconds, len(pts)


def bench(args) -> pd.DataFrame:
    rows = []
    for n, k in SIZES:
        if n > args.max_n:
            continue
        p = SelectionProblem.from_stats(synthetic_stats(n, seed=0), k)
        grid = eps_grid(p)
        count = math.comb(n, k)
        backends = (["enum"] if count <= ENUM_MAX else []) + ["highs", "cbc", "cpsat"]
        exact = None
        known: list[np.ndarray] = []
        for b in backends:
            print(f"N={n} K={k} {b}: ε grid {grid}", flush=True)
            secs, sts, not_run, build = run_grid(p, b, grid, args.point_limit, args.case_budget)
            row = {
                "N": n,
                "K": k,
                "route": b,
                "build_s": build,
                "eps_points": len(secs),
                "eps_not_run": not_run,
                "eps_median_s": statistics.median(secs) if secs else math.nan,
                "eps_max_s": max(secs) if secs else math.nan,
                "eps_statuses": " ".join(f"{s}:{sts.count(s)}" for s in sorted(set(sts))),
            }
            run_front_here = b == "enum" or (n <= args.front_max_n and b in args.front_routes)
            if run_front_here:
                budget = args.front_budget if b == "highs" else args.front_budget_other
                df, fs, done = run_front(p, b, budget, args.point_limit)
                ok = df[df.status.isin(["optimal", "feasible", "time_limit"])]
                known.append(ok[["utility", "gap"]].to_numpy())
                row.update(front_s=fs, front_points=len(ok), front_done=done)
                if done and exact is None:
                    exact = ok[["utility", "gap"]].to_numpy()
            else:
                row.update(front_s=math.nan, front_points=0, front_done=False)
                row["note"] = "complete front not run (budget)"
            rows.append(row)
        if n == 20:
            exact = exact_front(p)[["utility", "gap"]].to_numpy()
        if args.fast_gap > 0 and n >= 1000:
            print(f"N={n} highs mip_gap={args.fast_gap}", flush=True)
            secs, sts, not_run, build = run_grid(
                p, "highs", grid, args.point_limit, args.case_budget, mip_gap=args.fast_gap
            )
            rows.append(
                {
                    "N": n,
                    "K": k,
                    "route": f"highs gap={args.fast_gap:g}",
                    "build_s": build,
                    "eps_points": len(secs),
                    "eps_not_run": not_run,
                    "eps_median_s": statistics.median(secs) if secs else math.nan,
                    "eps_max_s": max(secs) if secs else math.nan,
                    "eps_statuses": " ".join(f"{s}:{sts.count(s)}" for s in sorted(set(sts))),
                    "front_s": math.nan,
                    "front_points": 0,
                    "front_done": False,
                    "note": "relative MIP gap: points not proven optimal",
                }
            )
        if n <= args.nsga2_max_n:
            ref = exact if exact is not None else (np.vstack(known) if known else np.zeros((0, 2)))
            q = nsga2_quality(p, ref)
            row = {"N": n, "K": k, "route": "nsga2"}
            if q is None:
                row["note"] = "selection.solvers.nsga2 not available"
            else:
                row.update(
                    nsga2_hv_ratio=q[0],
                    nsga2_s=q[1],
                    front_points=q[2],
                    note="HV vs exact front" if exact is not None else "HV vs best known front",
                )
            rows.append(row)
    return pd.DataFrame(rows)


def to_markdown(df: pd.DataFrame, command: str, seconds: float) -> str:
    cols = [
        "N",
        "K",
        "route",
        "build_s",
        "eps_median_s",
        "eps_max_s",
        "eps_points",
        "eps_not_run",
        "eps_statuses",
        "front_s",
        "front_points",
        "front_done",
        "nsga2_hv_ratio",
        "nsga2_s",
        "note",
    ]
    df = df.reindex(columns=cols)

    def fmt(v):
        if isinstance(v, float):
            return "" if math.isnan(v) else f"{v:.4g}"
        return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in df.itertuples(index=False)]
    head = (
        "# Selection solver benchmark\n\n"
        f"Command: `{command}`  \n"
        f"Machine: 2 CPU cores shared with other jobs ({platform.processor() or platform.machine()},"
        f" Python {platform.python_version()}); whole run {seconds:.0f} s.  \n"
        "Instances: `synthetic_stats(N, seed=0)`, D = 4. ε grid: 0.9/0.7/0.5/0.35/0.2 of the way "
        "from the smallest gap to the top-K-by-U gap. Times in seconds; `front_*` is the complete ε sweep (exact front).  \n"
        "highs and cbc fix binaries by exact LP reduced-cost fixing before each stage "
        "(`selection/solvers/milp/fixing.py`); `auto` uses cbc above the enumeration limit.\n\n"
    )
    return head + "\n".join(lines) + "\n\n" + targets(df)


def _cell(df: pd.DataFrame, n: int, route: str, col: str) -> float:
    hit = df[(df.N == n) & (df.route == route)]
    return float(hit[col].iloc[0]) if len(hit) and pd.notna(hit[col].iloc[0]) else math.nan


def targets(df: pd.DataFrame) -> str:
    """The issue's targets against this run's numbers."""
    checks = [
        ("complete exact front, N=20 (auto: enumeration)", _cell(df, 20, "enum", "front_s"), 0.1),
        ("complete exact front, N=100 K=10 (highs)", _cell(df, 100, "highs", "front_s"), 60.0),
        ("complete exact front, N=100 K=10 (cbc)", _cell(df, 100, "cbc", "front_s"), 60.0),
        ("ε point, N=5000 median (highs)", _cell(df, 5000, "highs", "eps_median_s"), 1.0),
        (
            "ε point, N=5000 median (cbc, the auto route)",
            _cell(df, 5000, "cbc", "eps_median_s"),
            1.0,
        ),
        ("NSGA-II HV ratio, N=20 (>= 0.995)", _cell(df, 20, "nsga2", "nsga2_hv_ratio"), None),
    ]
    out = ["## Targets", "", "| target | measured | met |", "|---|---|---|"]
    for name, v, limit in checks:
        if math.isnan(v):
            out.append(f"| {name} | not measured | |")
        elif limit is None:
            out.append(f"| {name} | {v:.4f} | {'yes' if v >= 0.995 else 'no'} |")
        else:
            out.append(f"| {name} < {limit:g} s | {v:.3g} s | {'yes' if v < limit else 'no'} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    ap.add_argument("--max-n", type=int, default=5000)
    ap.add_argument("--point-limit", type=float, default=30.0, help="seconds per ε point")
    ap.add_argument("--case-budget", type=float, default=45.0, help="seconds per grid case")
    ap.add_argument("--front-budget", type=float, default=120.0, help="complete front, highs")
    ap.add_argument("--front-budget-other", type=float, default=45.0, help="cbc/cpsat fronts")
    ap.add_argument("--front-max-n", type=int, default=100)
    ap.add_argument("--front-routes", default="highs,cbc,cpsat")
    ap.add_argument("--nsga2-max-n", type=int, default=100)
    ap.add_argument("--fast-gap", type=float, default=1e-4, help="extra highs row, N >= 1000")
    args = ap.parse_args(argv)
    args.front_routes = args.front_routes.split(",")
    t0 = time.perf_counter()
    df = bench(args)
    seconds = time.perf_counter() - t0
    out = Path(args.out)
    write_table_atomic(df, out / "solvers.csv")
    command = ".venv/bin/python benchmarks/solvers.py " + " ".join(argv or sys.argv[1:])
    write_text_atomic(to_markdown(df, command.strip(), seconds), out / "solvers.md")
    print(to_markdown(df, command.strip(), seconds))


if __name__ == "__main__":
    main()
