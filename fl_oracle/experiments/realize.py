"""Replay one round of a ``fedsel oracle`` run and measure selections' true aggregates.

The run folder holds ``config.toml`` and ``checkpoints/round_<t>.pt`` (the state w_t before
round t; round 0 is the configuration's initial model). Rebuilding the oracle from them and
training the selected clients locally again gives the round's updates Δ_i exactly on the host
that made the run (and to floating-point noise elsewhere); each selection's value is then
:meth:`~fl_oracle.sim.oracle.Oracle.evaluate_aggregate`, the validation accuracy of
w_t + Σ p_i Δ_i — what the surrogates predict. Registered with :mod:`selection.realize` for
``fedsel sweep --realize`` by name (``fl_oracle.cli``), so the CLI imports this only when a
sweep asks for realized points.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from fl_oracle.errors import CheckpointError, OracleError
from selection.realize import Realized

__all__ = ["realize_selections", "is_oracle_run"]


def is_oracle_run(folder: Path) -> bool:
    """A folder ``fedsel oracle`` wrote: ``config.toml`` and a ``checkpoints/`` folder."""
    folder = Path(folder)
    return (folder / "config.toml").is_file() and (folder / "checkpoints").is_dir()


def realize_selections(
    folder: str | Path,
    round_: int,
    selections: Sequence[Sequence[str]],
    table: pd.DataFrame | None = None,
    *,
    data: dict | None = None,
) -> Realized:
    """Realized U(S), U_d(S) of ``selections`` (client ids) at round ``round_`` of the run.

    Args:
        folder: the oracle run folder.
        round_: the round t whose model w_t the selections are aggregated onto.
        selections: client-id tuples.
        table: the stored statistics of round t (``U_<domain>`` per client) to measure how
            exactly this host reproduces the run (``Realized.drift``); None skips it.
        data: injected federation data (tests); None loads what ``config.toml`` names.
    """
    from fl_oracle.sim.checkpoint import checkpoint_path, load_checkpoint
    from fl_oracle.sim.config import OracleConfig
    from fl_oracle.sim.oracle import Oracle

    folder = Path(folder)
    try:
        config = OracleConfig.from_toml((folder / "config.toml").read_text(encoding="utf-8"))
    except OSError as exc:
        raise CheckpointError(f"cannot read {folder / 'config.toml'}: {exc.strerror}") from exc
    oracle = Oracle(config, data=data)
    if round_ > 0:
        ck = checkpoint_path(folder / "checkpoints", round_)
        if not ck.is_file():
            raise CheckpointError(
                f"cannot replay round {round_} of {folder}: no checkpoint {ck.name} "
                "(the run stopped earlier, or its checkpoints were removed)"
            )
        oracle.load_state_dict(load_checkpoint(ck)["oracle"])
        if oracle.round != round_:
            raise CheckpointError(f"{ck} holds round {oracle.round}, not {round_}")
    known = set(oracle.clients["client_id"])
    for sel in selections:
        bad = [c for c in sel if c not in known]
        if bad:
            raise OracleError(f"selection names client {bad[0]!r}, not in the run {folder}")
    U = np.empty(len(selections))
    Ud = np.empty((len(selections), len(oracle.domains)))
    for m, sel in enumerate(selections):
        U[m], Ud[m] = oracle.evaluate_aggregate(list(sel))
    drift = float("nan")
    if table is not None and len(table):
        rows = table[table["client_id"].isin({c for sel in selections for c in sel})]
        cols = [f"U_{d}" for d in oracle.domains]
        if len(rows) and all(c in rows.columns for c in cols):
            again = np.stack([oracle.evaluate_aggregate([c])[1] for c in rows["client_id"]])
            drift = float(np.abs(again - rows[cols].to_numpy(float)).max())
    return Realized(utility=U, domain=Ud, domains=tuple(oracle.domains), drift=drift)
