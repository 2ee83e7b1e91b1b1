"""``fedsel oracle``: the training loop with a measuring selector and a per-round checkpoint.

The run is :func:`fl_oracle.experiments.loop.run_training` with fresh statistics and the
:class:`MeasuringSampler` (K clients ∝ n_samples from the round's own seeded stream; all
clients when K is None). After each round t the ``on_round`` hook writes
``stats.parquet``/``stats.csv`` (all rounds so far), ``rounds.csv`` (one row per round:
selection, global stats at w_t, test accuracy of w_{t+1}) and ``checkpoints/round_<t+1>.pt``,
each atomically and in that order. A kill at any moment therefore leaves a checkpoint no newer
than the tables; ``resume`` reloads the newest checkpoint, drops table rows of later rounds and
recomputes them, which gives exactly the tables of an uninterrupted run because every random
stream is a function of (seed, round).

Measure schedule: rounds t with ``measure_round(t)`` false (see :func:`measure_schedule`) only
train; ``stats.*`` then holds the measured rounds only and ``rounds.csv`` marks each round's
``measured``. Training is the same either way, so a measured round's statistics equal those
of a run measuring every round.

Provenance: once the data is loaded, one line per domain goes to stderr and ``config.toml``
gets the ``[sources.<domain>.<split>]`` records and the ``[run]`` record (version, commit,
torch, device, threads). A resume whose data hashes differ from the recorded ones is refused.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from fl_oracle.errors import CheckpointError, OracleError
from fl_oracle.experiments.loop import run_training
from fl_oracle.experiments.plan import plan_run
from fl_oracle.sim.checkpoint import (
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from fl_oracle.sim.config import OracleConfig
from selection.atomic import write_table_atomic, write_text_atomic
from selection.logits import logits_path
from selection.logits import write_logits as write_logits_file
from selection.progress import ProgressFn, report
from selection.selectors import proportional_sample

__all__ = ["run_oracle", "sample_clients", "MeasuringSampler", "measure_schedule"]


def measure_schedule(
    every: int | None = 1, start: int = 0, at: Iterable[int] | None = None
) -> Callable[[int], bool]:
    """The predicate "round t is measured": t >= start and (t - start) % every == 0, or t in at.

    Args:
        every: measure every ``every``-th round from ``start`` (>= 1); None: no regular
            schedule, only the rounds ``at``.
        start: first measured round of the regular schedule (>= 0).
        at: further rounds to measure (e.g. early / middle / trained stages).
    """
    if every is None:
        only = {int(t) for t in (at or ())}
        if not only or any(t < 0 for t in only):
            raise OracleError(f"measure only at rounds {sorted(only)}: give rounds >= 0")
        return lambda t: t in only
    if isinstance(every, bool) or int(every) != every or every < 1:
        raise OracleError(f"measure every {every!r} rounds: must be an integer >= 1")
    if isinstance(start, bool) or int(start) != start or start < 0:
        raise OracleError(f"measure from round {start!r}: must be an integer >= 0")
    extra = {int(t) for t in (at or ())}
    if any(t < 0 for t in extra):
        raise OracleError(f"measure at rounds {sorted(extra)}: rounds are >= 0")
    every, start = int(every), int(start)

    def measured(t: int) -> bool:
        return t in extra or (t >= start and (t - start) % every == 0)

    return measured


def _record_text(config: OracleConfig, oracle) -> str:
    from fl_oracle.experiments.run_record import record_toml, run_record
    from fl_oracle.sim.data.provenance import provenance_toml

    rec = run_record(oracle.device)
    return config.to_toml() + "\n" + provenance_toml(oracle.provenance) + "\n" + record_toml(rec)


def _check_same_data(stored_text: str, oracle, out: Path) -> None:
    from fl_oracle.sim.data.provenance import read_provenance

    stored = read_provenance(stored_text)
    for d, splits in stored.items():
        for s_, rec in splits.items():
            now = oracle.provenance.get(d, {}).get(s_)
            if now is not None and rec.get("sha256") != now["sha256"]:
                raise CheckpointError(
                    f"cannot resume {out}: the {d} {s_} data changed (sha256 {rec.get('sha256')} "
                    f"recorded, {now['sha256']} now; {now['kind']} {now['path']})"
                )


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
    rng = np.random.default_rng(np.random.SeedSequence([seed, round_, 0x5E1EC7]))
    return [ids[i] for i in proportional_sample(clients["n_samples"].to_numpy(), k, rng)]


class MeasuringSampler:
    """The oracle run's selector: :func:`sample_clients` on the round's statistics table."""

    def __init__(self, k: int | None, seed: int) -> None:
        self.k, self.seed = k, int(seed)

    def __call__(self, table: pd.DataFrame, k: int) -> list[str]:
        round_ = int(table["round"].max())
        return sample_clients(
            table[table["round"] == round_], self.k, seed=self.seed, round_=round_
        )


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


def _check_prior(out: Path, stats, hist, start: int, measure_round, n_clients: int) -> None:
    """The stored tables of a resumed run hold exactly the rounds before ``start``: every
    measured round once with each client once (``stats.parquet``), every round once
    (``rounds.csv``). CheckpointError naming the file otherwise (never carried on)."""
    want = [t for t in range(start) if measure_round is None or measure_round(t)]
    if stats is not None and len(stats):
        got = sorted(int(r) for r in stats["round"].unique())
        if got != want:
            raise CheckpointError(
                f"cannot resume {out}: stats.parquet holds rounds {got[:5]}"
                f"{'...' if len(got) > 5 else ''}, the checkpoint implies {want[:5]}"
                f"{'...' if len(want) > 5 else ''}"
            )
        dup = stats.duplicated(["round", "client_id"])
        sizes = stats.groupby("round").size()
        if dup.any() or (sizes != n_clients).any():
            r = (
                int(stats["round"][dup].iloc[0])
                if dup.any()
                else int(sizes.index[sizes != n_clients][0])
            )
            raise CheckpointError(
                f"cannot resume {out}: stats.parquet round {r} does not hold each of the "
                f"{n_clients} clients once"
            )
    if hist is not None:
        got = [int(r) for r in hist["round"]]
        if got != list(range(start)):
            raise CheckpointError(
                f"cannot resume {out}: rounds.csv holds rounds {got[:5]}"
                f"{'...' if len(got) > 5 else ''}, not 0..{start - 1} once each"
            )


def run_oracle(
    config: OracleConfig,
    *,
    rounds: int,
    out: str | Path,
    resume: bool = False,
    overwrite: bool = False,
    **kwargs,
) -> pd.DataFrame:
    """:func:`_run_oracle` holding ``out`` (:func:`~fl_oracle.experiments.runfolder.claim_run_folder`).

    The folder is locked for the run's lifetime; a folder holding another run is refused
    unless ``resume`` or ``overwrite`` (delete that run's files first); a fresh run that fails
    before its first checkpoint leaves no files behind. Other arguments as :func:`_run_oracle`.
    """
    from fl_oracle.experiments.runfolder import claim_run_folder

    if overwrite and kwargs.get("data") is None:  # fail on the data before deleting the old run
        from fl_oracle.sim.loading import load_federation_data

        kwargs["data"] = load_federation_data(
            config, cache_dir=kwargs.get("cache_dir"), progress=kwargs.get("progress")
        )
    with claim_run_folder(out, "oracle", resume=resume, overwrite=overwrite):
        return _run_oracle(config, rounds=rounds, out=out, resume=resume, **kwargs)


def _run_oracle(
    config: OracleConfig,
    *,
    rounds: int,
    out: str | Path,
    resume: bool = False,
    data: dict | None = None,
    cache_dir: str | None = None,
    progress: ProgressFn | None = None,
    after_round: Callable[[int], None] | None = None,
    measure_round: Callable[[int], bool] | None = None,
    write_logits: bool = True,
) -> pd.DataFrame:
    """Train ``rounds`` rounds (in total, counting resumed ones) and write the run folder.

    Args:
        config: the simulation configuration.
        rounds: total number of rounds R.
        out: run folder (``stats.parquet``, ``stats.csv``, ``rounds.csv``, ``config.toml``,
            ``checkpoints/``).
        resume: continue the run in ``out`` (its ``config.toml`` must equal ``config``).
        write_logits: also write each measured round's per-client validation logits to
            ``logits/round_<tttt>.npz`` (:mod:`selection.logits`; what ``--surrogate
            ensemble`` reads).
        data: injected ``{domain: {"train", "test"}}`` data (tests); None = load.
        cache_dir: cache folder of generated data.
        progress: ``(done, total, label)`` callback over rounds (:mod:`selection.progress`).
        after_round: called with t after round t is fully written (tests simulate kills).
        measure_round: predicate "round t is measured" (:func:`measure_schedule`); None =
            every round.

    Returns:
        The stats table of every round so far.
    """
    from fl_oracle.sim.oracle import Oracle

    if rounds < 1:
        raise OracleError(f"rounds={rounds} must be >= 1")
    out = Path(out)
    cfg_path, ckdir = out / "config.toml", out / "checkpoints"
    if resume and not cfg_path.is_file() and latest_checkpoint(ckdir) is None:
        resume = False  # killed before it wrote anything to continue from: start it afresh
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
    # a fresh run's record is written below, once the oracle (and its data) could be built

    oracle = Oracle(config, data=data, cache_dir=cache_dir, progress=progress)
    from fl_oracle.sim.data.provenance import provenance_lines

    for line in provenance_lines(oracle.provenance):
        print(line, file=sys.stderr)
    if resume:
        _check_same_data(cfg_path.read_text(encoding="utf-8"), oracle, out)
    write_text_atomic(_record_text(config, oracle), cfg_path)
    start = 0
    if resume and (ck := latest_checkpoint(ckdir)) is not None:
        oracle.load_state_dict(load_checkpoint(ck)["oracle"])
        start = oracle.round
    prior = _read_prior(out / "stats.parquet", start) if resume else None
    stats = [prior] if prior is not None and len(prior) else []
    hist_prior = _read_prior(out / "rounds.csv", start) if resume else None
    history = hist_prior.to_dict("records") if hist_prior is not None else []
    measured_before = any(measure_round is None or measure_round(t) for t in range(start))
    if resume:
        _check_prior(out, prior, hist_prior, start, measure_round, len(oracle.clients))
    if len(history) != start or (measured_before and not stats):
        raise CheckpointError(
            f"cannot resume {out}: tables hold fewer rounds than checkpoint {start}"
        )

    if start >= rounds:
        return pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()
    report(progress, start, rounds, "oracle rounds")

    kept: dict[int, object] = {}

    def before_step() -> dict:
        if (
            write_logits and oracle.measured_clients
        ):  # a measured round: keep its logits for the hook
            kept[oracle.round] = oracle.round_logits()
        g = oracle.global_stats()
        return {f"wt_{key}": g[key] for key in ("global_loss", "B_dissimilarity", "mu")}

    def on_round(row: dict, table: pd.DataFrame) -> None:
        t = int(row["round"])
        rec = {"round": t, "selected": row["selected"]}
        rec.update({key: row[f"wt_{key}"] for key in ("global_loss", "B_dissimilarity", "mu")})
        rec.update({key: row[key] for key in acc_keys})
        rec["measured"] = bool(row.get("measured", True))
        history.append(rec)
        if rec["measured"]:
            stats.append(table.drop(columns=["measured_round", "chosen"]))
            whole = pd.concat(stats, ignore_index=True)
            write_table_atomic(whole, out / "stats.parquet")
            write_table_atomic(whole, out / "stats.csv")
        if t in kept:
            write_logits_file(kept.pop(t), logits_path(out, t))
        write_table_atomic(pd.DataFrame(history), out / "rounds.csv")
        save_checkpoint({"oracle": oracle.state_dict()}, checkpoint_path(ckdir, t + 1))
        report(progress, t + 1, rounds, "oracle rounds")
        if after_round is not None:
            after_round(t)

    acc_keys = [f"acc_{d}" for d in oracle.domains] + ["acc_pooled", "acc_avg", "acc_worst"]
    n = len(oracle.clients)
    plan = plan_run(
        MeasuringSampler(config.k, config.seed),
        rounds=rounds - start,
        k=n if config.k is None else min(int(config.k), n),
        name="proportional",
        seed=config.seed,
        keep_metrics=("acc_pooled",),
        measure=measure_round,
    )
    run_training(oracle, plan, on_round=on_round, before_step=before_step)
    return pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()
