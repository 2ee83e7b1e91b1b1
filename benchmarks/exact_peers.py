"""fedsel's complete exact (U, gap) front against two exact ε-constraint peers.

Writes results/benchmarks/exact_peers.{csv,md}. The complete bi-objective front (max U(S),
min gap(S), |S| = K) of the same instances by three routes:

* ``fedsel`` — :func:`selection.solvers.sweeps.sweep_eps` with ``complete=True`` and the default
  ``auto`` backend (what ``fedsel sweep --method eps --complete`` runs);
* ``pulp textbook`` — what a user writes first: the ε-constraint loop in PuLP + CBC that
  rebuilds the model for every ε (max U s.t. gap ≤ ε, Σx = K; next ε = the gap found − 1e-5;
  until infeasible), then a non-dominance filter over the points found;
* ``pyaugmecon`` — pyaugmecon 1.0.8 (AUGMECON2 bypass + AUGMECON-R flag array) on a Pyomo
  model, solver CBC (PuLP's bundled binary, through Pyomo's LP-file interface), run by ``benchmarks/_pyaugmecon_runner.py`` under
  ``.venv-peers/bin/python`` (``make peers-env``; its pins clash with the project's).
  (``--augmecon-solver highs`` drives appsi HiGHS instead; here it hangs in pyaugmecon's
  forked worker process after the payoff table was solved with HiGHS in the parent.)

The peers' model: binary x_i, Σx = K, U(S) = (1/K) Σ U_i x_i, and auxiliary hi, lo with
lo ≤ (1/K) Σ U_id x_i ≤ hi for every domain d, gap = hi − lo. Every instance's utilities are
rounded to 2 decimals, so 100·K·U(S) and 100·K·gap(S) are integers: pyaugmecon gets the
integer-scaled model and a grid of step 1 over the gap range (one point per attainable integer
value), which is what makes its ε grid exact. Families:

* ``synthetic`` — ``synthetic_stats(N, seed=0)`` with its U and U_<domain> columns rounded to 2
  decimals;
* ``near-tied`` — clients spread evenly over 4 domains, base 50 % on every domain; each client
  lifts its own domain by ~30 points and hurts the next by ~10, per-domain noise N(0, 3²),
  values rounded to 2 decimals (many nearly equal selections);
* ``cross-penalty`` — :func:`selection.synthetic.cross_penalty_stats`: unequal domain shares,
  heavy-tailed client sizes, strong penalties on unrelated domains, U pooled with the Digits-4
  sample weights (so U is not the mean of the domain rows), 2 decimals;
* ``oracle`` — the last round of a real ``fedsel oracle`` run with N clients
  (``benchmarks/_families.py``; cached under ``runs/bench-oracle``), U rounded to 2 decimals.

Each route has a per-instance cap (``--cap`` seconds); a capped run is reported as such.
Fronts are "identical" when they hold the same (U, gap) points within 1e-6.
Run: ``.venv/bin/python benchmarks/exact_peers.py`` (after ``make peers-env``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pulp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selection.atomic import write_table_atomic, write_text_atomic  # noqa: E402
from selection.indicators import nondominated  # noqa: E402
from selection.problem import SelectionProblem  # noqa: E402
from selection.schema import DEFAULT_DOMAINS  # noqa: E402
from selection.solvers.sweeps import sweep_eps  # noqa: E402
from selection.synthetic import cross_penalty_stats, near_tied_stats, synthetic_stats  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _families import oracle_stats  # noqa: E402

OBJ = ("utility", "gap")
PEERS_PY = ROOT / ".venv-peers" / "bin" / "python"
RUNNER = Path(__file__).resolve().parent / "_pyaugmecon_runner.py"
TOL = 1e-6


def _round_utilities(table: pd.DataFrame) -> pd.DataFrame:
    cols = ["U"] + [c for c in table.columns if c.startswith("U_") and c[2:] in DEFAULT_DOMAINS]
    out = table.copy()
    out[cols] = out[cols].round(2)
    return out


def synthetic_rounded(n: int) -> pd.DataFrame:
    return _round_utilities(synthetic_stats(n, seed=0))


def near_tied(n: int, seed: int = 0) -> pd.DataFrame:
    """:func:`selection.synthetic.near_tied_stats`: own domain +30, next −10, noise, 2 decimals."""
    return near_tied_stats(n, seed=seed)


def cross_penalty(n: int, seed: int = 0) -> pd.DataFrame:
    """:func:`selection.synthetic.cross_penalty_stats`: heavy-tailed sizes, cross-domain
    penalties, U pooled with Digits-4 sample weights (not the mean of the domain rows)."""
    return cross_penalty_stats(n, seed=seed)


def oracle(n: int) -> pd.DataFrame:
    """Round-stats of a real oracle run (``benchmarks/_families.py``), U and U_<domain> rounded
    to 2 decimals (pyaugmecon's grid needs them; U_d are multiples of 0.5 already, U of 0.125)."""
    return _round_utilities(oracle_stats(n))


FAMILIES = {
    "synthetic": synthetic_rounded,
    "near-tied": near_tied,
    "cross-penalty": cross_penalty,
    "oracle": oracle,
}


def _sorted(points) -> np.ndarray:
    P = np.asarray(points, dtype=float).reshape(-1, 2)
    return P[np.lexsort((P[:, 1], -P[:, 0]))]


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all(np.abs(_sorted(a) - _sorted(b)) <= TOL))


def run_fedsel(p: SelectionProblem, cap: float) -> dict:
    t0 = time.perf_counter()
    f = sweep_eps(p, complete=True, max_seconds=cap)
    secs = time.perf_counter() - t0
    ok = f[f["selected"] != ""]
    pts = nondominated(ok[list(OBJ)].to_numpy(), OBJ)
    done = bool(f.attrs.get("complete"))
    return {
        "points": pts,
        "seconds": secs,
        "status": "complete" if done else "capped",
        "detail": f"{len(f)} sweep points, backends {','.join(sorted(set(f['backend'])))}",
    }


def run_pulp_textbook(p: SelectionProblem, cap: float, delta: float = 1e-5) -> dict:
    """The ε-constraint loop a user writes first: a fresh PuLP model per ε, CBC."""
    n, d, k = p.n, p.d, p.k
    t0 = time.perf_counter()
    eps = np.inf
    found = []
    solves = 0
    status = "complete"
    while True:
        left = cap - (time.perf_counter() - t0)
        if left <= 0:
            status = "capped"
            break
        prob = pulp.LpProblem("selection", pulp.LpMaximize)
        x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(n)]
        hi = pulp.LpVariable("hi")
        lo = pulp.LpVariable("lo")
        prob += pulp.lpSum(float(p.U[i]) / k * x[i] for i in range(n))
        prob += pulp.lpSum(x) == k
        for j in range(d):
            ud = pulp.lpSum(float(p.Ud[i, j]) / k * x[i] for i in range(n))
            prob += ud <= hi
            prob += ud >= lo
        if np.isfinite(eps):
            prob += hi - lo <= eps
        prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=max(1, int(left))))
        solves += 1
        # PuLP says "Optimal" when CBC stops on its time limit with a solution: sol_status
        # tells (1 proven optimal, 2 stopped with a solution, 0 nothing found, -1 infeasible)
        if prob.sol_status == pulp.LpSolutionInfeasible or prob.status == pulp.LpStatusInfeasible:
            break  # below the smallest gap: the front is complete
        if prob.sol_status != pulp.LpSolutionOptimal or time.perf_counter() - t0 > cap:
            status = "capped"
            break
        sel = np.array([(v.value() or 0.0) > 0.5 for v in x])
        u = float(p.U[sel].mean())
        g = float(np.ptp(p.Ud[sel].mean(axis=0)))
        found.append((u, g))
        if g <= 0:
            break
        eps = g - delta
    secs = time.perf_counter() - t0
    pts = nondominated(np.array(found).reshape(-1, 2), OBJ) if found else np.empty((0, 2))
    return {"points": pts, "seconds": secs, "status": status, "detail": f"{solves} CBC solves"}


def run_pyaugmecon(p: SelectionProblem, cap: float, solver: str, tmp: Path) -> dict:
    V = np.rint(100 * p.U).astype(np.int64)
    W = np.rint(100 * p.Ud).astype(np.int64)
    assert np.allclose(V / 100, p.U) and np.allclose(W / 100, p.Ud), "utilities not 2-decimal"
    inst, out = tmp / "instance.npz", tmp / "front.json"
    np.savez(inst, V=V, W=W, k=np.int64(p.k))
    out.unlink(missing_ok=True)
    cmd = [str(PEERS_PY), str(RUNNER), str(inst), str(out), "--solver", solver]
    if solver == "cbc":
        cmd += ["--cbc-dir", str(Path(pulp.PULP_CBC_CMD().path).parent)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=cap + 30)  # + interpreter and Pyomo start-up
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and its worker process
        proc.communicate()
        return {"points": np.empty((0, 2)), "seconds": time.perf_counter() - t0,
                "status": "capped", "detail": f"killed after {cap:.0f} s"}  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not out.exists():
        return {"points": np.empty((0, 2)), "seconds": wall, "status": "error",
                "detail": err.strip().splitlines()[-1] if err.strip() else "no output"}  # fmt: skip
    res = json.loads(out.read_text())
    secs = res["seconds"]
    return {
        "points": np.array(res["points"], dtype=float).reshape(-1, 2),
        "seconds": secs,
        "status": "complete" if secs <= cap else "capped",
        "detail": (
            f"grid {res['grid_points']} points, {res['models_solved']} models solved, "
            f"solver {solver}; subprocess wall {wall:.1f} s"
        ),
    }


def _yes(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else ("yes" if v else "no")


def _ratio(r) -> str:
    """Peer seconds / fedsel seconds; a capped side makes it a bound (or unknown)."""
    peer_capped = r.status != "complete"
    fedsel_capped = r.fedsel_status != "complete"
    if peer_capped and fedsel_capped:
        return "n/a"
    if peer_capped:
        return f"> {r.ratio_vs_fedsel:.1f}"
    if fedsel_capped:
        return f"< {r.ratio_vs_fedsel:.1f}"
    return f"{r.ratio_vs_fedsel:.1f}"


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,50,100")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--cap", type=float, default=300.0, help="seconds per instance and route")
    ap.add_argument("--augmecon-solver", choices=["highs", "cbc"], default="cbc")
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    if not PEERS_PY.exists():
        sys.exit(f"{PEERS_PY} is missing: run `make peers-env` first")
    command = "`.venv/bin/python benchmarks/exact_peers.py" + (
        f" {' '.join(argv if argv is not None else sys.argv[1:])}`".replace(" `", "`")
    )
    rows = []
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="exact-peers-") as td:
        for fam in args.families.split(","):
            for n in (int(v) for v in args.sizes.split(",")):
                k = max(1, n // 10)
                p = SelectionProblem.from_stats(FAMILIES[fam](n), k)
                runs = {
                    "fedsel (sweep_eps complete, auto)": run_fedsel(p, args.cap),
                    "pulp textbook (CBC, rebuild per ε)": run_pulp_textbook(p, args.cap),
                    f"pyaugmecon 1.0.8 ({args.augmecon_solver})": run_pyaugmecon(
                        p, args.cap, args.augmecon_solver, Path(td)
                    ),
                }
                ref = runs["fedsel (sweep_eps complete, auto)"]
                for method, r in runs.items():
                    rows.append(
                        {
                            "family": fam,
                            "N": n,
                            "K": k,
                            "method": method,
                            "points": len(r["points"]),
                            # only two finished runs' fronts can be compared
                            "identical_to_fedsel": (
                                identical(r["points"], ref["points"])
                                if r["status"] == ref["status"] == "complete"
                                else None
                            ),
                            "status": r["status"],
                            "seconds": r["seconds"],
                            "ratio_vs_fedsel": r["seconds"] / ref["seconds"],
                            "fedsel_status": ref["status"],
                            "detail": r["detail"],
                        }
                    )
                    print(f"{fam} N={n}: {method}: {len(r['points'])} points, "
                          f"{r['seconds']:.2f} s, {r['status']}", file=sys.stderr)  # fmt: skip
    df = pd.DataFrame(rows)
    out = Path(args.out)
    write_table_atomic(df, out / "exact_peers.csv")
    lines = [
        "# Exact fronts against exact peers",
        "",
        f"Command: {command} (after `make peers-env`); whole run "
        f"{time.perf_counter() - t_all:.0f} s, one run on 2 cores shared with other jobs: the "
        "seconds drift with the load, the fronts do not.",
        "",
        "Complete (max U, min gap) front, |S| = K = N/10, utilities rounded to 2 decimals. "
        "ratio = the route's seconds / fedsel's seconds on the same instance (> 1: fedsel "
        f"faster). Cap {args.cap:.0f} s per instance and route; `capped` = stopped by it. "
        "identical = the same (U, gap) points as fedsel's front within 1e-6.",
        "",
        "| family | N | K | method | points | identical | status | seconds | ratio | detail |",
        "|---|---:|---:|---|---:|---|---|---:|---:|---|",
    ]
    for r in df.itertuples(index=False):
        lines.append(
            f"| {r.family} | {r.N} | {r.K} | {r.method} | {r.points} | "
            f"{_yes(r.identical_to_fedsel)} | {r.status} | {r.seconds:.2f} | "
            f"{_ratio(r)} | {r.detail} |"
        )
    peers = df[~df["method"].str.startswith("fedsel")]
    fams = ", ".join(
        f"{fam}: {g['ratio_vs_fedsel'].min():.1f}×"
        for fam, g in peers.groupby("family", sort=False)
    )
    compared = peers[peers["identical_to_fedsel"].notna()]
    n_same = int(compared["identical_to_fedsel"].astype(bool).sum())
    lines += [
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| identical fronts (every peer run that finished) | "
        f"{n_same} of {len(compared)} comparable peer runs identical ({len(peers) - len(compared)} "
        "where a route was capped) | "
        f"{'yes' if n_same == len(compared) else 'no'} |",
        f"| fedsel ≥ 10× faster than either peer on every family | smallest ratio per family: "
        f"{fams} | {'yes' if (peers['ratio_vs_fedsel'] >= 10).all() else 'no'} |",
    ]
    write_text_atomic("\n".join(lines) + "\n", out / "exact_peers.md")
    print("\n".join(lines))
    return df


if __name__ == "__main__":
    main()
