"""The strategy comparison behind ``fedsel demo``.

For every seed the same federation (one oracle, reset to its round-0 state before each run)
is trained once per selector with :func:`fl_oracle.experiments.loop.run_training`. At a chosen round of
the reference run (the first selector, first seed) the empirical Pareto fronts are swept over
ε and δ, and every front point is realized with ``oracle.evaluate`` (aggregating exactly those
updates without committing) next to the linear model's prediction. The problem statement's correlation
statistics are computed on the reference runs' statistics (all clients measured every round).

Cost: a round costs the oracle's statistics for every client plus one commit. With the CLI's
embedded default (:data:`~fl_oracle.experiments.oracle_defaults.DEMO_ORACLE`: 20 clients, 200 validation and 500 test
images per domain, 32 Fisher probes, local step 0.1 for 2 epochs, one torch thread per run
process) the default 8 selectors x 3 seeds x 8 rounds = 192 rounds of ``make demo`` fit in
the 15 minutes the demo is allowed on 2 CPU cores; its measured time is in the README.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from fl_oracle.experiments.demo.fronts import front_points
from fl_oracle.experiments.demo.settings import DEFAULT_SELECTORS, DemoSettings
from fl_oracle.experiments.loop import OracleLike, TrainResult
from fl_oracle.experiments.runner import RunTask, run_all
from selection.progress import ProgressFn, report

__all__ = [
    "DEFAULT_SELECTORS",
    "DemoSettings",
    "DemoResult",
    "run_demo",
    "summarize",
]


@dataclass(frozen=True)
class DemoResult:
    """Everything the report is drawn from.

    Attributes:
        settings: the settings that ran.
        domains: evaluation domains, in order.
        history: every run's history (``seed`` and ``selector`` columns tell runs apart).
        stats: the reference runs' statistics (all seeds), for the problem statement's statistics.
        fronts: front points with predicted and realized values (see :func:`front_points`).
        summary: one row per selector, mean and std over seeds (see :func:`summarize`).
        setup: the federation's description (domains, sources, clients, sizes, μ, γ, K, ...).
    """

    settings: DemoSettings
    domains: tuple[str, ...]
    history: pd.DataFrame
    stats: pd.DataFrame
    fronts: pd.DataFrame
    summary: pd.DataFrame
    setup: dict = field(default_factory=dict)


def summarize(history: pd.DataFrame) -> pd.DataFrame:
    """Per selector, the final round's metrics: mean and std over seeds.

    Returns:
        One row per selector (in first-appearance order): ``n_seeds``, ``<m>_mean`` and
        ``<m>_std`` for m in avg, worst, gap, std (accuracy of the final model, %; std is the
        spread across domains), solve_seconds (mean per round), and ``fallback_rounds``.
    """
    last = history.loc[history.groupby(["selector", "seed"])["round"].idxmax()]
    per_run = pd.DataFrame(
        {
            "selector": last["selector"].to_numpy(),
            "avg": last["acc_avg"].to_numpy(),
            "worst": last["acc_worst"].to_numpy(),
            "gap": last["acc_gap"].to_numpy(),
            "std": last["acc_std"].to_numpy(),
        }
    )
    per_run["solve_seconds"] = (
        history.groupby(["selector", "seed"])["solve_seconds"]
        .mean()
        .reindex(list(zip(last["selector"], last["seed"], strict=True)))
        .to_numpy()
    )
    order = list(dict.fromkeys(history["selector"]))
    g = per_run.groupby("selector")
    out = pd.DataFrame({"n_seeds": g.size()})
    for m in ("avg", "worst", "gap", "std", "solve_seconds"):
        out[f"{m}_mean"] = g[m].mean()
        out[f"{m}_std"] = g[m].std(ddof=1).fillna(0.0)
    out["fallback_rounds"] = (
        history.assign(fb=history["fallback"].fillna("").astype(str) != "")
        .groupby("selector")["fb"]
        .sum()
    )
    return out.reindex(order).reset_index()


def run_demo(
    make_oracle: Callable[[int], OracleLike],
    make_selector: Callable[..., Callable],
    settings: DemoSettings,
    *,
    workers: int = 1,
    progress: ProgressFn | None = None,
) -> DemoResult:
    """Run every selector on every seed's federation, then sweep the fronts.

    Args:
        make_oracle: seed -> a fresh oracle at round 0 (picklable when ``workers > 1``, e.g.
            :class:`fl_oracle.experiments.runner.OracleFactory`).
        make_selector: ``selection.selectors.make_selector`` (spec, seed=...) -> selector.
        settings: what to run.
        workers: processes running runs in parallel (1 = this process).
        progress: ``(done, total, label)`` callback over all rounds (+1 for the fronts).
    """
    s = settings
    ref = s.selectors[0]
    tasks = [
        RunTask(
            e.spec,
            seed,
            s.rounds,
            s.k,
            name=e.text,  # the history names a run by its spec as written
            snapshot_round=s.chosen_round if (e.text == ref and seed == 0) else None,
            truth=e.text == ref,  # the reference's statistics draw the fronts
        )
        for seed in range(s.seeds)
        for e in s.entries
    ]
    runs: dict[tuple[str, int], TrainResult] = {}
    snapshot, setup = None, {}
    total = len(tasks) * s.rounds + 1
    done_rounds = 0

    def tick(label: str = "demo runs") -> None:
        nonlocal done_rounds
        done_rounds += 1
        report(progress, done_rounds, total, label)

    cache: dict = {}
    done = run_all(make_oracle, make_selector, tasks, workers=workers, cache=cache, tick=tick)
    for task, (res, snap, fed) in done:
        runs[(task.name, task.seed)] = res
        snapshot = snap if snap is not None else snapshot
        setup = setup or fed
    report(progress, done_rounds, total, f"demo runs: fronts at round {s.chosen_round}")
    oracle = cache[0][0] if 0 in cache else make_oracle(0)
    oracle.load_state_dict(snapshot)
    fronts = front_points(oracle, s.k, s.front_delta)
    tick("demo runs: done")
    history = pd.concat([runs[(t.name, t.seed)].history for t in tasks], ignore_index=True)
    stats = pd.concat(
        [runs[(ref, seed)].stats.assign(seed=seed) for seed in range(s.seeds)], ignore_index=True
    )
    setup = {
        **setup,
        "k": s.k,
        "rounds": s.rounds,
        "seeds": s.seeds,
        "stats_mode": s.stats_mode or "per spec",
        "front_round": s.chosen_round,
        "selectors": list(s.selectors),
        "workers": workers,
    }
    return DemoResult(
        settings=s,
        domains=tuple(setup.get("domains", ())),
        history=history,
        stats=stats,
        fronts=fronts,
        summary=summarize(history),
        setup=setup,
    )
