"""The ``fedsel oracle`` run loop: train R rounds, write stats and a checkpoint per round.

Each round t: measure every client at w_t (``round_stats``), sample K clients proportionally
to n_samples from the round's own seeded stream (all clients when K is None), commit their
aggregation (``step``), then write ``stats.parquet``/``stats.csv`` (all rounds so far),
``rounds.csv`` (one row per round: selection, global stats at w_t, test accuracy of w_{t+1})
and ``checkpoints/round_<t+1>.pt``, each atomically and in that order. A kill at any moment
therefore leaves a checkpoint no newer than the tables; ``resume`` reloads the newest
checkpoint, drops table rows of later rounds and recomputes them, which gives exactly the
tables of an uninterrupted run because every random stream is a function of (seed, round).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from fl_oracle.errors import CheckpointError, OracleError
from fl_oracle.sim.checkpoint import (
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from fl_oracle.sim.config import OracleConfig
from selection.atomic import write_table_atomic, write_text_atomic

__all__ = ["run_oracle", "sample_clients"]


def sample_clients(clients: pd.DataFrame, k: int | None, *, seed: int, round_: int) -> list[str]:
    """K client ids drawn without replacement with probability proportional to n_samples.

    Args:
        clients: the oracle's ``clients`` table (client_id, n_samples).
        k: how many; None = all clients.
        seed: the run's seed.
        round_: the round (each round has its own stream).

    Returns:
        The ids in federation order.
    """
    ids = clients["client_id"].tolist()
    if k is None or k >= len(ids):
        return ids
    if k < 1:
        raise OracleError(f"k={k} must be >= 1")
    n = clients["n_samples"].to_numpy(dtype=float)
    rng = np.random.default_rng(np.random.SeedSequence([seed, round_, 0x5E1EC7]))
    pick = rng.choice(len(ids), size=k, replace=False, p=n / n.sum())
    return [ids[i] for i in sorted(pick)]


def _config_diff(a: OracleConfig, b: OracleConfig) -> list[str]:
    return [f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)]


def _read_prior(path: Path, start: int) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
    else:
        df = pd.read_csv(path, dtype={"client_id": str, "domain": str, "selected": str})
    return df[df["round"] < start].reset_index(drop=True)


def run_oracle(
    config: OracleConfig,
    *,
    rounds: int,
    out: str | Path,
    resume: bool = False,
    data: dict | None = None,
    cache_dir: str | None = None,
    progress: bool = True,
    after_round: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Train ``rounds`` rounds (in total, counting resumed ones) and write the run folder.

    Args:
        config: the simulation configuration.
        rounds: total number of rounds R.
        out: run folder (``stats.parquet``, ``stats.csv``, ``rounds.csv``, ``config.toml``,
            ``checkpoints/``).
        resume: continue the run in ``out`` (its ``config.toml`` must equal ``config``).
        data: injected ``{domain: {"train", "test"}}`` data (tests); None = load.
        cache_dir: cache folder of generated data.
        progress: show a rich progress bar over rounds and clients.
        after_round: called with t after round t is fully written (tests simulate kills).

    Returns:
        The stats table of every round so far.
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from fl_oracle.sim.oracle import Oracle

    if rounds < 1:
        raise OracleError(f"rounds={rounds} must be >= 1")
    out = Path(out)
    cfg_path, ckdir = out / "config.toml", out / "checkpoints"
    if resume:
        if not cfg_path.is_file():
            raise CheckpointError(f"cannot resume: {cfg_path} not found")
        stored = OracleConfig.from_toml(cfg_path.read_text(encoding="utf-8"))
        if stored != config:
            raise CheckpointError(
                f"cannot resume {out}: it was run with other "
                f"{', '.join(_config_diff(stored, config))}"
            )
    elif cfg_path.exists() or latest_checkpoint(ckdir) is not None:
        raise CheckpointError(f"{out} already holds a run; pass --resume or choose another --out")
    else:
        write_text_atomic(config.to_toml(), cfg_path)

    oracle = Oracle(config, data=data, cache_dir=cache_dir, progress=progress)
    start = 0
    if resume and (ck := latest_checkpoint(ckdir)) is not None:
        oracle.load_state_dict(load_checkpoint(ck)["oracle"])
        start = oracle.round
    prior = _read_prior(out / "stats.parquet", start) if resume else None
    stats = [prior] if prior is not None and len(prior) else []
    hist_prior = _read_prior(out / "rounds.csv", start) if resume else None
    history = hist_prior.to_dict("records") if hist_prior is not None else []
    if len(history) != start or (start and not stats):
        raise CheckpointError(
            f"cannot resume {out}: tables hold fewer rounds than checkpoint {start}"
        )

    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f}"),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, disable=not progress, transient=False) as bar:
        t_rounds = bar.add_task("rounds", total=rounds, completed=start)
        t_clients = bar.add_task("client steps", total=1)
        for t in range(start, rounds):
            bar.update(t_clients, completed=0, description=f"round {t}: local training")
            df = oracle.round_stats(
                callback=lambda d, n: bar.update(t_clients, completed=d, total=n)
            )
            selected = sample_clients(oracle.clients, config.k, seed=config.seed, round_=t)
            before = oracle.global_stats()
            after = oracle.step(selected)
            row = {
                "round": t,
                "selected": ";".join(selected),
                "global_loss": before["global_loss"],
                "B_dissimilarity": before["B_dissimilarity"],
                "mu": before["mu"],
            }
            row.update({k: v for k, v in after.items() if k.startswith("acc_")})
            history.append(row)
            stats.append(df)
            table = pd.concat(stats, ignore_index=True)
            write_table_atomic(table, out / "stats.parquet")
            write_table_atomic(table, out / "stats.csv")
            write_table_atomic(pd.DataFrame(history), out / "rounds.csv")
            save_checkpoint({"oracle": oracle.state_dict()}, checkpoint_path(ckdir, t + 1))
            bar.update(t_rounds, completed=t + 1)
            if after_round is not None:
                after_round(t)
    return pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()
