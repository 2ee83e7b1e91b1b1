"""The round step every round cycle runs: the in-process loop (:mod:`.loop`) and the Flower
strategy (:class:`~fl_oracle.experiments.flower.strategy.FedselStrategy`) alike.

:func:`choose_round` turns one round's statistics table into the committed choice: the problem
judged by the selector's surrogate (logits where given), the selector's answer (the smallest-gap
point where it finds none), the one check of that answer, its predicted objectives and q-FFL's
aggregation weights. :func:`history_row` writes the columns every cycle records first;
:func:`domain_metrics` the accuracies of the new model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from selection.defaults import DEFAULT_SURROGATE
from selection.errors import InfeasibleError, SelectionError
from selection.objectives import evaluate as evaluate_objectives
from selection.problem import SelectionProblem
from selection.selectors import CallableSelector, Selector, as_selector

__all__ = [
    "GLOBAL_KEYS",
    "SelectorLike",
    "RoundChoice",
    "choose_round",
    "run_selector",
    "check_selection",
    "fallback_selection",
    "qffl_weights",
    "history_row",
    "domain_metrics",
]

# Global statistics of the new model copied from ``oracle.step`` into the history when present.
GLOBAL_KEYS = ("global_loss", "B_dissimilarity", "mu")
#: what a round cycle calls: a :class:`~selection.selectors.Selector` (its typed spec says the
#: surrogate and verified picks), or any callable ``(round_stats, k) -> ids`` (a fake, the
#: oracle's sampler), which reads the mean surrogate
SelectorLike = Selector | Callable[[pd.DataFrame, int], list[str]]


def domain_metrics(metrics: Mapping[str, Any], domains: Sequence[str]) -> dict[str, float]:
    """Per-domain accuracies and their mean, minimum and spread from an oracle metrics dict.

    Args:
        metrics: the oracle's result with ``acc_<domain>`` keys (accuracy, %).
        domains: the D domains, in report order.

    Returns:
        ``acc_<domain>`` for each domain, ``acc_avg`` (mean), ``acc_worst`` (min),
        ``acc_gap`` (max - min) and ``acc_std`` (population std over domains), all in %.

    Examples:
        >>> from fl_oracle.experiments.round_step import domain_metrics
        >>> domain_metrics({"acc_mnist": 80.0, "acc_usps": 60.0, "acc_pooled": 73.3},
        ...                ["mnist", "usps"])
        {'acc_mnist': 80.0, 'acc_usps': 60.0, 'acc_avg': 70.0, 'acc_worst': 60.0,
         'acc_gap': 20.0, 'acc_std': 10.0}
    """
    missing = [d for d in domains if f"acc_{d}" not in metrics]
    if missing:
        raise ValueError(
            f"oracle metrics lack acc_{missing[0]} (keys: {', '.join(sorted(metrics))})"
        )
    acc = np.array([float(metrics[f"acc_{d}"]) for d in domains])
    out = {f"acc_{d}": float(a) for d, a in zip(domains, acc, strict=True)}
    out.update(
        acc_avg=float(acc.mean()),
        acc_worst=float(acc.min()),
        acc_gap=float(acc.max() - acc.min()),
        acc_std=float(acc.std()),
    )
    return out


def qffl_weights(stats: pd.DataFrame, selected: Sequence[str], q: float) -> dict[str, float]:
    """q-FFL aggregation weights w_i ∝ n_i · loss_i^q over the selected clients (sum 1).

    Args:
        stats: the round's statistics with ``client_id``, ``n_samples`` and ``loss`` columns.
        selected: the selected client ids.
        q: fairness exponent q >= 0 (0 = sample-weighted FedAvg).

    Examples:
        a and b hold 10 samples each; b's loss is 4 times a's, so q = 1 weighs it 4 times:

        >>> import pandas as pd
        >>> from fl_oracle.experiments.round_step import qffl_weights
        >>> stats = pd.DataFrame({"client_id": ["a", "b", "c"], "n_samples": [10, 10, 20],
        ...                       "loss": [1.0, 4.0, 1.0]})
        >>> qffl_weights(stats, ["a", "b"], q=1.0)
        {'a': 0.2, 'b': 0.8}
        >>> qffl_weights(stats, ["a", "c"], q=0.0)  # FedAvg: by sample count
        {'a': 0.333..., 'c': 0.666...}
    """
    if q < 0 or not np.isfinite(q):
        raise ValueError(f"qffl: q={q!r} must be a finite number >= 0")
    if "loss" not in stats.columns:
        raise ValueError("qffl: the round statistics have no column loss")
    part = stats.set_index("client_id").loc[list(selected)]
    loss = part["loss"].to_numpy(dtype=float)
    if not np.all(np.isfinite(loss)) or np.any(loss <= 0):
        pos = int(np.flatnonzero(~np.isfinite(loss) | (loss <= 0))[0])
        raise ValueError(
            f"qffl: column loss of client {selected[pos]} is {loss[pos]!r}, must be > 0"
        )
    w = part["n_samples"].to_numpy(dtype=float) * np.exp(q * np.log(loss))
    w = w / w.sum()
    return {str(c): float(v) for c, v in zip(selected, w, strict=True)}


def fallback_selection(problem: SelectionProblem) -> tuple[list[str], str]:
    """The best feasible point when a selector fails: the smallest-gap selection.

    The same rule as :class:`selection.selectors.Selector`'s own fallback: an infeasible ε
    (below the smallest achievable gap) is relaxed to that smallest gap, and among the
    selections reaching it the one of highest U is taken.

    Returns:
        The selected ids and a description of the point that was taken.

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> from fl_oracle.experiments.round_step import fallback_selection
        >>> stats = example_stats()
        >>> problem = SelectionProblem.from_stats(stats[stats["round"] == 2], 5)
        >>> ids, what = fallback_selection(problem)
        >>> sorted(ids)
        ['svhn-0', 'svhn-1', 'svhn-3', 'svhn-4', 'syn-2']
        >>> what
        'the smallest-gap point (gap 17.3529 pp, U 61.81%)'
    """
    from selection.solvers.eps import min_gap_point

    point = min_gap_point(problem)
    obj = point.objectives
    return list(
        point.ids
    ), f"the smallest-gap point (gap {obj['gap']:.4f} pp, U {obj['utility']:.2f}%)"


def _last_solve_info(selector: Selector) -> tuple[float | None, str]:
    """(solve seconds, fallback message) of the selector's last call: its ``last`` SolveResult
    (None for a rule or callable that solved nothing) and ``fallback`` ("" when the solve
    succeeded)."""
    seconds = None if selector.last is None else float(selector.last.seconds)
    return seconds, selector.fallback


def history_row(
    *,
    t: int,
    name: str,
    seed: int,
    stats_mode: str,
    k: int,
    ids: list[str],
    accuracies: Mapping[str, float],
    pred: Mapping[str, float] | None,
    surrogate: str,
    solve_seconds: float,
    fallback: str,
    clocks: tuple[float, float],
    route: str = "",
    state: Mapping[str, float] | None = None,
    cost: Mapping[str, float] | None = None,
    upper_bound: bool | None = None,
    weights: Mapping[str, float] | None = None,
) -> dict:
    """The columns every round cycle writes first (in-process, training-only, Flower), in the
    contract's order; each cycle appends its own (global statistics, engine, failures).
    ``state``: a stateful selector's state after the round (the long-term queues,
    ``lt_Q_<domain>``), appended after ``fallback``; ``cost`` (the deployment cost columns,
    :func:`fl_oracle.experiments.cost.round_cost`) and ``upper_bound`` (the run measured every
    client: the oracle's upper bound) close the part every driver writes alike; ``weights``
    (the picks' aggregation weights, when the round's choice set them) is written last as
    ``agg_weights``: the weights in the order of ``selected``, joined by ``;`` ("": the
    trainer's sample weights).

    Examples:
        >>> import time
        >>> from fl_oracle.experiments.round_step import history_row
        >>> row = history_row(
        ...     t=0, name="random", seed=1, stats_mode="fresh", k=2, ids=["mnist-0", "usps-1"],
        ...     accuracies={"acc_avg": 70.0}, pred={"utility": 71.5}, surrogate="mean",
        ...     solve_seconds=0.01, fallback="", clocks=(time.perf_counter(), time.process_time()),
        ... )
        >>> row["round"], row["selected"], row["acc_avg"], row["pred_utility"], row["pred_gap"]
        (0, 'mnist-0;usps-1', 70.0, 71.5, nan)
        >>> list(row)[-4:]
        ['fallback', 'round_seconds', 'round_cpu_seconds', 'agg_weights']
    """
    nan = float("nan")
    pred = pred or {}
    return {
        "round": t,
        "selector": name,
        "seed": int(seed),
        "stats_mode": stats_mode,
        "k": int(k),
        "selected": ";".join(ids),
        **accuracies,
        "pred_utility": pred.get("utility", nan),
        "pred_gap": pred.get("gap", nan),
        "pred_worst": pred.get("worst", nan),
        "surrogate": surrogate,
        "solve_seconds": float(solve_seconds),
        "route": route,
        "fallback": fallback,
        **{str(key): float(v) for key, v in (state or {}).items()},
        "round_seconds": time.perf_counter() - clocks[0],
        "round_cpu_seconds": time.process_time() - clocks[1],
        **(cost or {}),
        **({} if upper_bound is None else {"upper_bound": bool(upper_bound)}),
        "agg_weights": "" if not weights else ";".join(f"{weights[c]:.6g}" for c in ids),
    }


def selector_state(selector: SelectorLike) -> dict[str, float]:
    """A selector's state after its last round (:meth:`selection.selectors.Selector.state`);
    {} for a plain callable.

    Examples:
        The long-term ε selector carries one queue per domain from round to round:

        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.round_step import selector_state
        >>> stats = example_stats()
        >>> selector = make_selector("eps-lt:5", seed=0)
        >>> _ = selector.choose(SelectionProblem.from_stats(stats[stats["round"] == 2], 5))
        >>> {d: round(q, 2) for d, q in selector_state(selector).items()}
        {'lt_Q_mnist': 0.0, 'lt_Q_usps': 0.0, 'lt_Q_svhn': 18.12, 'lt_Q_syn': 7.16}
        >>> selector_state(lambda table, k: list(table["client_id"][:k]))
        {}
    """
    return dict(as_selector(selector).state())


def check_selection(
    ids: list[str], known, k: int, name: str, where: str, error: type[Exception] = SelectionError
) -> None:
    """The one check of a selector's answer, in every round cycle (in-process and Flower):
    K distinct known client ids (or all of them, for full participation).

    Examples:
        >>> from fl_oracle.experiments.round_step import check_selection
        >>> known = ["a", "b", "c"]
        >>> check_selection(["a", "c"], known, 2, "mine", "round 0")  # passes: no output
        >>> check_selection(["a", "a"], known, 2, "mine", "round 0")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: selector mine returned 2 ids, 1 distinct (unknown:
        none) for k=2 in round 0
    """
    known = list(known)
    unknown = sorted(set(ids) - set(known))
    if unknown or len(set(ids)) != len(ids) or len(ids) not in (k, len(known)):
        raise error(
            f"selector {name} returned {len(ids)} ids, {len(set(ids))} distinct (unknown: "
            f"{', '.join(unknown) or 'none'}) for k={k} in {where}"
        )


def run_selector(
    selector: SelectorLike, table: pd.DataFrame, problem: SelectionProblem
) -> tuple[list[str], float, str]:
    """Run the selector; if it raises InfeasibleError fall back to the best feasible point.

    A :class:`selection.selectors.Selector` is handed the built problem (``choose``); any other
    callable gets ``(table, k)``.

    Examples:
        >>> from selection.errors import InfeasibleError
        >>> from selection.example import example_stats
        >>> from selection.problem import SelectionProblem
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.round_step import run_selector
        >>> stats = example_stats()
        >>> table = stats[stats["round"] == 2]
        >>> problem = SelectionProblem.from_stats(table, 5)
        >>> ids, seconds, fallback = run_selector(make_selector("maxmin:2"), table, problem)
        >>> sorted(ids), fallback
        (['mnist-0', 'mnist-1', 'mnist-3', 'svhn-0', 'svhn-3'], '')
        >>> def picky(table, k):
        ...     raise InfeasibleError("no selection meets eps=0")
        >>> ids, seconds, fallback = run_selector(picky, table, problem)
        >>> sorted(ids)
        ['svhn-0', 'svhn-1', 'svhn-3', 'svhn-4', 'syn-2']
        >>> fallback
        'selector failed (no selection meets eps=0); fell back to the smallest-gap point (gap
        17.3529 pp, U 61.81%)'
    """
    t0 = time.perf_counter()
    selector = as_selector(selector)
    try:
        if isinstance(selector, CallableSelector):  # on the table as the round built it
            raw = selector(table, problem.k)
        else:
            raw = selector.choose(problem)
        ids = [str(c) for c in raw]
        seconds, message = _last_solve_info(selector)
        return ids, (time.perf_counter() - t0) if seconds is None else seconds, message
    except InfeasibleError as exc:
        ids, what = fallback_selection(problem)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ids, time.perf_counter() - t0, f"selector failed ({reason}); fell back to {what}"


@dataclass(frozen=True)
class RoundChoice:
    """One round's choice, as both round cycles record it (the in-process loop here and
    :class:`~fl_oracle.experiments.flower.strategy.FedselStrategy`).

    Attributes:
        problem: the round's problem, judged by the selector's surrogate (logits where given).
        ids: the K chosen client ids.
        solve_seconds: the selector's solve time.
        fallback: "" or why the committed point is not the selector's own answer.
        pred: the chosen selection's predicted objectives (``pred_*`` in the history).
        weights: aggregation weights by client id (q-FFL's, or a rule's own), or None for
            the sample weights.
        route: the backend that answered the problem (``enum``, ``highs``, ``cbc``, ...; what
            ``auto`` chose), "" for a rule that solves nothing.

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.selectors import make_selector
        >>> from fl_oracle.experiments.round_step import choose_round
        >>> stats = example_stats()
        >>> choice = choose_round(make_selector("maxmin:2"), stats[stats["round"] == 2], 5,
        ...                       name="maxmin:2", where="round 2")
        >>> sorted(choice.ids), choice.route, choice.fallback, choice.weights
        (['mnist-0', 'mnist-1', 'mnist-3', 'svhn-0', 'svhn-3'], 'enum', '', None)
        >>> round(choice.pred["utility"], 2), round(choice.pred["worst"], 2)
        (67.18, 54.0)
    """

    problem: SelectionProblem
    ids: list[str]
    solve_seconds: float
    fallback: str
    pred: dict[str, float]
    weights: dict[str, float] | None
    route: str = ""


def choose_round(
    selector: SelectorLike,
    table: pd.DataFrame,
    k: int,
    *,
    name: str,
    where: str,
    surrogate: str = DEFAULT_SURROGATE,
    logits: Any = None,
    q: float | None = None,
    weights_table: pd.DataFrame | None = None,
    error: type[Exception] = SelectionError,
    problem: SelectionProblem | None = None,
    vectors: tuple[Sequence[str], np.ndarray] | None = None,
) -> RoundChoice:
    """The one round step both cycles run: the problem of ``table`` (validated once, judged by
    ``surrogate``), the selector's choice (the smallest-gap point where it finds none), the
    check of its answer, the predicted objectives and q-FFL's weights (``q``; read from
    ``weights_table`` where the selector saw filled-in values). ``problem``: the round's
    problem already built (a rule's :meth:`SelectionProblem.from_clients`), ``table`` its.
    ``vectors``: (ids, rows) of the clients' update vectors a rule reads (``problem.vectors``).

    Examples:
        A plain callable (the 3 lowest-loss clients) with q-FFL weights (q = 1):

        >>> from selection.example import example_stats
        >>> from fl_oracle.experiments.round_step import choose_round
        >>> stats = example_stats()
        >>> def low_loss(table, k):
        ...     return list(table.nsmallest(k, "loss")["client_id"])
        >>> choice = choose_round(low_loss, stats[stats["round"] == 2], 3, name="low-loss",
        ...                       where="round 2", q=1.0)
        >>> choice.ids
        ['mnist-1', 'usps-3', 'mnist-3']
        >>> {c: round(w, 3) for c, w in choice.weights.items()}
        {'mnist-1': 0.486, 'usps-3': 0.061, 'mnist-3': 0.452}
        >>> choice.problem.k, round(choice.pred["gap"], 2)
        (3, 43.17)
    """
    if problem is None:
        problem = SelectionProblem.from_stats(table, k, surrogate=surrogate, logits=logits)
    if vectors is not None:  # a rule reading the clients' update vectors
        problem = problem.with_vectors(*vectors)
    selector = as_selector(selector)
    ids, solve_seconds, fallback = run_selector(selector, table, problem)
    check_selection(ids, problem.ids, k, name, where, error)
    source = table if weights_table is None else weights_table
    # the spec's agg= first, then a rule's own (1/K for Oort, power-of-choice, FedCor,
    # clustered sampling), then q-FFL's q; None: the trainer's sample weights
    weights = selector.aggregation_weights(problem, ids)
    if weights is None and q is not None:
        weights = qffl_weights(source, ids, float(q))
    pos = {c: i for i, c in enumerate(problem.ids)}
    judged = problem  # agg=best: predicted under the weights chosen with the picks
    if selector.chosen_aggregation is not None:
        judged = problem.with_aggregation(selector.chosen_aggregation)
    pred = evaluate_objectives(judged, [pos[c] for c in ids])
    route = "" if selector.last is None else str(selector.last.backend or "")
    return RoundChoice(problem, ids, solve_seconds, fallback, pred, weights, route)
