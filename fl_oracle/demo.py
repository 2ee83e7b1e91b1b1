"""The strategy comparison behind ``fedsel demo``.

For every seed the same federation (one oracle, reset to its round-0 state before each run)
is trained once per selector with :func:`fl_oracle.train.run_training`. At a chosen round of
the reference run (the first selector, first seed) the empirical Pareto fronts are swept over
ε and δ, and every front point is realized with ``oracle.evaluate`` (aggregating exactly those
updates without committing) next to the linear model's prediction. The seed's correlation
statistics are computed on the reference runs' statistics (all clients measured every round).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import pandas as pd

from fl_oracle.train import OracleLike, TrainResult, domain_metrics, run_training
from selection.problem import SelectionProblem

__all__ = [
    "DEFAULT_SELECTORS",
    "DemoSettings",
    "DemoResult",
    "run_demo",
    "front_points",
    "summarize",
]

DEFAULT_SELECTORS: tuple[str, ...] = (
    "proportional",
    "random",
    "power-of-choice:10",
    "fisher-topk",
    "qffl:1",
    "eps:10",
    "maxmin:2",
    "nsga2:knee",
)
_OK = ("optimal", "feasible", "time_limit")


@dataclass(frozen=True, kw_only=True)
class DemoSettings:
    """What the comparison runs.

    Attributes:
        rounds: training rounds per run.
        seeds: number of seeds (0..seeds-1); each seed is its own federation.
        k: clients selected per round.
        selectors: selector specs; the first is the reference run for fronts and statistics.
        front_round: round whose statistics the fronts are swept on (default rounds // 2).
        front_delta: δ grid of the max-min sweep, percentage points.
        stats_mode: ``fresh`` or ``stale`` statistics during training.
    """

    rounds: int = 6
    seeds: int = 3
    k: int = 5
    selectors: tuple[str, ...] = DEFAULT_SELECTORS
    front_round: int | None = None
    front_delta: tuple[float, ...] = (0.0, 1.0, 2.0, 5.0, 10.0)
    stats_mode: str = "fresh"

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.seeds < 1 or self.k < 1:
            raise ValueError(
                f"rounds={self.rounds}, seeds={self.seeds} and k={self.k} must all be >= 1"
            )
        if not self.selectors:
            raise ValueError("the demo needs at least one selector")
        if len(set(self.selectors)) != len(self.selectors):
            raise ValueError(f"duplicate selector in {', '.join(self.selectors)}")
        if self.front_round is not None and not 0 <= self.front_round < self.rounds:
            raise ValueError(f"front_round={self.front_round} must lie in 0..{self.rounds - 1}")

    @property
    def chosen_round(self) -> int:
        """The round the fronts are swept on."""
        return self.rounds // 2 if self.front_round is None else self.front_round


@dataclass(frozen=True)
class DemoResult:
    """Everything the report is drawn from.

    Attributes:
        settings: the settings that ran.
        domains: evaluation domains, in order.
        history: every run's history (``seed`` and ``selector`` columns tell runs apart).
        stats: the reference runs' statistics (all seeds), for the seed statistics.
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


def _realize(oracle: OracleLike, ids: list[str], domains: Sequence[str]) -> tuple[dict, str]:
    """Realized accuracies of aggregating ``ids``: validation split if the oracle has one."""
    try:
        return oracle.evaluate(ids, split="val"), "val"
    except (ValueError, KeyError, TypeError):
        return oracle.evaluate(ids, split="test"), "test"


def front_points(oracle: OracleLike, k: int, delta: Sequence[float]) -> pd.DataFrame:
    """The ε and δ fronts at the oracle's current round, predicted next to realized.

    Args:
        oracle: positioned at the round to sweep (its state is not changed).
        k: cardinality K.
        delta: δ grid of the max-min sweep, percentage points.

    Returns:
        One row per feasible sweep point: the sweep's columns (``method, param, utility, gap,
        worst, selected, status, ...``) renamed ``pred_*`` for the three objectives, plus
        ``real_utility`` (pooled accuracy %), ``real_gap``, ``real_worst``, ``real_<domain>``,
        ``err_utility``/``err_gap``/``err_worst`` (realized - predicted, pp), ``split``.
    """
    from selection.pareto import sweep_delta, sweep_eps

    stats = oracle.round_stats()
    problem = SelectionProblem.from_stats(stats, k)
    parts = [sweep_eps(problem, complete=True), sweep_delta(problem, list(delta))]
    front = pd.concat(parts, ignore_index=True)
    front = front[front["status"].isin(_OK)].reset_index(drop=True)
    domains = list(oracle.domains)
    cache: dict[str, dict] = {}
    rows = []
    for rec in front.to_dict("records"):
        key = str(rec["selected"])
        if key not in cache:
            metrics, split = _realize(oracle, [s for s in key.split(";") if s], domains)
            real = domain_metrics(metrics, domains)
            pooled = float(metrics.get("acc_pooled", real["acc_avg"]))
            cache[key] = {
                "real_utility": pooled,
                "real_gap": real["acc_gap"],
                "real_worst": real["acc_worst"],
                **{f"real_{d}": real[f"acc_{d}"] for d in domains},
                "split": split,
            }
        rows.append({**rec, **cache[key]})
    out = pd.DataFrame(rows).rename(
        columns={"utility": "pred_utility", "gap": "pred_gap", "worst": "pred_worst"}
    )
    if out.empty:
        return out
    out.insert(0, "round", int(problem.round))
    for obj in ("utility", "gap", "worst"):
        out[f"err_{obj}"] = out[f"real_{obj}"] - out[f"pred_{obj}"]
    return out


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
    progress: bool = False,
) -> DemoResult:
    """Run every selector on every seed's federation, then sweep the fronts.

    Args:
        make_oracle: seed -> a fresh oracle at round 0 (share the loaded data across calls).
        make_selector: ``selection.selectors.make_selector`` (spec, seed=...) -> selector.
        settings: what to run.
        progress: show a rich progress bar over all rounds.
    """
    s = settings
    histories, stats, fronts = [], [], pd.DataFrame()
    setup: dict = {}
    bar = _progress_bar() if progress else nullcontext()
    with bar as prog:
        tick = _Ticker(prog, s.seeds * len(s.selectors) * s.rounds)
        for seed in range(s.seeds):
            oracle = make_oracle(seed)
            setup = setup or describe_setup(oracle, s)
            runs, snap = _run_seed(oracle, make_selector, s, seed, tick)
            histories += [r.history for r in runs]
            stats.append(runs[0].stats.assign(seed=seed))
            if seed == 0:
                tick.describe(f"fronts at round {s.chosen_round}")
                oracle.load_state_dict(snap)
                fronts = front_points(oracle, s.k, s.front_delta)
    history = pd.concat(histories, ignore_index=True)
    return DemoResult(
        settings=s,
        domains=tuple(setup.get("domains", ())),
        history=history,
        stats=pd.concat(stats, ignore_index=True),
        fronts=fronts,
        summary=summarize(history),
        setup=setup,
    )


class _Ticker:
    """A rich progress task, or nothing."""

    def __init__(self, prog, total: int) -> None:
        self.prog = prog
        self.task = prog.add_task("demo", total=total) if prog is not None else None

    def describe(self, text: str) -> None:
        if self.prog is not None:
            self.prog.update(self.task, description=text)

    def advance(self) -> None:
        if self.prog is not None:
            self.prog.advance(self.task)


def _run_seed(
    oracle: OracleLike,
    make_selector: Callable[..., Callable],
    s: DemoSettings,
    seed: int,
    tick: _Ticker,
) -> tuple[list[TrainResult], dict]:
    """Every selector on one federation from the same round-0 state.

    Returns:
        The runs (in selector order) and the reference run's oracle state at the front round.
    """
    init = copy.deepcopy(oracle.state_dict())
    snap = {0: init} if s.chosen_round == 0 else {}
    runs = []
    for j, spec in enumerate(s.selectors):
        oracle.load_state_dict(copy.deepcopy(init))
        selector = make_selector(spec, seed=seed)
        tick.describe(f"seed {seed} {spec}")

        def on_round(row: dict, table: pd.DataFrame, _ref: bool = j == 0) -> None:
            if _ref and oracle.round == s.chosen_round and oracle.round not in snap:
                snap[oracle.round] = copy.deepcopy(oracle.state_dict())
            tick.advance()

        runs.append(
            run_training(
                oracle,
                selector,
                rounds=s.rounds,
                k=s.k,
                name=spec,
                seed=seed,
                stats_mode=s.stats_mode,
                on_round=on_round,
            )
        )
    return runs, snap[s.chosen_round]


def describe_setup(oracle: OracleLike, settings: DemoSettings) -> dict:
    """The federation as the report's set-up section shows it."""
    clients = getattr(oracle, "clients", None)
    sources = dict(getattr(oracle, "sources", {}) or {})
    config = getattr(oracle, "config", None)
    setup: dict = {
        "domains": list(oracle.domains),
        "sources": {d: sources.get(d, "unknown") for d in oracle.domains},
        "k": settings.k,
        "rounds": settings.rounds,
        "seeds": settings.seeds,
        "stats_mode": settings.stats_mode,
        "front_round": settings.chosen_round,
        "selectors": list(settings.selectors),
    }
    if clients is not None:
        per = clients.groupby("domain", sort=False)["n_samples"].agg(["count", "sum", "mean"])
        setup["clients"] = {
            d: {"clients": int(r["count"]), "samples": int(r["sum"]), "mean": float(r["mean"])}
            for d, r in per.iterrows()
        }
        setup["n_clients"] = int(len(clients))
    for key in ("mu", "gamma", "model", "lr", "local_epochs", "batch_size", "aggregation"):
        if config is not None and hasattr(config, key):
            v = getattr(config, key)
            setup[key] = v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
    return setup


def _progress_bar():
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
