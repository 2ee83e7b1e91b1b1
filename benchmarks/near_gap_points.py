"""ε points just below an attainable gap: which routes get them right (against enumeration).

For small instances of three families (near-tied and cross-penalty: 2-decimal rows; synthetic:
float rows), seeds 0–3, (N, K) = (26, 3) and (22, 4), every exact front point's gap g gives an
ε point at g − ``--offset`` (default 1e-6 pp: where the complete sweep used to put it). Each
route (CBC, HiGHS, SCIP; count columns off and on) solves every point with the ε rows as
shipped (moved to half a value-grid step from any attainable gap where the rows are on a grid)
and (SCIP only) with ``snap`` off, at the raw ε; a point is wrong when its max U differs from
enumeration's by more than 1e-6 (or one side is infeasible).

Run: ``.venv/bin/python benchmarks/near_gap_points.py`` (writes results/benchmarks/
near_gap_points.{csv,md}).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selection.atomic import write_table_atomic, write_text_atomic
from selection.problem import SelectionProblem
from selection.solvers.eps import EpsSolver
from selection.solvers.exhaustive import best_eps, exact_front
from selection.solvers.milp.portfolio import value_quantum
from selection.synthetic import FAMILIES

ROOT = Path(__file__).resolve().parents[1]


def cases(offset: float) -> list[tuple[str, SelectionProblem, float, float | None]]:
    out = []
    for fam in ("near-tied", "cross-penalty", "synthetic"):
        for seed in range(4):
            for n, k in ((26, 3), (22, 4)):
                p = SelectionProblem.from_stats(FAMILIES[fam](n, seed=seed), k)
                for e in exact_front(p)["gap"].to_numpy() - offset:
                    w = best_eps(p, e)
                    out.append((fam, p, float(e), float(np.mean(p.U[list(w)])) if w else None))
    return out


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offset", type=float, default=1e-6)
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    todo = cases(args.offset)
    rows = []
    for backend in ("cbc", "highs", "scip"):
        for counts in ("off", "on"):
            for snap in (True, False) if backend == "scip" else (True,):
                EpsSolver.snap_to_grid = snap
                for fam, p, e, want in todo:
                    r = EpsSolver(eps=e, backend=backend, counts=counts, enum_limit=0).solve(p)
                    got = r.objectives.get("utility") if r.ok else None
                    wrong = (got is None) != (want is None) or (
                        got is not None and abs(got - want) > 1e-6
                    )
                    rows.append({"backend": backend, "counts": counts, "snap": snap,
                                 "family": fam, "grid": value_quantum(p.Ud) > 0, "eps": e,
                                 "want": want, "got": got, "wrong": wrong})  # fmt: skip
                print(backend, counts, snap, file=sys.stderr, flush=True)
    EpsSolver.snap_to_grid = True
    df = pd.DataFrame(rows)
    out = Path(args.out)
    write_table_atomic(df, out / "near_gap_points.csv")
    n = len(todo)
    lines = [
        "# ε points just below an attainable gap",
        "",
        f"Command: `.venv/bin/python benchmarks/near_gap_points.py"
        f"{'' if argv is None or not argv else ' ' + ' '.join(argv)}`; {n} points "
        f"(ε = front gap − {args.offset:g} pp), whole run {time.perf_counter() - t0:.0f} s. "
        "wrong = max U differs from enumeration's. `snap` = ε rows moved to half a value-grid "
        "step from any attainable gap (as shipped; no effect on the float synthetic rows).",
        "",
        "| backend | counts | snap | wrong (grid rows) | wrong (float rows) | wrong |",
        "|---|---|---|---:|---:|---:|",
    ]
    for (b, c, sn), g in df.groupby(["backend", "counts", "snap"], sort=False):
        lines.append(
            f"| {b} | {c} | {'on' if sn else 'off'} | {int(g[g.grid].wrong.sum())} of "
            f"{int(g.grid.sum())} | {int(g[~g.grid].wrong.sum())} of {int((~g.grid).sum())} | "
            f"{int(g.wrong.sum())} of {len(g)} |"
        )
    text = "\n".join(lines) + "\n"
    write_text_atomic(text, out / "near_gap_points.md")
    print(text)
    return df


if __name__ == "__main__":
    main()
