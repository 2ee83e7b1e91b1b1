"""Scale curves of the exact route; writes results/benchmarks/scale.{csv,md,png}.

Why one script past 450 lines: the two curves share the instance families, the caps and
the table and figure they are written to; one run makes the committed table.

Two curves, K = N/10 throughout (at least 1), D = 4:

* ``front`` — the complete exact (U, gap) front, :func:`selection.solvers.sweeps.sweep_eps`
  with ``complete=True`` and the default ``auto`` backend (what ``fedsel sweep --method eps
  --complete`` runs), for N in ``--sizes-front`` (default 20, 50, 100, 200, 500). Each
  instance is capped at ``--cap`` seconds (``max_seconds``, and the same cap per point, so a
  capped sweep stops within about twice the cap); a sweep that stopped on the cap, or has a
  point stopped by the time limit, is ``capped``.
* ``eps`` — one ε point, ``make_solver("eps", eps=ε, backend=b, time_limit=...)``, for N in
  ``--sizes-eps`` (default 1,000 … 50,000, cross-device scale) and each backend of
  ``--backends`` (default ``auto``, which is CBC at these N). ε is half the gap of the
  unconstrained optimum (top K by U): ε = ``--eps-fraction`` · g0 with g0 = gap(top-K), the
  midpoint between the unconstrained optimum's gap and 0 (about 5–7 points on synthetic data
  for N >= 200). The constraint binds by construction (the unconstrained optimum has gap g0
  > ε); the ``binds`` column checks it (U of the ε point below U*). Each repeat
  (``--repeats``, default 3; the median is reported) uses a fresh solver, so a fresh model:
  building the model (``build_s``) is timed apart from the solve (``seconds``: LP fixing
  and both lexicographic stages), and building the problem from the table (``problem_s``)
  apart from both. A solve stopped by ``--time-limit`` (default 60 s) marks its row
  ``capped``; the remaining repeats at that N are then not run.

Sizes above a capped one are not run for that curve, family and backend (they would only be
capped again) unless ``--keep-going``. Families (``--families``): ``synthetic`` =
``synthetic_stats(N, seed=0)`` (the instances of ``benchmarks/solvers.py``), ``near-tied`` =
``near_tied(N)`` of ``benchmarks/exact_peers.py`` (many nearly equal selections).

The growth exponent b of t ≈ a·N^b is the least-squares slope of log t on log N over the
uncapped rows of each curve, family, backend and route actually used (``auto`` enumerates at
small N: those rows are a group of their own). Capped rows are excluded from every fit.
Run: ``.venv/bin/python benchmarks/scale.py`` (on a quiet machine: the load average is
recorded before and after).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _families import oracle_stats

from selection.atomic import atomic_path, write_table_atomic, write_text_atomic
from selection.indicators import nondominated
from selection.problem import SelectionProblem
from selection.solvers import make_solver
from selection.solvers.base import SweepOptions
from selection.solvers.sweeps import sweep_eps
from selection.synthetic import cross_penalty_stats, synthetic_stats

ROOT = Path(__file__).resolve().parents[1]
SIZES_FRONT = (20, 50, 100, 200, 500)
SIZES_EPS = (1000, 2000, 5000, 10000, 20000, 50000)
OBJ = ("utility", "gap")
SOLVED = ("optimal", "infeasible")  # statuses of a proven answer
TARGET_N, TARGET_S = 5000, 1.0  # the target: one ε point at N = 5000 under 1 s
HORIZON_S = 10.0  # "what N stays under 10 s"
BUSY_LOAD = 0.5  # load average per core above which the machine counts as busy


def _near_tied(n: int) -> pd.DataFrame:
    spec = importlib.util.spec_from_file_location(
        "_exact_peers", ROOT / "benchmarks" / "exact_peers.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.near_tied(n)


FAMILIES = {
    "synthetic": lambda n: synthetic_stats(n, seed=0),
    "near-tied": _near_tied,
    "cross-penalty": lambda n: cross_penalty_stats(n, seed=0),
    "oracle": oracle_stats,
}


def k_of(n: int) -> int:
    return max(1, n // 10)


# -- fitting ------------------------------------------------------------------------------


def fit_power(ns, ts) -> tuple[float, float]:
    """(a, b) of t ≈ a·N^b: least squares of log t on log N (needs 2+ distinct N, t > 0)."""
    x = np.log(np.asarray(ns, dtype=float))
    y = np.log(np.asarray(ts, dtype=float))
    if len(x) < 2 or np.ptp(x) == 0:
        raise ValueError("fit_power needs at least two distinct N")
    b, loga = np.polyfit(x, y, 1)
    return float(math.exp(loga)), float(b)


def fit_table(df: pd.DataFrame) -> pd.DataFrame:
    """One fit per (curve, family, backend, route) over its uncapped rows with t > 0.

    Columns: curve, family, backend, route, points (rows fitted), n_min, n_max, a, b, r2
    (a, b, r2 NaN when fewer than two distinct N are left).
    """
    rows = []
    if df.empty:
        return pd.DataFrame(rows)
    keys = ["curve", "family", "backend", "route"]
    for key, g in df.groupby(keys, sort=False):
        ok = g[(~g["capped"].astype(bool)) & g["seconds"].notna() & (g["seconds"] > 0)]
        row = dict(zip(keys, key, strict=True))
        row.update(points=len(ok), n_min=math.nan, n_max=math.nan, a=math.nan, b=math.nan)
        row["r2"] = math.nan
        if len(ok):
            row.update(n_min=int(ok["N"].min()), n_max=int(ok["N"].max()))
        if ok["N"].nunique() >= 2:
            a, b = fit_power(ok["N"], ok["seconds"])
            y = np.log(ok["seconds"].to_numpy(float))
            pred = np.log(a) + b * np.log(ok["N"].to_numpy(float))
            ss = float(((y - y.mean()) ** 2).sum())
            row.update(a=a, b=b, r2=1 - float(((y - pred) ** 2).sum()) / ss if ss > 0 else 1.0)
        rows.append(row)
    return pd.DataFrame(rows)


# -- the two curves -----------------------------------------------------------------------


def _instance(family: str, n: int) -> tuple[SelectionProblem, float, float]:
    """(problem, seconds to generate the table, seconds to build the problem)."""
    t0 = time.perf_counter()
    table = FAMILIES[family](n)
    t1 = time.perf_counter()
    p = SelectionProblem.from_stats(table, k_of(n))
    return p, t1 - t0, time.perf_counter() - t1


def _unconstrained(p: SelectionProblem) -> tuple[float, float]:
    """(U*, g0): utility and gap of the top K by U (the unconstrained optimum, up to ties)."""
    top = np.argsort(-p.U, kind="stable")[: p.k]
    ud = p.Ud[top].mean(axis=0)
    return float(p.U[top].mean()), float(ud.max() - ud.min())


def run_front(family: str, n: int, cap: float, progress=None) -> dict:
    """The complete (U, gap) front of one instance (auto backend) within ``cap`` seconds."""
    p, gen_s, problem_s = _instance(family, n)
    t0 = time.perf_counter()
    f = sweep_eps(
        p, complete=True, max_seconds=cap, options=SweepOptions(time_limit=cap, progress=progress)
    )
    secs = time.perf_counter() - t0
    ok = f[f["selected"] != ""]
    pts = nondominated(ok[list(OBJ)].to_numpy(), OBJ) if len(ok) else np.empty((0, 2))
    statuses = f["status"].astype(str)
    capped = not bool(f.attrs.get("complete")) or bool((~statuses.isin(SOLVED)).any())
    return {
        "curve": "front",
        "family": family,
        "N": n,
        "K": p.k,
        "backend": "auto",
        "route": "+".join(sorted(set(f["backend"].astype(str)))),
        "repeats": 1,
        "gen_s": gen_s,
        "problem_s": problem_s,
        "build_s": math.nan,
        "seconds": secs,
        "seconds_min": secs,
        "seconds_max": secs,
        "points": len(pts),
        "solves": len(f),
        "s_per_solve": secs / max(1, len(f)),
        "status": "capped" if capped else "complete",
        "capped": capped,
        "note": "" if not capped else f"stopped at the {cap:g} s cap; a lower bound",
    }


def run_eps(
    family: str, n: int, backend: str, repeats: int, time_limit: float, fraction: float
) -> dict:
    """One ε point (ε = fraction · g0), ``repeats`` fresh solves; medians."""
    p, gen_s, problem_s = _instance(family, n)
    u_star, g0 = _unconstrained(p)
    eps = fraction * g0
    builds, solves, statuses, route, res = [], [], [], "", None
    for _ in range(repeats):
        solver = make_solver("eps", eps=eps, backend=backend, time_limit=time_limit)
        route = solver.route(p)
        if route != "enum":
            builds.append(solver.model(p).build_seconds)  # the model, built before the clock
        res = solver.solve(p)
        solves.append(res.seconds)
        statuses.append(str(res.status))
        if statuses[-1] not in SOLVED:
            break  # stopped by the time limit: the other repeats would be too
    capped = any(s not in SOLVED for s in statuses)
    u = res.objectives.get("utility", math.nan) if res is not None else math.nan
    g = res.objectives.get("gap", math.nan) if res is not None else math.nan
    return {
        "curve": "eps",
        "family": family,
        "N": n,
        "K": p.k,
        "backend": backend,
        "route": route,
        "repeats": len(solves),
        "gen_s": gen_s,
        "problem_s": problem_s,
        "build_s": statistics.median(builds) if builds else math.nan,
        "seconds": statistics.median(solves),
        "seconds_min": min(solves),
        "seconds_max": max(solves),
        "times": " ".join(f"{s:.4g}" for s in solves),
        "eps": eps,
        "g0": g0,
        "u_star": u_star,
        "utility": u,
        "gap": g,
        "binds": bool(u < u_star - 1e-9) if not math.isnan(u) else False,
        "status": " ".join(f"{s}:{statuses.count(s)}" for s in sorted(set(statuses))),
        "capped": capped,
        "note": f"stopped by the {time_limit:g} s time limit; a lower bound" if capped else "",
    }


def _skipped(curve: str, family: str, n: int, backend: str, why: str) -> dict:
    return {"curve": curve, "family": family, "N": n, "K": k_of(n), "backend": backend,
            "route": "", "repeats": 0, "seconds": math.nan, "status": "not run",
            "capped": True, "note": why}  # fmt: skip


def bench(args, progress=None, log=print) -> pd.DataFrame:
    """Both curves as one table (rows in run order); ``progress(label)`` advances one step."""
    rows = []
    step = progress or (lambda label, sub=None: None)
    for fam in args.families:
        capped_at = None
        for n in args.sizes_front:
            if capped_at is not None and not args.keep_going:
                rows.append(_skipped("front", fam, n, "auto", f"not run: N={capped_at} was capped"))
                step(f"front {fam} N={n}: skipped")
                continue
            label = f"front {fam} N={n}"
            step(label, sub=True)
            row = run_front(
                fam,
                n,
                args.cap,
                progress=lambda d, t, lab, label=label: step(f"{label}: {d} points", sub=True),
            )
            rows.append(row)
            log(
                f"{label}: {row['points']} points, {row['seconds']:.3g} s, "
                f"{row['status']} ({row['route']})"
            )
            step(label)
            capped_at = n if row["capped"] else None
        for b in args.backends:
            capped_at = None
            for n in args.sizes_eps:
                if capped_at is not None and not args.keep_going:
                    rows.append(_skipped("eps", fam, n, b, f"not run: N={capped_at} was capped"))
                    step(f"eps {fam} {b} N={n}: skipped")
                    continue
                label = f"ε point {fam} {b} N={n}"
                step(label, sub=True)
                row = run_eps(fam, n, b, args.repeats, args.time_limit, args.eps_fraction)
                rows.append(row)
                log(f"{label}: median {row['seconds']:.3g} s (build {row['build_s']:.3g} s, "
                    f"problem {row['problem_s']:.3g} s), {row['status']}, ε={row['eps']:.3g}, "
                    f"binds={row['binds']}")  # fmt: skip
                step(label)
                capped_at = n if row["capped"] else None
    return pd.DataFrame(rows)


# -- report -------------------------------------------------------------------------------


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _table(df: pd.DataFrame, cols: list[str]) -> str:
    df = df.reindex(columns=cols)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)


def horizon(df: pd.DataFrame, fits: pd.DataFrame, limit: float = HORIZON_S) -> pd.DataFrame:
    """Per ε family/backend: where one ε point reaches ``limit`` seconds.

    Columns: family, backend; ``under_N``/``under_s``: the largest measured N (uncapped)
    below ``limit``; ``over_N``/``over_s``/``over_capped``: the next measured N at or above
    it (or capped: its time is a lower bound); ``between_N``: log-log interpolation between
    the two (an upper bound when the upper point is capped); ``fit_N``: where the fitted
    power law reaches ``limit`` (``fit``: interpolated or extrapolated).
    """
    out = []
    eps = df[(df["curve"] == "eps") & df["seconds"].notna()]
    for (fam, b), g in eps.groupby(["family", "backend"], sort=False):
        g = g.sort_values("N")
        capped = g["capped"].astype(bool)
        under = g[~capped & (g["seconds"] < limit)]
        row = {"family": fam, "backend": b, "under_N": math.nan, "under_s": math.nan}
        row.update(over_N=math.nan, over_s=math.nan, over_capped=False, between_N=math.nan)
        if len(under):
            row.update(under_N=int(under["N"].iloc[-1]), under_s=float(under["seconds"].iloc[-1]))
        above = g[
            (capped | (g["seconds"] >= limit)) & (g["N"] > (row["under_N"] if len(under) else 0))
        ]
        if len(above):
            o = above.iloc[0]
            row.update(
                over_N=int(o["N"]), over_s=float(o["seconds"]), over_capped=bool(o["capped"])
            )
            if len(under) and row["over_s"] > row["under_s"]:
                n1, t1, n2, t2 = row["under_N"], row["under_s"], row["over_N"], row["over_s"]
                w = (math.log(limit) - math.log(t1)) / (math.log(t2) - math.log(t1))
                row["between_N"] = math.exp(math.log(n1) + w * (math.log(n2) - math.log(n1)))
        f = fits[(fits["curve"] == "eps") & (fits["family"] == fam) & (fits["backend"] == b)]
        f = f[f["b"].notna()]
        row.update(fit_N=math.nan, fit="")
        if len(f) and f["b"].iloc[0] > 0:
            a, bb = float(f["a"].iloc[0]), float(f["b"].iloc[0])
            row["fit_N"] = (limit / a) ** (1 / bb)
            lo, hi = float(f["n_min"].iloc[0]), float(f["n_max"].iloc[0])
            row["fit"] = "interpolated" if lo <= row["fit_N"] <= hi else "extrapolated"
        out.append(row)
    return pd.DataFrame(out)


def _horizon_line(r) -> str:
    lim = f"{HORIZON_S:g} s"
    parts = []
    if math.isnan(r.under_N):
        parts.append(f"no measured N under {lim}")
    else:
        parts.append(f"largest measured N under {lim}: {r.under_N:,.0f} ({r.under_s:.3g} s)")
    if not math.isnan(r.over_N):
        took = f"≥ {r.over_s:.3g} s (capped)" if r.over_capped else f"{r.over_s:.3g} s"
        parts.append(f"N = {r.over_N:,.0f} took {took}")
    if not math.isnan(r.between_N):
        bound = "≈ " if not r.over_capped else "≤ "
        parts.append(f"{lim} is reached at N {bound}{r.between_N:,.0f} (log-log interpolation"
                     " between these two)")  # fmt: skip
    if not math.isnan(r.fit_N):
        note = ""
        cross = r.between_N if not math.isnan(r.between_N) else r.over_N
        if not math.isnan(cross) and r.fit_N > cross:
            note = ", past the measured crossing: the growth steepens there, not to be trusted"
        parts.append(f"the fitted power law reaches {lim} at N ≈ {r.fit_N:,.0f} ({r.fit}{note})")
    return f"* {r.family}, {r.backend}: " + "; ".join(parts) + "."


def targets(df: pd.DataFrame, fits: pd.DataFrame) -> str:
    lines = ["## Targets", "", "| target | measured | met |", "|---|---|---|"]
    eps = df[df["curve"] == "eps"]
    for (fam, b), g in eps.groupby(["family", "backend"], sort=False):
        hit = g[(g["N"] == TARGET_N) & g["seconds"].notna()]
        name = f"one ε point, N = {TARGET_N}, {fam}, {b} (median) < {TARGET_S:g} s"
        if not len(hit):
            lines.append(f"| {name} | not measured | |")
            continue
        s, capped = float(hit["seconds"].iloc[0]), bool(hit["capped"].iloc[0])
        met = "no" if capped else ("yes" if s < TARGET_S else "no")
        lines.append(f"| {name} | {s:.3g} s{' (capped)' if capped else ''} | {met} |")
    hz = horizon(df, fits)
    lines += ["", f"Largest N whose ε point stays under {HORIZON_S:g} s:", ""]
    lines += [_horizon_line(r) for r in hz.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def machine_facts(load_before, load_after, seconds: float) -> str:
    cpus = os.cpu_count() or 1
    busy_before = load_before[0] > BUSY_LOAD * cpus
    busy_after = load_after[0] - 1.0 > BUSY_LOAD * cpus  # this run itself adds about 1
    text = (
        f"Machine: {cpus} CPU cores ({platform.processor() or platform.machine()}, "
        f"{platform.system()}), Python {platform.python_version()}; torch "
        f"{'imported' if 'torch' in sys.modules else 'not imported (the route is torch-free)'}. "
        "Solvers single-threaded (CBC threads = 1; its LP fixing in HiGHS).  \n"
        f"Load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in load_before)}; "
        f"after: {', '.join(f'{v:.2f}' for v in load_after)}. Whole run {seconds:.0f} s.\n"
    )
    if busy_before or busy_after:
        text += (
            f"\n**Warning: the machine was busy** (1-min load above {BUSY_LOAD:g} per core, "
            "this run's own ~1 aside): other jobs shared the cores, so the times are slower "
            "and noisier than on a quiet machine.\n"
        )
    return text


def to_markdown(df, fits, command, load_before, load_after, seconds) -> str:
    front = df[df["curve"] == "front"]
    eps = df[df["curve"] == "eps"]
    parts = [
        "# Scale curves of the exact route\n",
        f"Command: `{command}`  ",
        machine_facts(load_before, load_after, seconds),
        "K = N/10, D = 4. `front`: the complete exact (U, gap) front by `sweep_eps(complete=True)`"
        " (auto backend: enumeration while C(N, K) <= 200,000, else CBC with exact LP fixing);"
        " `seconds` is the whole sweep, problem build excluded. `eps`: one ε point, ε = half the"
        " gap g0 of the unconstrained optimum (top K by U); `seconds` is the median solve over"
        " fresh solvers, the model build (`build_s`) and the problem build (`problem_s`, table →"
        " `SelectionProblem`) apart. A `capped` row stopped on its cap (its time is a lower"
        " bound) and is left out of the fits; sizes above a capped one are not run (unless"
        " `--keep-going`).",
        "",
        "## Complete exact front vs N",
        "",
        _table(
            front,
            [
                "family",
                "N",
                "K",
                "route",
                "points",
                "solves",
                "s_per_solve",
                "seconds",
                "problem_s",
                "status",
                "note",
            ],
        ),  # fmt: skip
        "",
        "## One ε point vs N",
        "",
        _table(
            eps,
            [
                "family",
                "backend",
                "route",
                "N",
                "K",
                "eps",
                "g0",
                "binds",
                "problem_s",
                "build_s",
                "seconds",
                "seconds_min",
                "seconds_max",
                "repeats",
                "status",
                "note",
            ],
        ),  # fmt: skip
        "",
        "## Growth exponents (t ≈ a·N^b, least squares on log-log, uncapped rows)",
        "",
        _table(
            fits,
            ["curve", "family", "backend", "route", "points", "n_min", "n_max", "a", "b", "r2"],
        )
        if len(fits)
        else "no fits",  # fmt: skip
        "",
        targets(df, fits),
        "Plot: `scale.png` (log-log; hollow markers: capped points, dashed: fits).\n",
    ]
    return "\n".join(parts)


def plot(df: pd.DataFrame, fits: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 5.5), dpi=130)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    groups = df[df["seconds"].notna()].groupby(["curve", "family", "backend", "route"], sort=False)
    for i, ((curve, fam, b, route), g) in enumerate(groups):
        c = colors[i % len(colors)]
        marker = "o" if curve == "front" else "s"
        name = (
            f"complete front, {fam} ({route})"
            if curve == "front"
            else f"one ε point, {fam}, {b}" + (f"→{route}" if route != b else "")
        )
        done = g[~g["capped"].astype(bool)].sort_values("N")
        cap = g[g["capped"].astype(bool)]
        ax.plot(done["N"], done["seconds"], marker=marker, ls="-", color=c, label=name, ms=6)
        if len(cap):
            ax.plot(cap["N"], cap["seconds"], marker=marker, ls="none", mfc="none", mec=c, ms=9,
                    mew=1.5, label=f"{name}: capped (lower bound)")  # fmt: skip
        f = fits[
            (fits["curve"] == curve)
            & (fits["family"] == fam)
            & (fits["backend"] == b)
            & (fits["route"] == route)
        ]
        if len(f) and not math.isnan(f["b"].iloc[0]):
            a, bb = float(f["a"].iloc[0]), float(f["b"].iloc[0])
            xs = np.geomspace(f["n_min"].iloc[0], f["n_max"].iloc[0], 50)
            ax.plot(
                xs,
                a * xs**bb,
                ls="--",
                color=c,
                alpha=0.7,
                label=f"fit: $t \\propto N^{{{bb:.2f}}}$",
            )
    for y, text in ((TARGET_S, f"{TARGET_S:g} s"), (HORIZON_S, f"{HORIZON_S:g} s")):
        ax.axhline(y, color="0.6", ls=":", lw=1)
        ax.annotate(text, (1.0, y), xycoords=("axes fraction", "data"), ha="right", va="bottom",
                    fontsize=8, color="0.4")  # fmt: skip
    ax.axvline(TARGET_N, color="0.8", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("clients N (K = N/10)")
    ax.set_ylabel("wall seconds")
    ax.set_title("Exact route: complete (U, gap) front and one ε point vs N")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7.5, loc="lower right", framealpha=0.9)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)


def _ints(s: str) -> list[int]:
    return [int(v) for v in s.split(",") if v.strip()]


def _names(s: str) -> list[str]:
    return [v.strip() for v in s.split(",") if v.strip()]


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-front", type=_ints, default=list(SIZES_FRONT))
    ap.add_argument("--sizes-eps", type=_ints, default=list(SIZES_EPS))
    ap.add_argument("--families", type=_names, default=["synthetic"],
                    help=f"comma-separated, of: {', '.join(FAMILIES)}")  # fmt: skip
    ap.add_argument("--backends", type=_names, default=["auto"],
                    help="ε-point backends, comma-separated: auto, highs, cbc, cpsat")  # fmt: skip
    ap.add_argument("--repeats", type=int, default=3, help="fresh solves per ε point (median)")
    ap.add_argument("--cap", type=float, default=300.0, help="seconds per complete front")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per ε solve")
    ap.add_argument("--eps-fraction", type=float, default=0.5, help="ε as a fraction of g0")
    ap.add_argument(
        "--keep-going", action="store_true", help="also run the sizes above a capped one"
    )
    ap.add_argument("--out", default=str(ROOT / "results" / "benchmarks"))
    args = ap.parse_args(argv)
    for fam in args.families:
        if fam not in FAMILIES:
            ap.error(f"unknown family {fam!r}; choose from {', '.join(FAMILIES)}")
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    argv_used = sys.argv[1:] if argv is None else argv
    command = " ".join([".venv/bin/python benchmarks/scale.py", *argv_used])

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    nf = len(args.families)
    total = nf * (len(args.sizes_front) + len(args.backends) * len(args.sizes_eps))
    console = Console(file=sys.stderr)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as bar:  # fmt: skip
        task = bar.add_task("scale curves", total=total)

        def step(label: str, sub: bool | None = None) -> None:
            bar.update(task, description=label, advance=0 if sub else 1)

        df = bench(args, progress=step, log=bar.console.log)
    seconds = time.perf_counter() - t0
    load_after = os.getloadavg()
    fits = fit_table(df[df["status"] != "not run"])
    out = Path(args.out)
    write_table_atomic(df, out / "scale.csv")
    md = to_markdown(df, fits, command, load_before, load_after, seconds)
    write_text_atomic(md, out / "scale.md")
    plot(df[df["status"] != "not run"], fits, out / "scale.png")
    print(md)
    return df


if __name__ == "__main__":
    main()
