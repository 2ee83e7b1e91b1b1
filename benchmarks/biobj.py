"""The bi-objective branch-and-bound (``--backend bb``) against the ε-loop routes.

Writes results/benchmarks/biobj.{csv,md}: the complete exact (U, gap) front of each instance by

* ``fedsel auto`` — ``sweep_eps(complete=True)``, the default route (one ε-MILP per point);
* ``fedsel bb`` — ``sweep_eps(complete=True, backend="bb")`` (:mod:`selection.solvers.bb`);
* ``pulp textbook`` — the ε-constraint loop that rebuilds a PuLP + CBC model per ε
  (``benchmarks/exact_peers.py``'s ``run_pulp_textbook``).

Families: the four of ``benchmarks/exact_peers.py`` and ``hetero6``, generated here from a
model of its own (not tuned on): six domains with Dirichlet(1) shares, log-normal client
sizes, a client quality, an own-domain lift growing with log size, a ring distance penalty
between domains, accuracies on 80 validation images per domain (multiples of 1.25 %: many
ties), U the domain-share-weighted mean of the rows (not their plain mean), 2 decimals.
K = N/10. A route stopped by ``--cap`` is ``capped``; fronts are compared only between two
finished routes. Single-threaded; run one at a time.
Run: ``.venv/bin/python benchmarks/biobj.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from exact_peers import FAMILIES as PEER_FAMILIES  # noqa: E402
from exact_peers import identical, run_pulp_textbook  # noqa: E402

from selection.atomic import write_table_atomic, write_text_atomic  # noqa: E402
from selection.indicators import nondominated  # noqa: E402
from selection.problem import SelectionProblem  # noqa: E402
from selection.solvers.sweeps import sweep_eps  # noqa: E402

OBJ = ("utility", "gap")


def hetero6(n: int, seed: int = 0) -> pd.DataFrame:
    """Six domains, heterogeneous shares and sizes, accuracies on 80 images (ties)."""
    rng = np.random.default_rng(10_000 + seed)
    d = 6
    share = rng.dirichlet(np.ones(d))
    dom = rng.choice(d, size=n, p=share)
    size = np.maximum(5, np.rint(rng.lognormal(3.5, 1.0, n))).astype(int)
    quality = rng.normal(0, 1, n)
    base = rng.uniform(55, 85, d)
    ring = np.abs(np.arange(d)[None, :] - dom[:, None])
    ring = np.minimum(ring, d - ring)
    acc = (
        base[None, :]
        + 4 * quality[:, None]
        + 6 * (ring == 0) * np.log10(size)[:, None]
        - 3 * ring
        + rng.normal(0, 2, (n, d))
    )
    acc = np.clip(np.round(acc / 1.25) * 1.25, 0, 100)
    U = np.round(acc @ share, 2)
    return pd.DataFrame(
        {
            "round": 0,
            "client_id": [f"h{i}" for i in range(n)],
            "domain": [f"d{j}" for j in dom],
            "n_samples": size,
            "U": U,
            "F": rng.lognormal(0, 0.5, n),
            "B": rng.uniform(0, 0.3, n),
            "cos_g": rng.uniform(-0.2, 0.9, n),
            **{f"U_d{j}": acc[:, j] for j in range(d)},
        }
    )


FAMILIES = {**PEER_FAMILIES, "hetero6": hetero6}


def run_sweep(p: SelectionProblem, cap: float, backend: str) -> dict:
    t0 = time.perf_counter()
    f = sweep_eps(p, complete=True, backend=backend, max_seconds=cap)
    secs = time.perf_counter() - t0
    ok = f[f["selected"] != ""]
    pts = nondominated(ok[list(OBJ)].to_numpy(), OBJ)
    done = bool(f.attrs.get("complete")) and bool(f.attrs.get("exact", True))
    detail = f"{len(f)} rows, backends {','.join(sorted(set(f['backend'])))}"
    if backend == "bb":
        a = f.attrs
        detail = f"{a['boxes']} boxes, {a['lps']} LPs, {a['nodes']} nodes, {a['mips']} box MILPs"
    return {"points": pts, "seconds": secs, "status": "complete" if done else "capped",
            "detail": detail}  # fmt: skip


def _ratio(num: dict, den: dict) -> str:
    r = num["seconds"] / den["seconds"]
    a, b = num["status"] == "complete", den["status"] == "complete"
    if a and b:
        return f"{r:.2f}"
    if b:
        return f"> {r:.2f}"
    if a:
        return f"< {r:.2f}"
    return "n/a"


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
                    "auto_over_bb": _ratio(auto, bb),
                    "textbook_over_bb": _ratio(loop, bb),
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
        '`sweep_eps(complete=True, backend="bb")`; `auto` = `sweep_eps(complete=True)` (the '
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
