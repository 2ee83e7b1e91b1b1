"""Realized values of selections: what training would make of a front's points.

A front's objectives are *predictions* (a surrogate of U(S), U_d(S) from the round's
statistics). Where the run that produced the statistics can be replayed (an oracle run
folder holds its configuration and a checkpoint per round), the *realized* values — the
validation accuracy of the sample-weighted aggregate w_t + Σ p_i Δ_i of each selection — can be
measured and drawn beside them (``fedsel sweep --realize``).

This module is torch-free: it holds the registry of *realizers* (callables that can replay a
run of some kind) and the arithmetic that turns realized per-domain accuracies into realized
objective columns. The oracle registers its realizer when the ``fedsel`` commands are built
(:mod:`fl_oracle.experiments.realize`), so ``selection`` never imports the simulator.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selection.errors import SelectionError

if TYPE_CHECKING:  # numpy and pandas load with the first realization, not with the CLI
    import numpy as np
    import pandas as pd

__all__ = [
    "Realized",
    "register_realizer",
    "realizer_for",
    "realized_columns",
    "REALIZABLE",
]

#: Objectives that depend on U_d(S) and so have a realized counterpart.
REALIZABLE = ("utility", "gap", "worst", "mean_minus_worst", "var_d")


@dataclass(frozen=True)
class Realized:  # the fields are numpy arrays (numpy is imported by whoever makes one)
    """Realized values of M selections at one round.

    Attributes:
        utility: (M,) pooled validation accuracy (%) of each selection's aggregate.
        domain: (M, D) per-domain validation accuracy (%), columns in ``domains`` order.
        domains: the domain names.
        drift: the largest |U_i recomputed − U_i stored| (pp) over the single clients replayed:
            0 on the host that made the run, small elsewhere (floating point differs
            across CPUs); NaN when the stored table was not given.
    """

    utility: np.ndarray
    domain: np.ndarray
    domains: tuple[str, ...]
    drift: float = float("nan")


#: ``fn(folder, round, selections, table) -> Realized``; ``table`` is the stored statistics of
#: that round (for the drift check) or None.
RealizeFn = Callable[[Path, int, Sequence[Sequence[str]], "pd.DataFrame | None"], Realized]
_REALIZERS: list[tuple[str, Any, Any]] = []


def _resolve(target):
    """A callable, or ``"module:attr"`` imported on first use (registration stays cheap)."""
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    return target


def register_realizer(
    name: str, accepts: Callable[[Path], bool] | str, fn: RealizeFn | str
) -> None:
    """Register ``fn`` for run folders ``accepts(folder)`` recognizes (idempotent by name);
    either may be a ``"module:attr"`` string, imported when a folder is first tried."""
    global _REALIZERS
    _REALIZERS = [r for r in _REALIZERS if r[0] != name]
    _REALIZERS.append((name, accepts, fn))


def realizer_for(folder: Path) -> RealizeFn:
    """The registered realizer that can replay the run in ``folder`` (SelectionError if none)."""
    for _name, accepts, fn in _REALIZERS:
        if _resolve(accepts)(folder):
            return _resolve(fn)
    kinds = ", ".join(n for n, _, _ in _REALIZERS) or "none registered"
    raise SelectionError(
        f"--realize needs the run folder the statistics came from (a fedsel oracle run: "
        f"config.toml and checkpoints/); {folder} is not one ({kinds})"
    )


def realized_columns(realized: Realized, domains: Sequence[str]) -> pd.DataFrame:
    """``realized_<objective>`` (for :data:`REALIZABLE`) and ``realized_U_<domain>`` columns."""
    import pandas as pd

    index = {d: j for j, d in enumerate(realized.domains)}
    missing = [d for d in domains if d not in index]
    if missing:
        raise SelectionError(f"the replayed run has no domain {missing[0]!r}")
    Ud = realized.domain[:, [index[d] for d in domains]]
    worst = Ud.min(1)
    out = {
        "realized_utility": realized.utility,
        "realized_gap": Ud.max(1) - worst,
        "realized_worst": worst,
        "realized_mean_minus_worst": Ud.mean(1) - worst,
        "realized_var_d": Ud.var(1),
    }
    for j, d in enumerate(domains):
        out[f"realized_U_{d}"] = Ud[:, j]
    return pd.DataFrame(out)
