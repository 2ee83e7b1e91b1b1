"""The value of information, read off a raced study: from which quality of its predictions a
formulation is among the best (issue 62).

A value-of-information study races a formulation at several qualities of the ``noisy:R``
information model (fresh truth degraded to a within-round rank correlation of about R/100 with
it) and with fresh truth itself (``R = 100``), beside the baselines. For each formulation and
raced metric the **crossover** is the lowest nominal quality from which the formulation is in
the tied-best set (``best`` or ``tied`` in the race's verdict) at that quality and at every
higher one. Its bracket is (``below``, ``crossover``]: ``below`` is the highest quality under
the crossover at which the formulation was shown worse (none shown worse: the lowest quality
tried bounds nothing, ``below`` is NaN). The achieved rank correlations (the runs' ``info_rho``
averaged over rounds and seeds) translate both ends from nominal R to measured ρ.

The answer per (formulation, metric) is one of:

* ``reached``: in the tied-best set from ``crossover`` up to fresh truth;
* ``none up to fresh``: shown worse even with fresh truth — no quality of prediction makes it
  one of the best;
* ``unresolved``: fresh truth, or a level above the lowest tied one, is neither shown tied nor
  worse (the race's budget ran out before it could say).

Every claim inherits the race's family-wise error rate (:mod:`.racing`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

__all__ = ["FRESH_LEVEL", "entry_level", "crossover_table"]

#: the nominal quality of fresh truth
FRESH_LEVEL = 100


def entry_level(entry: str) -> tuple[str, int] | None:
    """(formulation, nominal quality R) of a study entry read with fresh or ``noisy:R``
    information; None for any other entry (a baseline rule, another information model).

    Examples:
        >>> from fl_oracle.experiments.study.crossover import entry_level
        >>> entry_level("fisher-fair:1@noisy:70"), entry_level("eps-lt:5")
        (('fisher-fair:1', 70), ('eps-lt:5', 100))
        >>> entry_level("fisher-topk") is None, entry_level("eps:5@probe") is None
        (True, True)
    """
    from selection.information.fresh import Fresh
    from selection.information.noisy import Noisy
    from selection.specs import parse_spec

    spec = parse_spec(entry)
    if spec.is_rule:
        return None
    mode = spec.stats_mode
    base = spec.selector_spec
    if mode is None or mode.model is Fresh:
        return base, FRESH_LEVEL
    if mode.model is Noisy:
        return base, int(mode.arg)
    return None


def crossover_table(
    verdict: pd.DataFrame,
    history: pd.DataFrame | None = None,
    *,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The crossover of every formulation raced at several qualities (module docstring).

    Args:
        verdict: the race's verdict (:func:`.racing.race_verdict`: ``metric, entry, status``).
        history: the runs' histories with ``entry`` and ``info_rho`` (the achieved rank
            correlation per round); None: no measured ρ columns.
        metrics: the raced metrics to read (default: the verdict's).

    Returns:
        One row per (formulation, metric): ``levels`` (the nominal qualities raced),
        ``answer``, ``crossover`` and ``below`` (nominal R, NaN where none), ``rho_crossover``
        and ``rho_below`` (the achieved ρ there), ``statuses`` (``R:status`` per level) and
        ``rho_levels`` (``R:achieved ρ`` per level; fresh truth is 1).

    Examples:
        A formulation tied from R = 70 on, shown worse at 60; another shown worse even with
        fresh truth:

        >>> import pandas as pd
        >>> from fl_oracle.experiments.study.crossover import crossover_table
        >>> rows = [("f:1@noisy:50", "worse"), ("f:1@noisy:60", "worse"),
        ...         ("f:1@noisy:70", "tied"), ("f:1@noisy:90", "tied"), ("f:1", "best"),
        ...         ("g:2@noisy:90", "worse"), ("g:2", "worse"), ("fisher-topk", "tied")]
        >>> verdict = pd.DataFrame(rows, columns=["entry", "status"]).assign(metric="final_worst")
        >>> t = crossover_table(verdict)
        >>> t[["formulation", "answer", "crossover", "below"]].values.tolist()
        [['f:1', 'reached', 70.0, 60.0], ['g:2', 'none up to fresh', nan, nan]]
    """
    levels: dict[str, tuple[str, int]] = {}
    for entry in dict.fromkeys(verdict["entry"]):
        found = entry_level(str(entry))
        if found is not None:
            levels[str(entry)] = found
    rho: dict[str, float] = {}
    if history is not None and "info_rho" in history.columns:
        rho = history.groupby("entry")["info_rho"].mean().to_dict()
    by_form: dict[str, dict[int, str]] = {}
    for entry, (form, level) in levels.items():
        by_form.setdefault(form, {})[level] = entry
    out = []
    for metric in metrics or list(dict.fromkeys(verdict["metric"])):
        status = verdict[verdict["metric"] == metric].set_index("entry")["status"].to_dict()
        for form, at in by_form.items():
            ladder = sorted(at)
            if len(ladder) < 2 or FRESH_LEVEL not in at:
                continue
            seen = {r: status.get(at[r], "unresolved") for r in ladder}
            out.append(_answer(form, metric, ladder, seen, at, rho))
    return pd.DataFrame(out)


def _answer(form, metric, ladder, seen, at, rho) -> dict:
    nan = math.nan
    tied = {"best", "tied"}

    def measured(level) -> float:
        if level is None or (isinstance(level, float) and math.isnan(level)):
            return nan
        if level == FRESH_LEVEL:
            return 1.0
        return float(rho.get(at[level], nan))

    cross = below = nan
    if seen[FRESH_LEVEL] == "worse":
        answer = "none up to fresh"
    elif seen[FRESH_LEVEL] not in tied:
        answer = "unresolved"
    else:
        answer = "reached"
        for level in reversed(ladder):  # the tied run down from fresh truth
            if seen[level] not in tied:
                break
            cross = float(level)
        worse = [r for r in ladder if r < cross and seen[r] == "worse"]
        below = float(max(worse)) if worse else nan
    return {
        "formulation": form,
        "metric": metric,
        "levels": ";".join(str(r) for r in ladder),
        "answer": answer,
        "crossover": cross,
        "below": below,
        "rho_crossover": measured(cross),
        "rho_below": measured(below),
        "statuses": ";".join(f"{r}:{seen[r]}" for r in ladder),
        "rho_levels": ";".join(f"{r}:{measured(r):.3f}" for r in ladder),
    }
