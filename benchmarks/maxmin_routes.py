"""max-min with an average-utility floor on each MILP route, on the study's own rounds.

    .venv/bin/python benchmarks/maxmin_routes.py [--time-limit 60]

``maxmin:2`` (maximise the worst domain's utility, U within 2 points of its optimum) at K =
N/10 on: two rounds of the cross-device study (N = 200, the ``probe`` information model's
predicted utilities: continuous rows, every client near the same base accuracy; in
``benchmarks/data/probe_round_n200_*.csv``, reconstructed from the MILP the study handed to
CBC: the four domain rows and U of each client, client ids and domains renamed), and the
generated families (``selection.synthetic``) at N = 200 and 1,000. Each route gets
``--time-limit`` seconds per MILP solve; ``status`` is ``optimal`` when proven. Writes
``results/benchmarks/maxmin_routes.{csv,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from rich.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks"
DATA = Path(__file__).resolve().parent / "data"
ROUTES = ("auto", "cbc", "highs", "cpsat")


def instances():
    from selection.schema import read_stats
    from selection.synthetic import FAMILIES

    for path in sorted(DATA.glob("probe_round_n200_*.csv")):
        yield f"study probe round ({path.stem[-1]})", read_stats(path)
    for n in (200, 1000):
        for fam, make in FAMILIES.items():
            yield f"{fam} N={n}", make(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from oracle import markdown_table  # benchmarks/oracle.py, beside this script

    from selection.atomic import write_table_atomic, write_text_atomic
    from selection.problem import SelectionProblem
    from selection.solvers.registry import make_solver

    rows, start = [], time.perf_counter()
    cases = list(instances())
    with Progress(transient=True) as progress:
        task = progress.add_task("maxmin solves", total=len(cases) * len(ROUTES))
        for name, stats in cases:
            p = SelectionProblem.from_stats(stats, k=len(stats) // 10)
            for route in ROUTES:
                solver = make_solver("maxmin", delta=2.0, backend=route, time_limit=args.time_limit)
                t = time.perf_counter()
                r = solver.solve(p)
                rows.append({"instance": name, "N": p.n, "K": p.k, "route": route,
                             "used": getattr(r, "backend", "") or "", "status": r.status,
                             "seconds": round(time.perf_counter() - t, 3),
                             "worst": round(float(r.objectives.get("worst", float("nan"))), 6)
                             if hasattr(r, "objectives") else None})  # fmt: skip
                progress.advance(task)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    write_table_atomic(df, OUT / "maxmin_routes.csv")
    wide = df.pivot_table(index="instance", columns="route", values="seconds", sort=False)
    status = df.pivot_table(index="instance", columns="route", values="status", aggfunc="first",
                            sort=False)  # fmt: skip
    for route in ROUTES:
        wide[route] = [f"{s:.2f}" + ("" if st == "optimal" else f" ({st})")
                       for s, st in zip(wide[route], status[route], strict=True)]  # fmt: skip
    text = "\n".join([
        "# max-min with a utility floor (maxmin:2) on each MILP route",
        "",
        f"Command: `.venv/bin/python benchmarks/maxmin_routes.py --time-limit {args.time_limit:g}` "
        f"({time.perf_counter() - start:.0f} s here). Seconds per lexicographic solve (both "
        "stages), K = N/10; a status other than optimal is shown beside the seconds.",
        "",
        markdown_table(wide.reset_index()),
        "",
    ])  # fmt: skip
    write_text_atomic(text, OUT / "maxmin_routes.md")
    print(text)


if __name__ == "__main__":
    main()
