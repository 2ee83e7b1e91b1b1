"""Memory and round time of the federation against N: writes results/benchmarks/federation_scale.{csv,md}.

Each row is one ``fedsel train`` process (generated Digits-4 stand-ins at the fixed sizes
600 / 72 / 732 / 100, ``--clients-per-domain`` N/4, one torch thread, seed 0, ``--rounds``
rounds), measured from outside: ``peak_rss_mb`` is the process's peak resident memory
(``wait4``'s ``ru_maxrss``), ``build_s`` the wall time before the first round (loading the
domains one at a time and storing the clients' pixels, :mod:`fl_oracle.sim.store`),
``round_s`` the mean ``round_seconds`` of the history, ``solve_s`` its mean ``solve_seconds``
and ``route`` the backends ``auto`` chose (the history's ``route``).

Selectors: ``proportional`` (reads nothing), ``maxmin:2@probe`` (max-min with the average
floor on the affordable ``probe`` statistics: every client's probe pass, K trainings) at every
N, and ``maxmin:2`` on ``fresh`` statistics (every client trains every round: the simulator's
upper bound) at the N of ``--fresh-sizes``. (``eps:5`` is not in the curve: where ε = 5 is
infeasible its fallback looks for the smallest gap, whose MILPs are the hard tail of the ε
family.) The simulator computes the probe pass of every client each round for its own ground
truth (``global_loss``) whatever the selector reads, so a ``proportional`` round here
includes it.

Run: ``.venv/bin/python benchmarks/federation_scale.py`` (473 s on 2 cores in
results/benchmarks/federation_scale.md; the generated data are cached after the first run).
The load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selection.atomic import write_table_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "results" / "benchmarks"
PAIRS = {20: 5, 100: 10, 200: 20, 500: 25, 1000: 50}


def run_one(n: int, k: int, selector: str, rounds: int, work: Path) -> dict:
    out = work / f"n{n}-{selector.replace(':', '_').replace('@', '_')}"
    cmd = [
        str(ROOT / ".venv" / "bin" / "fedsel"),
        "train",
        "--selector", selector,
        "--k", str(k),
        "--rounds", str(rounds),
        "--clients-per-domain", str(n // 4),
        "--data", "generated",
        "--threads", "1",
        "--seed", "0",
        "--out", str(out),
        "--overwrite",
    ]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"N={n} {selector}: exit {code}: {err.strip().splitlines()[-1:]}")
    h = pd.read_csv(out / "history.csv", keep_default_na=False)
    rounds_s = h["round_seconds"].astype(float)
    routes = sorted({r for r in h["route"].astype(str) if r})
    return {
        "N": n,
        "K": k,
        "selector": selector,
        "rounds": rounds,
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "wall_s": round(wall, 2),
        "build_s": round(wall - rounds_s.sum(), 2),
        "round_s": round(rounds_s.mean(), 3),
        "solve_s": round(h["solve_seconds"].astype(float).mean(), 5),
        "solve_share": round(h["solve_seconds"].astype(float).mean() / rounds_s.mean(), 5),
        "route": ",".join(routes) or "-",
        "train_samples": int(h["cost_train_samples"].astype(float).mean()),
        "probe_samples": int(h["cost_probe_samples"].astype(float).mean()),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,100,200,500,1000")
    ap.add_argument("--fresh-sizes", default="20,100")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    fresh = {int(s) for s in args.fresh_sizes.split(",") if s}
    load0 = os.getloadavg()
    t_all = time.perf_counter()
    rows = []
    from rich.progress import Progress

    jobs = [(n, sel) for n in sizes for sel in ("proportional", "maxmin:2@probe")]
    jobs += [(n, "maxmin:2") for n in sizes if n in fresh]
    with tempfile.TemporaryDirectory() as tmp, Progress(transient=True) as bar:
        task = bar.add_task("federation scale", total=len(jobs))
        for n, sel in jobs:
            bar.update(task, description=f"N={n} {sel}")
            rows.append(run_one(n, PAIRS.get(n, max(1, n // 20)), sel, args.rounds, Path(tmp)))
            bar.advance(task)
    load1 = os.getloadavg()
    df = pd.DataFrame(rows).sort_values(["N", "selector"], kind="stable")
    prop = df[df.selector == "proportional"].set_index("N")["round_s"]
    df["round_vs_proportional"] = [
        round(r / prop[n], 3) if n in prop.index else float("nan")
        for n, r in zip(df.N, df.round_s, strict=True)
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(df, args.out / "federation_scale.csv")
    cmd = ".venv/bin/python benchmarks/federation_scale.py"
    extra = list(argv if argv is not None else sys.argv[1:])
    if extra:
        cmd += " " + " ".join(extra)
    lines = [
        "# Federation scale: memory and round time against N",
        "",
        f"Command: `{cmd}`  ",
        f"Machine: {os.cpu_count()} CPU cores ({platform.machine()}, {platform.system()}), "
        f"Python {platform.python_version()}; one torch thread per run, runs one after "
        "another.  ",
        f"Load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in load0)}; "
        f"after: {', '.join(f'{v:.2f}' for v in load1)}. Whole run {time.perf_counter() - t_all:.0f} s.",
        "",
        "Generated Digits-4 stand-ins at the fixed sizes (600 / 72 / 732 / 100 samples a "
        "client), N/4 clients a domain, K as listed. `peak_rss_mb`: the `fedsel train` "
        "process's peak resident memory; `build_s`: wall time before the first round "
        "(domains loaded one at a time, the clients' uint8 pixels stored in memory up to "
        "256 MiB and in a temporary file beyond); `round_s`: mean wall time of a round "
        "(the simulator's probe pass of every client, which gives its `global_loss`, is in "
        "every round); `solve_s` and `solve_share`: the selector's solve and its share of the "
        "round; `route`: what `auto` chose; `train_samples`, `probe_samples`: the "
        "deployment's cost per round (sample-gradient evaluations); `round_vs_proportional`: "
        "the round against `proportional`'s at the same N.",
        "",
        _markdown(df),
        "",
    ]
    big = df[df.N == df.N.max()]
    if len(big):
        lines.append(
            f"At N = {int(big.N.iloc[0]):,}: peak memory "
            + ", ".join(
                f"`{s}` {m:,.0f} MB" for s, m in zip(big.selector, big.peak_rss_mb, strict=True)
            )
            + "; a `maxmin:2@probe` round takes "
            + f"{float(big[big.selector == 'maxmin:2@probe'].round_vs_proportional.iloc[0]):.2f}x "
            "a `proportional` round, its solve "
            + f"{100 * float(big[big.selector == 'maxmin:2@probe'].solve_share.iloc[0]):.2f} % of the round."
        )
    write_text_atomic("\n".join(lines) + "\n", args.out / "federation_scale.md")
    print("\n".join(lines))


def _markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        out.append(
            "| " + " | ".join(f"`{r[c]}`" if c == "selector" else str(r[c]) for c in cols) + " |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
