"""Benchmark of a study round: where its time goes, and study rounds per CPU second.

Why one script past 450 lines: its two parts measure the same round against the same GEMM
peak in one run (the profile says where the time goes, the throughput what the study gains);
splitting them would split the table's one measurement.

Two parts, one run, one table each (``results/benchmarks/study_round.{md,csv}`` and
``study_throughput.csv``):

1. **Profile.** For ``proportional``, ``maxmin:2@probe``, ``eps:5@predicted`` and the fresh
   ``eps-rel:0.5`` at N = 20 (5 clients a domain, K = 5) and N = 200 (50 a domain, K = 20), on
   the study's oracle settings, one warm-up run and then ``--rounds`` measured rounds of
   :func:`~fl_oracle.experiments.loop.run_training` as the study calls it, each stage timed in
   process CPU seconds: local training, probe passes (every client's probe batch, and the
   server's per-domain validation gradients), validation evaluation (candidate models, w_t),
   test evaluation, the information model's own work (calibration, the Gaussian process), the
   solve (its wall seconds: a MILP backend may run as a process of its own, whose CPU the
   round's total includes), and the rest (tables, validation, bookkeeping). Compute stages carry their useful
   FLOPs (:func:`benchmarks.oracle.sample_flops`, counted from the samples each pass touched)
   and % of the single-thread GEMM peak measured in the same run.
2. **Throughput, before and after.** The mix of entries of the committed cost study
   (results/study-costs: 24 entries) at N = 20, and the cross-device study's entries at
   N = 200, each run for ``--mix-rounds`` rounds on one seed as ``fedsel study`` runs them
   (two worker processes), once with the code of ``--before`` (a git revision, checked out
   into a temporary worktree) and once with this checkout, alternating ``--repeats`` times.
   Rounds per CPU second and per wall second, both of the whole study process (start-up,
   data load and the oracles' construction included, as a study pays them; workers and solver
   processes included); the two codes' choices and accuracies compared run by run.

Run on an idle machine (the md records the load)::

    .venv/bin/python benchmarks/study_round.py --before 7740c01 [--after REV] [--rounds 6]
        [--mix-rounds 6]
        [--repeats 2] [--skip-profile] [--skip-throughput] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from oracle import gemm_peak, machine_facts, markdown_table, sample_flops  # noqa: E402

from selection.atomic import write_table_atomic, write_text_atomic  # noqa: E402

OUT = ROOT / "results" / "benchmarks"
PROFILE_ENTRIES = ("proportional", "maxmin:2@probe", "eps:5@predicted", "eps-rel:0.5")
SIZES = tuple(
    (int(c), int(k))
    for c, k in (s.split(":") for s in os.environ.get("STUDY_ROUND_SIZES", "5:5,50:20").split(","))
)  # (clients per domain, K)
COST_STUDY = ROOT / "results" / "study-costs" / "study.toml"
CROSS_DEVICE = ROOT / "benchmarks" / "studies" / "cross_device.toml"
STAGES = ("local", "probe", "val_eval", "test_eval", "information", "solve", "other")


# ------------------------------------------------------------------------ part 1: profile
class Counters:
    """Seconds (process CPU) and samples per stage, filled by wrapping the oracle's passes."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self.flops = dict.fromkeys(STAGES, 0.0)

    def add(self, stage: str, seconds: float, flops: float = 0.0) -> None:
        self.seconds[stage] += seconds
        self.flops[stage] += flops


def instrument(counters: Counters) -> None:
    """Wrap the oracle's passes and the information models' views to feed ``counters``."""
    from fl_oracle.sim import oracle as om
    from selection.information import information_models

    Oracle = om.Oracle

    def timed(stage, fn, flops_of):
        def wrapper(self, *a, **kw):
            t0 = time.process_time()
            out = fn(self, *a, **kw)
            counters.add(stage, time.process_time() - t0, flops_of(self, out, *a, **kw))
            return out

        return wrapper

    fl = {}

    def per(self):
        if id(self.arch) not in fl:
            fl[id(self.arch)] = sample_flops(self.arch)
        return fl[id(self.arch)]

    def probe_flops(self, out):
        return per(self)["train"] * float(len(self._probe_y))

    orig_probe = Oracle._probe_stats

    def probe_stats(self):
        if self._probe is not None:
            return self._probe
        t0 = time.process_time()
        out = orig_probe(self)
        counters.add("probe", time.process_time() - t0, probe_flops(self, out))
        return out

    Oracle._probe_stats = probe_stats

    orig_table = Oracle.probe_table

    def probe_table(self):
        need_val = self._val_grad is None
        self._probe_stats()  # its own stage
        evals = counters.seconds["val_eval"]  # w_t's accuracy inside: counted as an evaluation
        t0 = time.process_time()
        out = orig_table(self)
        inner = counters.seconds["val_eval"] - evals
        n_val = sum(len(v[1]) for v in self._sets["val"].values())
        flops = per(self)["train"] * n_val if need_val else 0.0
        counters.add("probe", time.process_time() - t0 - inner, flops)
        return out

    Oracle.probe_table = probe_table

    orig_acc = Oracle._accuracies

    def accuracies(self, W, split, logits=None):
        t0 = time.process_time()
        out = orig_acc(self, W, split, logits=logits)
        n = sum(len(v[1]) for v in self._sets[split].values())
        stage = "val_eval" if split == "val" else "test_eval"
        # _accuracies' own seconds are counted here; callers' remaining work stays in "other"
        counters.add(stage, time.process_time() - t0, per(self)["fwd"] * n * len(W))
        return out

    Oracle._accuracies = accuracies

    orig_local_acc = Oracle._local_accuracy

    def local_accuracy(self, idx, D):
        t0 = time.process_time()
        out = orig_local_acc(self, idx, D)
        n = sum(len(self._local_y[i]) for i in idx) if out is not None else 0
        counters.add("val_eval", time.process_time() - t0, per(self)["fwd"] * n)
        return out

    Oracle._local_accuracy = local_accuracy

    orig_updates = Oracle._ensure_updates

    def ensure_updates(self, idx, callback=None):
        before = dict(self.local_work())
        probes = counters.seconds["probe"]  # the initial gradient norms: a probe pass
        t0 = time.process_time()
        out = orig_updates(self, idx, callback)
        inner = counters.seconds["probe"] - probes
        work = sum(v for c, v in self.local_work().items() if c not in before)
        counters.add("local", time.process_time() - t0 - inner, per(self)["train"] * work)
        return out

    Oracle._ensure_updates = ensure_updates

    orig_norms = Oracle._probe_norms

    def probe_norms(self, idx):
        if self._probe is not None or self.config.gamma > 0:
            return orig_norms(self, idx)  # the round's pass (counted by _probe_stats)
        t0 = time.process_time()
        out = orig_norms(self, idx)
        n = sum(int((self._probe_seg == i).sum()) for i in idx)
        counters.add("probe", time.process_time() - t0, per(self)["train"] * n)
        return out

    Oracle._probe_norms = probe_norms

    for cls in information_models().values():
        if "view" in cls.__dict__:
            cls.view = timed("information", cls.__dict__["view"], lambda *a, **k: 0.0)


def profile(rounds: int, progress) -> pd.DataFrame:
    """Part 1: one row per (N, entry) with each stage's CPU seconds per round and GFLOP/s."""
    from fl_oracle.experiments.runner import OracleFactory, RunTask, run_one
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.selectors import make_selector, parse_spec

    torch.set_num_threads(1)
    counters = Counters()
    instrument(counters)
    peak, _ = gemm_peak(torch.device("cpu"))
    settings = StudySettings()
    rows = []
    for cpd, k in SIZES:
        factory = OracleFactory({**settings.oracle, "clients_per_domain": cpd})
        progress(f"N = {4 * cpd}: data")
        factory.load()
        cache: dict = {}
        for entry in PROFILE_ENTRIES:
            spec = parse_spec(entry)
            progress(f"N = {4 * cpd}: {entry} warm-up")
            run_one(factory, make_selector, RunTask(spec, 0, 2, k, records=()), cache)
            for stage in STAGES:
                counters.seconds[stage] = counters.flops[stage] = 0.0
            progress(f"N = {4 * cpd}: {entry}")
            c0, r0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
            res, _, _ = run_one(
                factory, make_selector, RunTask(spec, 0, rounds, k, records=()), cache
            )
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            # a MILP backend running as its own process (CBC) spends CPU of its own
            kids = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            total = time.process_time() - c0 + kids
            # the solve's wall seconds: its own CPU in this process, or a solver process's
            solve = float(res.history["solve_seconds"].sum())
            counters.seconds["solve"] = min(solve, total)
            measured = sum(counters.seconds[s] for s in STAGES if s != "other")
            counters.seconds["other"] = max(0.0, total - measured)
            row = {
                "N": 4 * cpd,
                "K": k,
                "entry": entry,
                "round_cpu_s": round(total / rounds, 3),
                "route": ",".join(sorted(set(res.history["route"].astype(str)) - {""})) or "-",
                "peak_gflops": round(peak, 1),
            }
            for s in STAGES:
                sec = counters.seconds[s] / rounds
                row[f"{s}_s"] = round(sec, 4)
                row[f"{s}_pct"] = round(100 * counters.seconds[s] / total, 1)
                if counters.flops[s] > 0:
                    g = counters.flops[s] / max(counters.seconds[s], 1e-9) / 1e9
                    row[f"{s}_gflop"] = round(counters.flops[s] / rounds / 1e9, 3)
                    row[f"{s}_pct_peak"] = round(100 * g / peak, 1)
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["peak"] = peak
    return df


# --------------------------------------------------------------------- part 2: throughput
RUNNER = r"""
import json, resource, sys, time, tempfile
sys.path.insert(0, sys.argv[1])
from fl_oracle.experiments.runner import OracleFactory
from fl_oracle.experiments.study.runs import run_study
from fl_oracle.experiments.study.settings import StudySettings
from selection.selectors import make_selector
cfg = json.loads(sys.argv[2])
settings = StudySettings(**cfg["settings"])
factory = OracleFactory(dict(settings.oracle))
factory.load()
if cfg.get("load_only"):
    print(json.dumps({"wall": 0.0}))
    raise SystemExit(0)
t0 = time.perf_counter()
with tempfile.TemporaryDirectory() as tmp:
    h = run_study(settings, tmp, make_oracle=factory, make_selector=make_selector,
                  workers=cfg["workers"])
wall = time.perf_counter() - t0
h.to_csv(cfg["history"], index=False)
print(json.dumps({"wall": wall}))
"""


def mix_settings(which: str, rounds: int) -> dict:
    """The study settings of a throughput cell: the cost study's 24 entries at N = 20, or the
    cross-device study's entries at N = 200 (their own K and oracle settings)."""
    import tomllib

    path = COST_STUDY if which == "N=20" else CROSS_DEVICE
    raw = tomllib.loads(path.read_text())
    return {
        "seeds": 1,
        "rounds": rounds,
        "k": raw.get("k", 5),
        "selectors": raw["selectors"],
        "reference": raw.get("reference", "proportional"),
        "oracle": raw.get("oracle", {}),
        "bootstrap": 100,
    }


def run_code(code: Path, cfg: dict) -> dict:
    """Run one throughput cell with the code in ``code``; wall and CPU (every process)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", RUNNER, str(code), json.dumps(cfg)],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0  # the whole process, as its CPU is counted
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{code}: the study failed:\n{out.stderr[-3000:]}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu}


def compare(a: pd.DataFrame, b: pd.DataFrame) -> tuple[int, int, list[str]]:
    """(identical runs, runs, entries that differ) on choices and every accuracy."""
    cols = ["selected"] + [c for c in a.columns if c.startswith("acc_")]
    same, differ = 0, []
    for entry, g in a.groupby("entry", sort=False):
        h = b[b["entry"] == entry]
        ok = len(g) == len(h) and all(
            (g[c].astype(str).to_numpy() == h[c].astype(str).to_numpy()).all() for c in cols
        )
        same += ok
        if not ok:
            differ.append(entry)
    return same, a["entry"].nunique(), differ


def throughput(
    before: str, after: str | None, mix_rounds: int, repeats: int, workers: int, progress
) -> pd.DataFrame:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": before, "after": after}
        for label, rev in trees.items():
            if rev is not None:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "add", "--detach", f"{tmp}/{label}", rev],
                    check=True,
                    capture_output=True,
                )
        old = Path(tmp) / "before"
        new = Path(tmp) / "after" if after is not None else ROOT
        try:
            for which in ("N=20", "N=200"):
                settings = mix_settings(which, mix_rounds)
                progress(f"{which}: data (generated once, cached on disk; not timed)")
                run_code(ROOT, {"settings": settings, "workers": 1, "history": "", "load_only": 1})
                hist = {}
                for rep in range(repeats):
                    for label, code in (("before", old), ("after", new)):
                        progress(f"{which}: {label} (repeat {rep + 1}/{repeats})")
                        path = Path(tmp) / f"{which}-{label}.csv"
                        cfg = {"settings": settings, "workers": workers, "history": str(path)}
                        m = run_code(code, cfg)
                        hist[label] = pd.read_csv(path, dtype={"selected": str})
                        n = len(hist[label])
                        rows.append(
                            {
                                "cell": which,
                                "code": label,
                                "repeat": rep,
                                "entries": len(settings["selectors"]),
                                "rounds": n,
                                "wall_s": round(m["wall_s"], 1),
                                "cpu_s": round(m["cpu_s"], 1),
                                "rounds_per_cpu_s": round(n / m["cpu_s"], 4),
                                "rounds_per_wall_s": round(n / m["wall_s"], 4),
                            }
                        )
                same, total, differ = compare(hist["before"], hist["after"])
                for r in rows:
                    if r["cell"] == which:
                        r["identical_runs"] = f"{same}/{total}"
                        r["differing"] = ";".join(differ)
        finally:
            for label, rev in trees.items():
                if rev is not None:
                    subprocess.run(
                        ["git", "-C", str(ROOT), "worktree", "remove", "--force", f"{tmp}/{label}"],
                        check=False,
                        capture_output=True,
                    )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- part 3: data generation
GEN_DOMAINS = ("mnist", "usps", "svhn", "syn")


def generation(n: int, clients_per_domain: int, progress) -> pd.DataFrame:
    """Generated stand-ins per second, per domain (``n`` training images of seed 0, one
    process), and the time a first use of ``clients_per_domain`` clients a domain takes at
    that rate: its training shards, local hold-outs and validation images (the test split's
    generated size aside), as :class:`fl_oracle.sim.config.OracleConfig` sizes them."""
    from fl_oracle.sim.config import OracleConfig
    from fl_oracle.sim.data.generate import generate

    cfg = OracleConfig(clients_per_domain=clients_per_domain)
    sizes = cfg.samples_per_client or {}
    rows = []
    for d in GEN_DOMAINS:
        progress(f"generating {n:,} {d} images")
        t0 = time.perf_counter()
        generate(d, "train", n, 0)
        sec = time.perf_counter() - t0
        need = clients_per_domain * (int(sizes.get(d, 0)) + cfg.local_holdout) + cfg.val_per_domain
        rows.append(
            {
                "domain": d,
                "images": n,
                "seconds": round(sec, 2),
                "images_per_s": round(n / sec, 1),
                "clients_per_domain": clients_per_domain,
                "images_needed": need,
                "first_use_min": round(need / (n / sec) / 60, 1),
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ report
def render(profile_df, thr, command, load0, load1, peak) -> str:
    lines = [
        "# A study round: where the time goes, and study rounds per CPU second",
        "",
        f"`{command}`",
        "",
        f"Machine: {machine_facts(torch.device('cpu'))}. 1-minute load {load0:.2f} before, "
        f"{load1:.2f} after.",
        "",
    ]
    if profile_df is not None:
        cols = ["N", "K", "entry", "route", "round_cpu_s"] + [f"{s}_pct" for s in STAGES]
        cols = [c for c in cols if c in profile_df.columns]
        lines += [
            "## Profile (this code, the study's default records: none)",
            "",
            "CPU seconds per round and each stage's share (%), one torch thread, single-thread "
            f"GEMM peak {peak:.1f} GFLOP/s:",
            "",
            markdown_table(profile_df[cols]),
            "",
            "Compute stages: GFLOP per round and % of the peak.",
            "",
        ]
        fcols = ["N", "entry"] + [
            c for c in profile_df.columns if c.endswith("_gflop") or c.endswith("_pct_peak")
        ]
        lines += [markdown_table(profile_df[fcols].fillna("")), ""]
    if thr is not None and len(thr):
        g = thr.groupby(["cell", "code"], sort=False)[["rounds", "cpu_s", "wall_s"]].sum()
        g["rounds_per_cpu_s"] = g["rounds"] / g["cpu_s"]
        g["rounds_per_wall_s"] = g["rounds"] / g["wall_s"]
        summary = []
        for cell in thr["cell"].unique():
            b, a = g.loc[(cell, "before")], g.loc[(cell, "after")]
            first = thr[thr["cell"] == cell].iloc[0]
            summary.append(
                {
                    "cell": cell,
                    "entries": int(first["entries"]),
                    "before rounds/CPU-s": round(b["rounds_per_cpu_s"], 3),
                    "after rounds/CPU-s": round(a["rounds_per_cpu_s"], 3),
                    "ratio (CPU)": round(a["rounds_per_cpu_s"] / b["rounds_per_cpu_s"], 2),
                    "ratio (wall)": round(a["rounds_per_wall_s"] / b["rounds_per_wall_s"], 2),
                    "identical runs": first["identical_runs"],
                    "differing": first["differing"] or "-",
                }
            )
        s = pd.DataFrame(summary)
        lines += [
            "## Throughput, before and after (one run, alternating)",
            "",
            markdown_table(s),
            "",
            "Every repeat:",
            "",
            markdown_table(thr.drop(columns=["identical_runs", "differing"])),
            "",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="7740c01", help="git revision of the code before")
    ap.add_argument(
        "--after", default=None, help="git revision of the code after (default: this checkout)"
    )
    ap.add_argument("--rounds", type=int, default=6, help="profiled rounds per entry")
    ap.add_argument("--mix-rounds", type=int, default=6, help="rounds per throughput run")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-profile", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument(
        "--generation",
        type=int,
        default=0,
        metavar="N",
        help="only measure data generation: N images a domain (writes data_generation.*)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    command = shlex.join([".venv/bin/python", "benchmarks/study_round.py", *sys.argv[1:]])
    load0 = os.getloadavg()[0]
    cols = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
    )
    prof = thr = None
    if args.generation:
        with Progress(*cols) as bar:
            task = bar.add_task("generation", total=None)
            gen = generation(args.generation, 250, lambda w: bar.update(task, description=w))
        write_table_atomic(gen, args.out / "data_generation.csv")
        total = gen["first_use_min"].sum()
        md = "\n".join(
            [
                "# Generated stand-ins: images per second, and a first use of 1,000 clients",
                "",
                f"`{command}`",
                "",
                f"Machine: {machine_facts(torch.device('cpu'))}. 1-minute load {load0:.2f}.",
                "",
                markdown_table(gen),
                "",
                f"A first `fedsel train --clients-per-domain 250 --data generated` generates "
                f"about {total:.0f} minutes of images in one process at these rates (the "
                "cache then serves them); the progress bar says the time left from its first "
                "chunk on.",
                "",
            ]
        )
        write_text_atomic(md, args.out / "data_generation.md")
        print(md)
        return
    with Progress(*cols) as bar:
        task = bar.add_task("study round", total=None)

        def progress(what: str) -> None:
            bar.update(task, description=what)

        if not args.skip_profile:
            prof = profile(args.rounds, progress)
            write_table_atomic(prof, args.out / "study_round.csv")
        if not args.skip_throughput:
            thr = throughput(
                args.before, args.after, args.mix_rounds, args.repeats, args.workers, progress
            )
            write_table_atomic(thr, args.out / "study_throughput.csv")
    # a part skipped is read from its committed table (one md for both)
    if prof is None and (args.out / "study_round.csv").is_file():
        prof = pd.read_csv(args.out / "study_round.csv")
    if thr is None and (args.out / "study_throughput.csv").is_file():
        thr = pd.read_csv(args.out / "study_throughput.csv", keep_default_na=False)
    peak = (
        float(prof["peak_gflops"].iloc[0])
        if prof is not None and "peak_gflops" in prof
        else float("nan")
    )
    md = render(prof, thr, command, load0, os.getloadavg()[0], peak)
    write_text_atomic(md, args.out / "study_round.md")
    print(md)


if __name__ == "__main__":
    main()
