"""``fedsel flower``: live training with a selector, run as a Flower simulation.

The Digits-4 federation of ``fedsel train`` on Flower's simulation engine (Ray): one SuperNode
per client, :class:`fl_oracle.experiments.flower.strategy.FedselStrategy` in the ServerApp.
Writes ``history.csv`` (the columns of ``fedsel train``, plus ``engine``, ``failed``,
``failures``, ``n_aggregated``), ``stats.parquet`` and ``config.toml`` (configuration, data
provenance, run record). Needs the ``flower`` extra (``pip install 'fedsel[flower]'``); Flower
and torch are imported inside the command only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from fl_oracle.cli.options import (
    DP_DELTA,
    DP_EPSILON,
    SECURE_AGGREGATION,
    federation_options,
    stats_privacy,
)
from selection.selectors import selector_help
from selection.words import counted

__all__ = ["register", "make_settings", "flower"]

_ENGINES = ("ray", "local")


def make_settings(config):
    """The :class:`DigitsSettings` of a configuration (tests inject a tiny federation here)."""
    from fl_oracle.experiments.flower.digits import DigitsSettings

    return DigitsSettings.of(config)


def _check_choice(name: str, value: str | None, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}", param_hint=name)


def _config(seed: int, num_supernodes: int, **overrides: Any):
    from fl_oracle.sim.config import OracleConfig

    kw = {k: v for k, v in overrides.items() if v is not None}
    dataset = kw.pop("dataset", None)
    if dataset is None:
        n_dom = len(OracleConfig().domains)
    else:
        from fl_oracle.sim.data.folders import scan_dataset

        n_dom = len(scan_dataset(dataset).domains)
    if num_supernodes % n_dom:
        raise typer.BadParameter(
            f"{counted(num_supernodes, 'node')}: the federation has one node per client, "
            f"{counted(n_dom, 'domain')} x clients per domain, so a multiple of {n_dom}",
            param_hint="--num-supernodes",
        )
    kw.update(seed=int(seed), clients_per_domain=num_supernodes // n_dom, device="cpu")
    if dataset is not None:
        from fl_oracle.sim.config import dataset_fields

        kw = dataset_fields(dataset, **kw)
    return OracleConfig(**kw)


def flower_selector_help() -> str:
    """The shared ``--selector`` help, and what Flower's replies cannot serve (refused before
    any work by ``check_flower_selector``): surrogates that read logits, verified picks."""
    from selection.surrogates import get_surrogate, surrogates

    reading = [n for n in surrogates() if get_surrogate(n).needs_logits]
    return (
        f"{selector_help()} Not in Flower (its replies carry no logits and no true aggregate "
        f"of candidates): the {', '.join(reading)} surrogates and verify."
    )


@federation_options(
    "mu", "gamma", "lr", "local_epochs", "data_root", "data", "threads", "dataset", "resolution",
    "model",
    threads={"help": "torch threads of every node and the server (default: this process's, as "
             "fedsel train; other counts round differently).", "show_default": False},
)  # fmt: skip
def flower(
    selector: str = typer.Option(
        ...,
        "--selector",
        help=flower_selector_help(),
    ),
    k: int = typer.Option(..., "--k", "-k", min=1, help="Nodes (clients) trained per round."),
    rounds: int = typer.Option(3, "--rounds", "-r", min=1, help="Training rounds."),
    num_supernodes: int = typer.Option(
        20,
        "--num-supernodes",
        min=1,
        help="Flower nodes, one per client (a multiple of the domain count).",
    ),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the federation and selector."),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output folder: history.csv, stats.parquet, config.toml."
    ),
    stats: str | None = typer.Option(
        None,
        "--information",
        help="fresh (every node measured each round; the K chosen commit their measured "
        "updates) | pool:P (P nodes drawn ∝ samples measured) | stale (only unseen nodes; "
        "others keep the statistics of their last training reply) | probe, predicted (a "
        "probe message without training to every node; the K chosen train); or @MODEL in "
        "the spec.",
        show_default="the spec's @MODEL, else fresh",
    ),
    stats_old: str | None = typer.Option(None, "--stats", hidden=True),  # --information
    federation: dict[str, Any] | None = None,
    engine: str = typer.Option(
        "ray",
        "--engine",
        help="ray (Flower's simulation engine) | local (the same apps in this process).",
    ),
    timeout: float = typer.Option(
        600.0, "--timeout", min=1.0, help="Seconds to wait for the replies of one exchange."
    ),
    num_cpus: int | None = typer.Option(
        None, "--num-cpus", min=1, help="CPUs for the simulation (default: all)."
    ),
    client_cpus: float | None = typer.Option(
        None,
        "--client-cpus",
        min=0.01,
        help="CPUs reserved per ClientApp actor (default: --threads, so actors never share).",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the run --out holds (its files are deleted)."
    ),
    dp_epsilon: float = DP_EPSILON,
    dp_delta: float = DP_DELTA,
    secure_aggregation: bool = SECURE_AGGREGATION,
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Show Flower's INFO log too (stderr); else warnings only."
    ),
) -> None:
    """Train with a selector choosing the K nodes of every round, on Flower's simulation engine."""
    from fl_oracle.experiments.flower.checks import check_flower_selector, flower_information
    from selection.cli.options import renamed
    from selection.selectors import make_selector, parse_spec

    stats = renamed("--stats", "--information", stats_old, stats)
    _check_choice("--engine", engine, _ENGINES)
    if k > num_supernodes:
        raise typer.BadParameter(
            f"K={k} exceeds the {counted(num_supernodes, 'node')}", param_hint="--k"
        )
    # an unknown spec, or one Flower cannot serve, fails here, before anything starts; the
    # information model (--information or the spec's @MODEL) is checked against the nodes and K
    spec = parse_spec(selector)
    privacy = stats_privacy(dp_epsilon, dp_delta, rounds, secure_aggregation)
    stats = flower_information(spec, stats, n=num_supernodes, k=k, privacy=privacy)
    check_flower_selector(make_selector(spec, seed=seed), selector)
    if privacy is not None:  # a rule reading update vectors, the model served
        privacy.check_spec(spec, stats)
    if num_cpus is not None and client_cpus is not None and client_cpus > num_cpus:
        raise typer.BadParameter(
            f"{client_cpus:g} CPUs per client exceed the {num_cpus} of the simulation",
            param_hint="--client-cpus",
        )
    try:
        import flwr  # noqa: F401
        import ray  # noqa: F401 - the simulation engine

        from fl_oracle.experiments.flower.digits import federation as load_federation
        from fl_oracle.experiments.flower.run import flower_log
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("flwr", "ray"):
            raise ValueError(
                f"fedsel flower needs Flower ({exc.name} is not installed): "
                "pip install 'fedsel[flower]'"
            ) from exc
        raise
    flower_log(verbose)  # Flower's INFO lines only when asked; no colour codes off a terminal
    config = _config(seed, num_supernodes, **federation)
    if config.threads is None:  # every node computes with this process's torch threads, as
        import torch  # fedsel train would: kernels round differently with other thread counts

        config = config.replace(threads=int(torch.get_num_threads()))
    settings = make_settings(config)
    config = settings.config
    if client_cpus is None:
        client_cpus = float(min(config.threads or 1, num_cpus or os.cpu_count() or 1))
    from fl_oracle.experiments.runfolder import claim_run_folder

    if overwrite:  # the data are checked before the old run is deleted
        load_federation(settings)
    # one run per folder: locked, another run refused, nothing left behind by a failed start
    with claim_run_folder(
        out, "flower", overwrite=overwrite, committed="history.csv", resumable=False
    ):
        _run(out, settings, config, selector, k, rounds, num_supernodes, stats, timeout,
             engine, num_cpus, client_cpus, privacy)  # fmt: skip


def _run(out, settings, config, selector, k, rounds, num_supernodes, stats, timeout, engine,
         num_cpus, client_cpus, privacy=None) -> None:  # fmt: skip
    """The run of ``fedsel flower`` inside its claimed folder."""

    from fl_oracle.experiments.flower.digits import DigitsServer, federation
    from fl_oracle.experiments.flower.run import run_flower
    from fl_oracle.experiments.flower.server_app import FlowerRun, write_run
    from fl_oracle.experiments.flower.strategy import FlowerRunError
    from selection.atomic import write_text_atomic

    federation(settings)  # load (or generate and cache) the data once, before the nodes start
    prov = DigitsServer(settings).provenance()
    from fl_oracle.cli import command_line
    from fl_oracle.experiments.flower.server_app import run_toml
    from fl_oracle.sim.data.provenance import provenance_lines

    for line in provenance_lines(prov):
        print(line, file=sys.stderr)
    run = FlowerRun(
        settings, selector, k, rounds, stats=stats, timeout=timeout, out=out, privacy=privacy
    )
    write_text_atomic(run_toml(run, f"flower-{engine}", prov, command_line()), out / "config.toml")
    try:
        res = run_flower(
            run, num_supernodes, engine=engine, num_cpus=num_cpus, client_cpus=client_cpus
        )
    except (FlowerRunError, RuntimeError) as exc:
        if run.result.history:
            write_run(out, *run.result.frames())
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"fedsel: error: {msg}", file=sys.stderr)
        raise typer.Exit(1) from None
    history, table = res.frames()
    write_run(out, history, table)
    last = history.iloc[-1]
    failed = int((history["failed"] != "").sum())
    note = f", {failed} round(s) with failed nodes (see failures)" if failed else ""
    print(
        f"{selector} on Flower ({engine}): {counted(rounds, 'round')}, final avg {last['acc_avg']:.2f}% "
        f"worst {last['acc_worst']:.2f}%{note}"
    )
    print(f"wrote {out / 'history.csv'}, stats.parquet, config.toml", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add ``flower`` to the fedsel app."""
    app.command("flower")(flower)
