"""One ε point per instance family and route: the table ``auto``'s portfolio is read from.

For every family (``benchmarks/_families.py``: synthetic, near-tied, cross-penalty, hetero6,
oracle) and N, one round with K = N/10 and two ε points: ``mid`` = half the gap g0 of the top-K-by-U
selection, ``tail`` = a tenth of it (the front's hard end); ``--points`` names others (where g0/2
lies below the smallest attainable gap: hetero6). Each point is solved by a fresh
solver on every route — CBC, HiGHS, CP-SAT and SCIP, each with the per-domain count columns
off and on (``counts``) — and by ``auto`` (the portfolio), each with a ``--time-limit``. A
route that stops at the limit reports its proven bound; ``off`` = bound − incumbent (pp of U).

Every proven answer of one point must have the same U (exactness; checked, column ``agrees``).
Seconds include the model build. Ratios are only meaningful within one run.

Run: ``.venv/bin/python benchmarks/exact_families.py`` (writes results/benchmarks/
exact_families.{csv,md}).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _families import FAMILIES

from selection.atomic import write_table_atomic, write_text_atomic
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.progress import plain_progress
from selection.solvers.eps import EpsSolver
from selection.solvers.milp.portfolio import aligned

ROOT = Path(__file__).resolve().parents[1]

ROUTES = (
    ("cbc", "off"), ("cbc", "on"), ("highs", "off"), ("highs", "on"),
    ("cpsat", "off"), ("cpsat", "on"), ("scip", "off"), ("scip", "on"), ("auto", "auto"),
)  # fmt: skip
POINTS = {"mid": 0.5, "tail": 0.1}


def solve_point(p: SelectionProblem, eps: float, route: str, counts: str, limit: float) -> dict:
    s = EpsSolver(eps=eps, backend=route, counts=counts, time_limit=limit, enum_limit=0)
    t0 = time.perf_counter()
    r = s.solve(p)
    secs = time.perf_counter() - t0
    u = r.objectives.get("utility", np.nan)
    return {
        "route": route,
        "counts": counts,
        "used": r.backend,
        "status": str(r.status),
        "seconds": secs,
        "utility": u,
        "bound": r.bound,
        "off": r.bound - u if r.ok else np.nan,
        "reason": r.route_reason,
    }


def run(families, sizes, limit, routes, progress=None, points=POINTS) -> pd.DataFrame:
    rows = []
    done, total = 0, len(families) * len(sizes) * len(points) * len(routes)
    for fam in families:
        for n in sizes:
            table = FAMILIES[fam](n)
            p = SelectionProblem.from_stats(table, max(1, n // 10))
            top = tuple(np.argsort(-p.U, kind="stable")[: p.k])
            g0 = evaluate(p, top)["gap"]
            for point, frac in points.items():
                eps = g0 * frac
                got = []
                for route, counts in routes:
                    r = solve_point(p, eps, route, counts, limit)
                    r.update(family=fam, N=n, K=p.k, point=point, eps=eps, g0=g0,
                             aligned=aligned(p))  # fmt: skip
                    got.append(r)
                    done += 1
                    if progress:
                        progress(done, total, "exact families")
                proven = [g["utility"] for g in got if g["status"] == "optimal"]
                for g in got:
                    g["agrees"] = (
                        bool(abs(g["utility"] - proven[0]) <= 1e-6) if g["status"] == "optimal"
                        else None
                    )  # fmt: skip
                rows += got
    cols = ["family", "N", "K", "aligned", "point", "eps", "g0", "route", "counts", "used",
            "status", "seconds", "utility", "bound", "off", "agrees", "reason"]  # fmt: skip
    return pd.DataFrame(rows)[cols]


def _fmt(v) -> str:
    if isinstance(v, float):
        return "" if np.isnan(v) else f"{v:.4g}"
    return str(v)


def render(df: pd.DataFrame, command: str, wall: float, load: tuple) -> str:
    lines = [
        "# One ε point per family and route (the portfolio's table)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} CPU cores ({platform.machine()}), Python "
        f"{platform.python_version()}; every route single-threaded. Load average before: "
        f"{', '.join(f'{x:.2f}' for x in load)}. Whole run {wall:.0f} s.",
        "",
        "K = N/10; "
        + ", ".join(
            f"`{pt}`: ε = {frac:g}·g0"
            for pt, frac in (df["eps"] / df["g0"])
            .round(4)
            .groupby(df["point"], sort=False)
            .first()
            .items()
        )
        + " (g0: the gap of the top-K-by-U selection). `counts`: per-domain count columns off/on (`auto`: the portfolio's "
        "choice). `off`: proven bound − incumbent U (pp), 0 on a proven optimum. `agrees`: "
        "the same U as every other proven route. `aligned`: U is the mean of the domain rows.",
        "",
    ]
    best = []
    for (fam, n, point), g in df.groupby(["family", "N", "point"], sort=False):
        fixed = g[g["route"] != "auto"]
        ok = fixed[fixed["status"] == "optimal"]
        fastest = ok.loc[ok["seconds"].idxmin()] if len(ok) else None
        auto = g[g["route"] == "auto"].iloc[0]
        best.append({
            "family": fam, "N": n, "point": point, "aligned": bool(g["aligned"].iloc[0]),
            "fastest": "" if fastest is None else f"{fastest.route}/{fastest.counts}",
            "fastest_s": np.nan if fastest is None else fastest.seconds,
            "auto": f"{auto.used}", "auto_s": auto.seconds, "auto_status": auto.status,
            "auto/fastest": np.nan if fastest is None else auto.seconds / fastest.seconds,
        })  # fmt: skip
    summary = pd.DataFrame(best)
    lines += ["## Fastest proven route and the portfolio's choice", ""]
    lines += _table(summary)
    lines += ["", "## Every route", ""]
    lines += _table(df.drop(columns=["reason"]))
    lines += ["", "## The portfolio's reasons", ""]
    for why in dict.fromkeys(df[df["route"] == "auto"]["reason"]):
        lines.append(f"* {why}")
    return "\n".join(lines) + "\n"


def _table(df: pd.DataFrame) -> list[str]:
    out = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    for row in df.itertuples(index=False):
        out.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    return out


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--sizes", default="1000")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--routes", default=",".join(f"{r}/{c}" for r, c in ROUTES))
    ap.add_argument(
        "--points",
        default=",".join(f"{k}={v:g}" for k, v in POINTS.items()),
        help="name=fraction of g0 per ε point (default: mid=0.5,tail=0.1)",
    )
    ap.add_argument("--tag", default=None, help="file name suffix (default: from --sizes)")
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    fams = args.families.split(",")
    sizes = [int(v) for v in args.sizes.split(",")]
    routes = [tuple(r.split("/")) for r in args.routes.split(",")]
    command = "`.venv/bin/python benchmarks/exact_families.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    command = command.strip() + "`"
    load = os.getloadavg()
    t0 = time.perf_counter()
    points = {k: float(v) for k, v in (kv.split("=") for kv in args.points.split(","))}
    df = run(fams, sizes, args.time_limit, routes, progress=plain_progress(), points=points)
    wall = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = (
        args.tag
        if args.tag is not None
        else ("" if sizes == [1000] else "_" + "_".join(map(str, sizes)))
    )
    write_table_atomic(df, out / f"exact_families{tag}.csv")
    write_text_atomic(render(df, command.strip("`"), wall, load), out / f"exact_families{tag}.md")
    print(render(df, command.strip("`"), wall, load))
    return df


if __name__ == "__main__":
    main()
