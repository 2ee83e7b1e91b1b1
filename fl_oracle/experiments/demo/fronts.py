"""Front points and the set-up description of the demo (predicted next to realized values).

:func:`front_points` sweeps the ε and δ fronts of the oracle's current round with
:mod:`selection.solvers.sweeps` and realizes every point with ``oracle.evaluate`` (the aggregate of
exactly those updates, evaluated without stepping the oracle).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from fl_oracle.experiments.loop import OracleLike
from fl_oracle.experiments.round_step import domain_metrics
from selection.problem import SelectionProblem
from selection.solvers.result import point_rows

__all__ = ["front_points"]


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
    from selection.solvers.sweeps import sweep_delta, sweep_eps

    stats = oracle.round_stats()
    problem = SelectionProblem.from_stats(stats, k)
    parts = [sweep_eps(problem, complete=True), sweep_delta(problem, list(delta))]
    front = pd.concat(parts, ignore_index=True)
    front = front[point_rows(front)].reset_index(drop=True)
    domains = list(oracle.domains)
    cache: dict[str, dict] = {}
    rows = []
    for rec in front.to_dict("records"):
        key = str(rec["selected"])
        if key not in cache:
            metrics = oracle.evaluate([s for s in key.split(";") if s], split="val")
            real = domain_metrics(metrics, domains)
            pooled = float(metrics.get("acc_pooled", real["acc_avg"]))
            cache[key] = {
                "real_utility": pooled,
                "real_gap": real["acc_gap"],
                "real_worst": real["acc_worst"],
                **{f"real_{d}": real[f"acc_{d}"] for d in domains},
                "split": "val",
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
