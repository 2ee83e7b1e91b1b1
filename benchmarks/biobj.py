"""The bi-objective branch-and-bound (``--backend bb``) against the ε-loop routes.

Writes results/benchmarks/biobj.{csv,md}: the complete exact (U, gap) front of each instance by

* ``fedsel auto`` — ``sweep_eps(complete=True)``, the default route (one ε-MILP per point);
* ``fedsel bb`` — ``sweep_eps(complete=True, options=SweepOptions(backend="bb"))``
  (:mod:`selection.solvers.bb`);
* ``pulp textbook`` — the ε-constraint loop that rebuilds a PuLP + CBC model per ε
  (``benchmarks/exact_peers.py``'s ``run_pulp_textbook``).

Families: the five of ``benchmarks/exact_peers.py`` (``hetero6`` included).
K = N/10. A route stopped by ``--cap`` is ``capped``; fronts are compared only between two
finished routes. Single-threaded; run one at a time.
Run: ``.venv/bin/python benchmarks/biobj.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from exact_peers import (
    FAMILIES,
    bounded_ratio,
    identical,
    run_pulp_textbook,
    run_sweep,
)

from selection.atomic import write_table_atomic, write_text_atomic
from selection.problem import SelectionProblem

ROOT = Path(__file__).resolve().parents[1]

OBJ = ("utility", "gap")


def _over(num: dict, den: dict) -> str:
    return bounded_ratio(num["seconds"], num["status"], den["seconds"], den["status"], digits=2)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,50,100,200,500")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--cap", type=float, default=15.0, help="seconds per instance and route")
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    command = "`.venv/bin/python benchmarks/biobj.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    command = command.rstrip() + "`"
    rows = []
    t_all = time.perf_counter()
    for fam in args.families.split(","):
        for n in (int(v) for v in args.sizes.split(",")):
            k = max(1, n // 10)
            p = SelectionProblem.from_stats(FAMILIES[fam](n), k)
            bb = run_sweep(p, args.cap, "bb")
            auto = run_sweep(p, args.cap, "auto")
            loop = run_pulp_textbook(p, args.cap)
            both = lambda a, b: (  # noqa: E731
                identical(a["points"], b["points"])
                if a["status"] == b["status"] == "complete"
                else None
            )
            rows.append(
                {
                    "family": fam,
                    "N": n,
                    "K": k,
                    "points": len(bb["points"]),
                    "bb_s": bb["seconds"],
                    "bb_status": bb["status"],
                    "auto_s": auto["seconds"],
                    "auto_status": auto["status"],
                    "textbook_s": loop["seconds"],
                    "textbook_status": loop["status"],
                    "same_as_auto": both(bb, auto),
                    "same_as_textbook": both(bb, loop),
                    "auto_over_bb": _over(auto, bb),
                    "textbook_over_bb": _over(loop, bb),
                    "bb_detail": bb["detail"],
                }
            )
            print(f"{fam} N={n}: bb {bb['seconds']:.2f}s {bb['status']}, auto "
                  f"{auto['seconds']:.2f}s {auto['status']}, textbook {loop['seconds']:.2f}s "
                  f"{loop['status']}", file=sys.stderr, flush=True)  # fmt: skip
    df = pd.DataFrame(rows)
    out = Path(args.out)
    write_table_atomic(df, out / "biobj.csv")

    def yes(v) -> str:
        return "n/a" if v is None or v != v else ("yes" if v else "no")

    def cell(s: float, st: str) -> str:
        return f"{s:.2f}" + ("" if st == "complete" else " (capped)")

    lines = [
        "# The bi-objective branch-and-bound against the ε loop",
        "",
        f"Command: {command}; whole run {time.perf_counter() - t_all:.0f} s, one run, "
        "single-threaded, on 2 cores shared with other jobs: the seconds drift with the load, "
        "the fronts do not.",
        "",
        "Complete exact (max U, min gap) front, K = N/10. Routes: `bb` = "
        '`sweep_eps(complete=True, options=SweepOptions(backend="bb"))`; `auto` = '
        "`sweep_eps(complete=True)` (the "
        "default ε loop); `textbook` = the PuLP + CBC ε loop rebuilding the model per ε "
        f"(benchmarks/exact_peers.py). Cap {args.cap:.0f} s per instance and route. "
        "ratio = the route's seconds / bb's seconds (> 1: bb faster); `>`/`<` where one side "
        "was capped. same = the same (U, gap) points within 1e-6 (only between finished routes).",
        "",
        "| family | N | K | points (bb) | bb s | auto s | textbook s | auto/bb | textbook/bb "
        "| same as auto | same as textbook | bb detail |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in df.itertuples(index=False):
        lines.append(
            f"| {r.family} | {r.N} | {r.K} | {r.points} | {cell(r.bb_s, r.bb_status)} | "
            f"{cell(r.auto_s, r.auto_status)} | {cell(r.textbook_s, r.textbook_status)} | "
            f"{r.auto_over_bb} | {r.textbook_over_bb} | {yes(r.same_as_auto)} | "
            f"{yes(r.same_as_textbook)} | {r.bb_detail} |"
        )
    write_text_atomic("\n".join(lines) + "\n", out / "biobj.md")
    print("\n".join(lines))
    return df


if __name__ == "__main__":
    main()
