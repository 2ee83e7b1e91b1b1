"""``fedsel oracle``: a thin wrapper over :mod:`fl_oracle.experiments.oracle_run`. Nothing here
imports torch at module level, so ``fedsel --help`` stays torch-free.
"""

from __future__ import annotations

from pathlib import Path

import typer

from fl_oracle.cli.options import (
    DATASET_HELP,
    MODEL_HELP,
    SIZES_HELP,
    SPLIT_HELP,
    parse_sizes,
    size_sigma_option,
)
from fl_oracle.sim.choices import DATA_HELP

__all__ = ["register"]


def oracle(
    rounds: int = typer.Option(..., "--rounds", "-r", min=1, help="Total rounds R."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of partition, model and training."),
    data_root: str | None = typer.Option(None, "--data-root", help="Folder with real datasets."),
    data: str = typer.Option("auto", "--data", help=DATA_HELP),
    mu: float = typer.Option(0.0, "--mu", help="FedProx proximal coefficient (0 = FedAvg)."),
    adaptive_mu: bool = typer.Option(False, "--adaptive-mu", help="Adapt mu to the global loss."),
    gamma: float = typer.Option(0.0, "--gamma", help="gamma-inexact stop (0 = off)."),
    k: int | None = typer.Option(None, "--k", "-k", min=1, help="Clients per round (default all)."),
    clients_per_domain: int = typer.Option(
        5, "--clients-per-domain", min=1, help="Clients of each domain."
    ),
    samples_per_client: str | None = typer.Option(
        None, "--samples-per-client", help=SIZES_HELP, show_default="1% of each Digits-4 set"
    ),
    local_epochs: float = typer.Option(1.0, "--local-epochs", help="Local epoch budget."),
    lr: float = typer.Option(0.05, "--lr", help="Local SGD step size."),
    batch_size: int = typer.Option(32, "--batch-size", min=1, help="Local SGD batch size."),
    dirichlet_alpha: float | None = typer.Option(None, "--dirichlet-alpha", help="Label skew."),
    size_sigma: float | None = size_sigma_option(),
    val_per_domain: int | None = typer.Option(
        None,
        "--val-per-domain",
        min=1,
        help="Validation images per domain (the U readings).",
        show_default="500; with --dataset 15% of its smallest domain, at most 500",
    ),
    local_holdout: int = typer.Option(
        100, "--local-holdout", min=0, help="Local hold-out samples per client (U_local; 0 = off)."
    ),
    test_per_domain: int | None = typer.Option(
        None,
        "--test-per-domain",
        min=1,
        help="Test images per domain (realized accuracy).",
        show_default="the whole test split",
    ),
    fisher_samples: int = typer.Option(64, "--fisher-samples", min=0, help="Probe cap (0 = all)."),
    fisher_method: str = typer.Option(
        "layerwise", "--fisher-method", help="layerwise (fast) | vmap (torch.func)."
    ),
    threads: int | None = typer.Option(None, "--threads", min=1, help="torch threads."),
    aggregation: str = typer.Option("samples", "--aggregation", help="samples | uniform."),
    model: str = typer.Option("cnn", "--model", help=MODEL_HELP),
    dataset: Path | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    resolution: int = typer.Option(
        32, "--resolution", min=4, help="Side --dataset images are resized to."
    ),
    split_file: Path | None = typer.Option(None, "--split-file", help=SPLIT_HELP),
    device: str = typer.Option("auto", "--device", help="auto | cpu | cuda."),
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
    no_progress: bool = typer.Option(False, "--no-progress", help="Draw no progress bar."),
) -> None:
    """Train R federated rounds and write DIR/stats.parquet, stats.csv, rounds.csv, logits/,
    checkpoints."""
    from fl_oracle.cli.train import make_config
    from fl_oracle.experiments.oracle_run import run_oracle

    config = make_config(
        seed,
        dataset=None if dataset is None else str(dataset),
        resolution=resolution,
        split_file=None if split_file is None else str(split_file),
        clients_per_domain=clients_per_domain,
        samples_per_client=parse_sizes(samples_per_client),
        dirichlet_alpha=dirichlet_alpha,
        size_sigma=size_sigma,
        val_per_domain=val_per_domain,
        local_holdout=local_holdout,
        test_per_domain=test_per_domain,
        data_root=data_root,
        data_mode=data,
        model=model,
        lr=lr,
        batch_size=batch_size,
        local_epochs=local_epochs,
        mu=mu,
        adaptive_mu=adaptive_mu,
        gamma=gamma,
        k=k,
        aggregation=aggregation,
        fisher_samples=fisher_samples or None,
        fisher_method=fisher_method,
        threads=threads,
        device=device,
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
    print(f"wrote {len(table)} rows over {n_rounds} measured rounds to {out / 'stats.parquet'}")


def register(app: typer.Typer) -> None:
    """Add the ``oracle`` command to the fedsel app."""
    app.command("oracle")(oracle)
