"""``fedsel oracle``: a thin wrapper over :mod:`fl_oracle.experiments.oracle_run`. Nothing here
imports torch at module level, so ``fedsel --help`` stays torch-free.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from fl_oracle.cli.options import NO_PROGRESS, federation_options
from selection.words import counted

__all__ = ["register"]


@federation_options(
    "data_root", "data", "dataset", "resolution", "split_file", "clients_per_domain",
    "samples_per_client", "dirichlet_alpha", "size_sigma", "val_per_domain", "test_per_domain",
    "model", "lr", "batch_size", "local_epochs", "mu", "gamma", "aggregation", "fisher_samples",
    "threads", "device",
)  # fmt: skip
def oracle(
    rounds: int = typer.Option(..., "--rounds", "-r", min=1, help="Total rounds R."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of partition, model and training."),
    k: int | None = typer.Option(None, "--k", "-k", min=1, help="Clients per round (default all)."),
    federation: dict[str, Any] | None = None,
    adaptive_mu: bool = typer.Option(False, "--adaptive-mu", help="Adapt mu to the global loss."),
    local_holdout: int = typer.Option(
        100, "--local-holdout", min=0, help="Local hold-out samples per client (U_local; 0 = off)."
    ),
    fisher_method: str = typer.Option(
        "layerwise", "--fisher-method", help="layerwise (fast) | vmap (torch.func)."
    ),
    cache_dir: str | None = typer.Option(None, "--cache-dir", help="Generated-data cache."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the run --out holds (its files are deleted)."
    ),
    measure_every: int | None = typer.Option(
        None,
        "--measure-every",
        min=1,
        help="Measure every N-th round; the others only train.",
        show_default="1, or none when --measure-at is given",
    ),
    measure_from: int = typer.Option(
        0, "--measure-from", min=0, help="First round of the --measure-every schedule."
    ),
    measure_at: str | None = typer.Option(
        None,
        "--measure-at",
        help="Rounds to measure, comma-separated (e.g. 0,10,30): alone, only these; with "
        "--measure-every, these as well.",
    ),
    no_logits: bool = typer.Option(
        False,
        "--no-logits",
        help="Do not write each measured round's per-client validation logits to DIR/logits/ "
        "(float16; the ensemble surrogate reads them).",
    ),
    no_progress: bool = NO_PROGRESS,
) -> None:
    """Train R federated rounds and write DIR/stats.parquet, stats.csv, rounds.csv, logits/,
    checkpoints."""
    from fl_oracle.cli.options import make_config
    from fl_oracle.experiments.oracle_run import run_oracle

    config = make_config(
        seed,
        federation,
        k=k,
        adaptive_mu=adaptive_mu,
        local_holdout=local_holdout,
        fisher_method=fisher_method,
    )
    from fl_oracle.experiments.oracle_run import measure_schedule

    try:
        at = [int(v) for v in measure_at.split(",") if v.strip()] if measure_at else []
    except ValueError:
        raise typer.BadParameter(
            f"{measure_at!r} is not a comma-separated list of rounds", param_hint="--measure-at"
        ) from None
    if measure_every is None:  # --measure-at alone measures only those rounds
        measure_every = None if at and measure_from == 0 else 1
    schedule = measure_schedule(measure_every, measure_from, at)
    full = measure_every == 1 and measure_from == 0
    from fl_oracle.cli import interrupt_hint
    from selection.progress import rich_progress

    interrupt_hint(
        f"the rounds finished are kept in {out}; add --resume to the same command to continue"
    )
    with rich_progress(enabled=not no_progress, transient=False) as bar:
        table = run_oracle(
            config,
            rounds=rounds,
            out=out,
            resume=resume,
            overwrite=overwrite,
            cache_dir=cache_dir,
            progress=bar,
            measure_round=None if full else schedule,
            write_logits=not no_logits,
        )
    n_rounds = table["round"].nunique() if len(table) else 0
    print(
        f"wrote {counted(len(table), 'row')} over {counted(n_rounds, 'measured round')} to {out / 'stats.parquet'}",
        file=sys.stderr,
    )


def register(app: typer.Typer) -> None:
    """Add the ``oracle`` command to the fedsel app."""
    app.command("oracle")(oracle)
