"""fedsel's NSGA-II against stock pymoo NSGA-II, at equal evaluation budgets.

Writes results/benchmarks/nsga2_peer.{csv,md}. The peer is what a user writes first: pymoo's
NSGA-II on binary vectors with its stock operators (``BinaryRandomSampling``,
``TwoPointCrossover``, ``BitflipMutation``) and a repair to exactly K ones (drop random extra
ones, add random missing ones). fedsel's entries:

* ``fedsel operators`` — the same NSGA-II with fedsel's K-preserving operators
  (:class:`~selection.solvers.nsga2.KSubsetSampling`, ``KSubsetCrossover``, ``SwapMutation``),
  no local search: the operators alone, at the same number of evaluations;
* ``fedsel solver`` — :class:`~selection.solvers.nsga2.NSGA2Solver` as ``fedsel`` runs it (the
  same budget of population evaluations, plus its seeding descents and final Pareto local
  search, which evaluate more selections; their cost is in its seconds).

Quality is the hypervolume ratio in (max U, min gap) against the exact front where it is known
(enumeration at N = 20; the complete ε sweep at N = 100) and otherwise against the
non-dominated union of every run (``reference = union``), with one normalization per instance.
Hypervolume ratios do not depend on the machine's load; seconds do (one run, shared cores).
Run: ``.venv/bin/python benchmarks/nsga2_peer.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.repair import Repair
from pymoo.operators.crossover.pntx import TwoPointCrossover
from pymoo.operators.mutation.bitflip import BitflipMutation
from pymoo.operators.sampling.rnd import BinaryRandomSampling
from pymoo.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selection.atomic import write_table_atomic, write_text_atomic
from selection.indicators import Normalization, hypervolume_ratio, reference_front
from selection.problem import SelectionProblem
from selection.solvers.exhaustive import exact_front
from selection.solvers.nsga2 import (
    KSubsetCrossover,
    KSubsetSampling,
    NSGA2Solver,
    RowHashDuplicates,
    SelectionMOP,
    SwapMutation,
)
from selection.solvers.sweeps import sweep_eps
from selection.synthetic import synthetic_stats

ROOT = Path(__file__).resolve().parents[1]

OBJ = ("utility", "gap")


class ExactlyK(Repair):
    """The repair a user writes first: random extra ones off, random missing ones on."""

    def _do(self, problem, X, **kwargs):
        X = np.asarray(X, dtype=bool).copy()
        k = problem.sel.k
        rng = np.random.default_rng(0)
        for x in X:
            on = np.flatnonzero(x)
            if len(on) > k:
                x[rng.choice(on, len(on) - k, replace=False)] = False
            elif len(on) < k:
                off = np.flatnonzero(~x)
                x[rng.choice(off, k - len(on), replace=False)] = True
        return X


def _points(F: np.ndarray) -> np.ndarray:
    return np.column_stack([-F[:, 0], F[:, 1]])  # (min −U, min gap) -> (U, gap)


def run_pymoo(p: SelectionProblem, algo, evals: int, seed: int) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    res = minimize(SelectionMOP(p, OBJ), algo, ("n_evals", evals), seed=seed)
    X = np.atleast_2d(res.X).astype(bool)
    assert (X.sum(axis=1) == p.k).all()
    return _points(np.atleast_2d(res.F)), time.perf_counter() - t0


def exact(p: SelectionProblem) -> tuple[np.ndarray | None, str]:
    if p.n <= 20:
        return exact_front(p)[list(OBJ)].to_numpy(), "exact (enumeration)"
    if p.n <= 100:
        f = sweep_eps(p, complete=True, max_seconds=600)
        if f.attrs.get("complete"):
            ok = f[f["selected"] != ""]
            return ok[list(OBJ)].to_numpy(), "exact (complete ε sweep)"
    return None, "union"


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,100,500")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--pop", type=int, default=60)
    ap.add_argument("--gens", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    evals = args.pop * args.gens
    rows = []
    for n in (int(v) for v in args.sizes.split(",")):
        k = 5 if n == 20 else n // 10
        p = SelectionProblem.from_stats(synthetic_stats(n, seed=0), k)
        runs: list[tuple[str, int, np.ndarray, float]] = []
        for seed in range(args.seeds):
            stock = NSGA2(
                pop_size=args.pop,
                sampling=BinaryRandomSampling(),
                crossover=TwoPointCrossover(),
                mutation=BitflipMutation(),
                repair=ExactlyK(),
                eliminate_duplicates=True,
            )
            runs.append(("stock pymoo (repair to K)", seed, *run_pymoo(p, stock, evals, seed)))
            ours = NSGA2(
                pop_size=args.pop,
                sampling=KSubsetSampling(),
                crossover=KSubsetCrossover(),
                mutation=SwapMutation(),
                eliminate_duplicates=RowHashDuplicates(),
            )
            runs.append(("fedsel operators", seed, *run_pymoo(p, ours, evals, seed)))
            t0 = time.perf_counter()
            front = NSGA2Solver(pop_size=args.pop, n_evals=evals, seed=seed).front(p)
            pts = np.array([[r.objectives["utility"], r.objectives["gap"]] for r in front])
            runs.append(
                ("fedsel solver (+ seeding, local search)", seed, pts, time.perf_counter() - t0)
            )
        ref_pts, ref_kind = exact(p)
        if ref_pts is None:
            ref_pts = reference_front([r[2] for r in runs], OBJ)
        ref = reference_front([], OBJ, exact=ref_pts)
        norm = Normalization.from_front(ref, OBJ)
        for method, seed, pts, secs in runs:
            rows.append(
                {
                    "N": n,
                    "K": k,
                    "method": method,
                    "seed": seed,
                    "evals": evals,
                    "hv_ratio": hypervolume_ratio(pts, ref, OBJ, norm=norm),
                    "points": len(np.unique(pts, axis=0)),
                    "seconds": secs,
                    "reference": ref_kind,
                }
            )
        print(f"N={n} done", file=sys.stderr)
    df = pd.DataFrame(rows)
    out = Path(args.out)
    write_table_atomic(df, out / "nsga2_peer.csv")
    g = df.groupby(["N", "K", "reference", "method"], sort=False)
    summ = g.agg(hv_mean=("hv_ratio", "mean"), hv_min=("hv_ratio", "min"),
                 points=("points", "mean"), seconds=("seconds", "median")).reset_index()  # fmt: skip
    lines = [
        "# NSGA-II: fedsel's operators and solver against stock pymoo",
        "",
        f"Equal budget of {evals} population evaluations (pop {args.pop} × {args.gens} "
        f"generations), {args.seeds} seeds, `synthetic_stats(N, seed=0)`, K = N/10 (5 at N = 20), "
        "(max U, min gap). hv = hypervolume ratio to the reference front (1 = the whole front).",
        "",
        "| N | K | reference | method | hv mean | hv min | distinct points | seconds (median) |",
        "|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in summ.itertuples(index=False):
        lines.append(
            f"| {r.N} | {r.K} | {r.reference} | {r.method} | {r.hv_mean:.4f} | {r.hv_min:.4f} | "
            f"{r.points:.1f} | {r.seconds:.2f} |"
        )
    lines += [
        "",
        "Command: `.venv/bin/python benchmarks/nsga2_peer.py` (one run on 2 shared cores: the "
        "seconds drift with the load, the hypervolume ratios do not).",
    ]
    write_text_atomic("\n".join(lines) + "\n", out / "nsga2_peer.md")
    print("\n".join(lines))
    return df


if __name__ == "__main__":
    main()
