"""Benchmark of the FL oracle: seconds per round of full client statistics (20 clients).

For each model and thread count, on the default Digits-4 federation (generated stand-ins):
one warm-up round, then ``--rounds`` measured rounds of ``round_stats()`` (local training of
all 20 clients, Fisher/probe pass, evaluation of the 20 candidate models on the 4 x 500
validation images) followed by ``step(all)`` (probe pass at w_{t+1}, test accuracy). Also a
"straightforward" round in the same process (clients trained one after another, candidates
evaluated one by one, Fisher by ``torch.func.vmap`` per client) and a dense float32 matmul
(1024^2) that calibrates what the cores deliver right now: the machine is shared, so compare
the ratios of one run, not absolute seconds across runs.

Writes ``results/benchmarks/oracle.csv`` and ``oracle.md``.

    .venv/bin/python benchmarks/oracle.py [--rounds 3] [--models cnn,cnn-small] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import pandas as pd
import torch
from rich.progress import Progress

from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.local import SampleStream, plan_steps, train_group
from fl_oracle.sim.oracle import Oracle
from fl_oracle.sim.stats import correct_stacked, probe_stats_vmap
from selection.atomic import write_table_atomic, write_text_atomic

OUT = Path(__file__).resolve().parents[1] / "results" / "benchmarks"


def matmul_gflops(n: int = 1024, reps: int = 10) -> float:
    """Achieved GFLOP/s of a dense float32 ``torch.mm`` of two n x n matrices."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    t = time.perf_counter()
    for _ in range(reps):
        torch.mm(a, b)
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def round_flops(o: Oracle) -> dict[str, float]:
    """Convolution/matmul FLOPs of one round's phases (backward counted as 2x forward)."""
    f = o.arch.flops
    cfg, fed = o.config, o._fed
    train = 0
    for i, cid in enumerate(fed.client_ids):
        b, steps = plan_steps(int(fed.n_samples[i]), cfg.batch_size, cfg.budget(cid))
        train += 3 * f * (b * steps + len(fed.probe[i]))  # SGD steps + final probe gradient
    n_val = sum(len(v[1]) for v in fed.val.values())
    return {
        "local": float(train),
        "fisher": float(3 * f * len(o._probe_y)),
        "eval": float(f * n_val * len(fed.client_ids)),
        "samples": float(train / (3 * f)),
    }


def naive_round(o: Oracle) -> float:
    """Seconds of one round measured the straightforward way (one client after another)."""
    fed, cfg = o._fed, o.config
    t0 = time.perf_counter()
    for i, cid in enumerate(fed.client_ids):
        p = fed.probe[i]
        seg = torch.zeros(len(p), dtype=torch.int64)
        ps = probe_stats_vmap(o.arch, o._w, fed.xs[i][p], fed.ys[i][p], seg, 1)
        n = int(fed.n_samples[i])
        b, steps = plan_steps(n, cfg.batch_size, cfg.budget(cid))
        res = train_group(
            o.arch,
            o._w,
            [fed.xs[i]],
            [fed.ys[i]],
            [SampleStream(n, o._stream_seed(i), o.device)],
            batch=b,
            steps=steps,
            lr=cfg.lr,
            mu=cfg.mu,
            gamma=cfg.gamma,
            probe_x=fed.xs[i][p][None],
            probe_y=fed.ys[i][p][None],
            g0_norm=ps.grad.norm(dim=1),
            check_every=max(1, steps),
        )
        W = (o._w + res.delta[0]).unsqueeze(0)
        for d in o.domains:
            correct_stacked(o.arch, W, *fed.val[d])
    return time.perf_counter() - t0


def bench(model: str, threads: int, rounds: int, data: dict | None, bar, task) -> tuple[dict, dict]:
    torch.set_num_threads(threads)
    o = Oracle(OracleConfig(data_mode="generated", model=model, device="cpu"), data=data)
    mm = matmul_gflops()
    o.round_stats()
    o.step(list(o.clients["client_id"]))
    bar.advance(task)
    rows = []
    for _ in range(rounds):
        o.timings = dict.fromkeys(o.timings, 0.0)
        t = time.perf_counter()
        o.round_stats()
        t_stats = time.perf_counter() - t
        stats_phases = dict(o.timings)
        t = time.perf_counter()
        o.step(list(o.clients["client_id"]))
        t_step = time.perf_counter() - t
        # the probe pass of w_{t+1} runs inside step() but belongs to the next round's stats
        rows.append(
            {
                "stats": t_stats,
                "step": t_step,
                **{f"{k}_s": v for k, v in o.timings.items()},
                "fisher_in_stats_s": stats_phases["fisher"],
            }
        )
        bar.advance(task)
    mm = (mm + matmul_gflops()) / 2
    naive = naive_round(o)
    bar.advance(task)
    r = pd.DataFrame(rows).mean()
    fl = round_flops(o)
    fisher = r["fisher_s"]  # one probe pass per round (in step, for the next round)
    local, evals = r["local_s"], r["eval_s"]
    full = local + fisher + evals  # the full statistics of one round
    gflops = (fl["local"] + fl["fisher"] + fl["eval"]) / full / 1e9
    row = {
        "model": model,
        "params": o.arch.size,
        "mflop_per_sample_fwd": o.arch.flops / 1e6,
        "threads": threads,
        "round_stats_s": round(full, 3),
        "local_s": round(local, 3),
        "fisher_s": round(fisher, 3),
        "eval_s": round(evals, 3),
        "test_eval_s": round(r["test_s"], 3),
        "round_with_step_s": round(r["stats"] + r["step"], 3),
        "train_samples_per_s": round(fl["samples"] / local, 1),
        "gflops_local": round(fl["local"] / local / 1e9, 2),
        "gflops_eval": round(fl["eval"] / evals / 1e9, 2),
        "gflops_round": round(gflops, 2),
        "matmul_gflops": round(mm, 2),
        "pct_of_matmul": round(100 * gflops / mm, 1),
        "naive_round_s": round(naive, 3),
        "speedup_vs_naive": round(naive / full, 2),
    }
    return row, o.test_accuracy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="cnn,cnn-small")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    models = args.models.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    from fl_oracle.sim.oracle import load_federation_data

    data = load_federation_data(OracleConfig(data_mode="generated"), progress=True)
    rows = []
    load0 = os.getloadavg()[0]
    with Progress() as bar:
        task = bar.add_task(
            "oracle benchmark", total=len(models) * len(threads) * (args.rounds + 2)
        )
        for m in models:
            for t in threads:
                row, acc = bench(m, t, args.rounds, data, bar, task)
                row["acc_avg_after"] = round(acc["acc_avg"], 1)
                rows.append(row)
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    write_table_atomic(df, args.out / "oracle.csv")
    command = (
        f"`.venv/bin/python benchmarks/oracle.py --rounds {args.rounds} --models "
        f"{args.models} --threads {args.threads}`"
    )
    load = f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f} during the run"
    md = [render_md(df, command, load, args.rounds)]
    write_text_atomic("\n".join(md), args.out / "oracle.md")
    print(df.to_string(index=False))


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table of a DataFrame (no tabulate dependency)."""
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def render_md(df: pd.DataFrame, command: str, load: str, rounds: int) -> str:
    """The benchmark's Markdown report: set-up, table, and where the time goes."""
    best = df.loc[df["round_stats_s"].idxmin()]
    cnn1 = df[(df["model"] == "cnn")].sort_values("round_stats_s").iloc[0]
    parts = [
        "# Oracle benchmark: one round of full client statistics (20 clients)",
        "",
        f"{command}; torch {torch.__version__}, {platform.machine()}, {os.cpu_count()} logical "
        f"CPUs shared with other jobs, {load}. Read the ratios within one run, not absolute "
        "seconds across runs.",
        "",
        "Default federation on generated stand-ins: 5 clients per domain with 600/72/732/100 "
        "samples, 1 local epoch at batch 32 (49 grouped SGD steps of 5 clients), 64-sample probe "
        "sets, 4 x 500 validation images. `round_stats_s` = local training + Fisher/probe pass "
        f"+ evaluation of the 20 candidate models (mean of {rounds} rounds after a warm-up); "
        "`round_with_step_s` adds committing the round (test accuracy on 4 x 1000 images). "
        "`naive_round_s`: the straightforward way in the same process (clients one after "
        "another, torch.func.vmap Fisher per client, candidates evaluated one by one). "
        "`pct_of_matmul`: achieved conv/matmul GFLOP/s of the round (backward = 2 x forward) "
        "over a 1024^2 float32 `torch.mm` measured in the same process at the same thread count. "
        f"`acc_avg_after`: mean test accuracy (%) over the domains after the {rounds + 1} rounds.",
        "",
        markdown_table(df),
        "",
        f"Fastest: `{best['model']}` with {best['threads']} thread(s), {best['round_stats_s']} s "
        f"per round of statistics. For the default `cnn` ({cnn1['threads']} thread(s)): local "
        f"training {cnn1['local_s']} s ({cnn1['train_samples_per_s']} samples/s), Fisher/probe "
        f"{cnn1['fisher_s']} s, candidate evaluation {cnn1['eval_s']} s, at "
        f"{cnn1['pct_of_matmul']}% of the matmul rate; {cnn1['speedup_vs_naive']}x the "
        "straightforward round. With other jobs on the two cores, one torch thread beats two "
        "(OpenMP threads wait on each other); on an idle machine two threads should win.",
        "",
    ]
    return "\n".join(parts)


if __name__ == "__main__":
    main()
