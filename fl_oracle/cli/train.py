"""``fedsel train`` and ``fedsel demo``: live training with a selector in the loop.

Thin: parse, build the oracle and the selector, call :mod:`fl_oracle.experiments.loop` /
:mod:`fl_oracle.experiments.demo.run`, write files atomically. torch is imported inside the commands only.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import typer

from fl_oracle.cli.options import (
    SIZES_HELP,
    SPLIT_HELP,
    dataset_option,
    model_option,
    parse_sizes,
    resolution_option,
    size_sigma_option,
)
from fl_oracle.experiments.demo.run import DemoSettings
from fl_oracle.experiments.runner import DEMO_ORACLE
from fl_oracle.sim.choices import DATA_HELP, DATA_MODES
from selection.selectors import selector_help

_D = DemoSettings()  # the demo's defaults, shown in --help

__all__ = ["register", "make_config", "make_oracle", "demo_factory", "DEMO_ORACLE"]


def make_config(seed: int, **overrides: Any):
    """An :class:`fl_oracle.sim.config.OracleConfig` for ``seed`` with the given non-None
    overrides; with ``dataset`` its domains and sizes are filled in from the folder."""
    from fl_oracle.sim.config import OracleConfig, dataset_fields

    given = {k: v for k, v in overrides.items() if v is not None}
    if given.get("dataset") is not None:
        given = dataset_fields(given.pop("dataset"), **given)
    if isinstance(given.get("samples_per_client"), int):  # one size for every domain
        domains = given.get("domains") or OracleConfig().domains
        given["samples_per_client"] = {d: given["samples_per_client"] for d in domains}
    return OracleConfig(seed=int(seed), **given)


def make_oracle(config, data: dict | None = None):
    """A fresh :class:`fl_oracle.sim.oracle.Oracle` at round 0."""
    from fl_oracle.sim.oracle import Oracle

    return Oracle(config, data=data, progress=False)


def _write_run(out: Path, history, stats) -> None:
    from selection.atomic import write_table_atomic

    write_table_atomic(history, out / "history.csv")
    write_table_atomic(stats, out / "stats.parquet")


def _recorded_config(config, oracle) -> str:
    """config.toml text: the configuration, the data provenance (also one line per domain on
    stderr) and the run record."""

    from fl_oracle.experiments.run_record import record_toml, run_record
    from fl_oracle.sim.data.provenance import provenance_lines, provenance_toml

    prov = getattr(oracle, "provenance", None) or {}
    for line in provenance_lines(prov):
        print(line, file=sys.stderr)
    rec = record_toml(run_record(getattr(oracle, "device", None)))
    return config.to_toml() + "\n" + provenance_toml(prov) + "\n" + rec


def _information(parsed, stats: str | None, check) -> str:
    """The run's information model: ``--stats`` or the parsed spec's (they must agree)."""
    if stats is None:
        return parsed.information
    try:
        stats = check(stats)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--stats") from None
    if parsed.stats_mode is not None and parsed.stats_mode != stats:
        raise typer.BadParameter(
            f"{stats} contradicts the spec's @{parsed.stats_mode}", param_hint="--stats"
        )
    return stats


def _check_choice(name: str, value: str | None, choices: tuple[str, ...]) -> None:
    if value is not None and value not in choices:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}", param_hint=name)


def train(
    selector: str = typer.Option(
        ...,
        "--selector",
        help=selector_help(),
    ),
    save_logits: bool = typer.Option(
        False,
        "--save-logits",
        help="Also write each round's validation logits to DIR/logits/ (they are used in "
        "memory either way).",
    ),
    surrogate: str | None = typer.Option(
        None,
        "--surrogate",
        help="Surrogate of U(S), U_d(S) the selector judges by: mean, weighted, ensemble "
        "(the same as SPEC@NAME).",
        show_default="mean",
    ),
    k: int = typer.Option(..., "--k", "-k", min=1, help="Clients selected per round."),
    rounds: int = typer.Option(10, "--rounds", "-r", min=1, help="Training rounds."),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the federation, the model and the selector."
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output folder: history.csv, stats.parquet, config.toml."
    ),
    data_root: Path | None = typer.Option(
        None, "--data-root", help="Folder with the real digit datasets."
    ),
    data: str | None = typer.Option(None, "--data", help=DATA_HELP),
    mu: float | None = typer.Option(None, "--mu", min=0.0, help="FedProx proximal coefficient μ."),
    gamma: float | None = typer.Option(
        None, "--gamma", min=0.0, help="γ-inexactness of local solving."
    ),
    stats: str | None = typer.Option(
        None,
        "--stats",
        help="Information model: fresh (every client trains: the upper bound) | stale (last "
        "reports) | probe (a probe batch per client) | pool:P | predicted; or @MODEL in the "
        "spec. Default: fresh for a formulation; a baseline rule reads what it reads.",
        show_default=False,
    ),
    device: str | None = typer.Option(None, "--device", help="auto | cpu | cuda."),
    lr: float | None = typer.Option(
        None, "--lr", min=0.0, help="Local SGD step size.", show_default="0.05"
    ),
    local_epochs: float | None = typer.Option(
        None, "--local-epochs", min=0.0, help="Local epoch budget per round.", show_default="1"
    ),
    model: str | None = model_option(),
    dataset: Path | None = dataset_option(),
    clients_per_domain: int | None = typer.Option(
        None, "--clients-per-domain", min=1, help="Clients of each domain.", show_default="5"
    ),
    samples_per_client: str | None = typer.Option(
        None, "--samples-per-client", help=SIZES_HELP, show_default="1% of each Digits-4 set"
    ),
    resolution: int | None = resolution_option(),
    split_file: Path | None = typer.Option(None, "--split-file", help=SPLIT_HELP),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=1, help="Local minibatch size.", show_default="32"
    ),
    dirichlet_alpha: float | None = typer.Option(
        None, "--dirichlet-alpha", help="Label skew.", show_default="none"
    ),
    size_sigma: float | None = size_sigma_option(),
    aggregation: str | None = typer.Option(
        None, "--aggregation", help="samples | uniform.", show_default="samples"
    ),
    val_per_domain: int | None = typer.Option(
        None, "--val-per-domain", min=1, help="Validation samples per domain.", show_default="500"
    ),
    test_per_domain: int | None = typer.Option(
        None, "--test-per-domain", min=1, help="Test samples per domain.", show_default="all"
    ),
    fisher_samples: int | None = typer.Option(
        None, "--fisher-samples", min=1, help="Fisher probe cap.", show_default="64"
    ),
    threads: int | None = typer.Option(None, "--threads", min=1, help="torch threads."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the run --out holds (its files are deleted)."
    ),
) -> None:
    """Train with a selector choosing the K clients of every round."""
    from fl_oracle.experiments.loop import check_information, run_training
    from fl_oracle.experiments.runfolder import claim_run_folder
    from selection.atomic import write_text_atomic
    from selection.progress import rich_progress
    from selection.selectors import make_selector, parse_spec

    spec = parse_spec(selector)  # the one parse: typed from here on
    stats = _information(spec, stats, check_information)
    _check_choice("--data", data, DATA_MODES)
    config = make_config(
        seed,
        k=k,
        data_root=None if data_root is None else str(data_root),
        data_mode=data,
        mu=mu,
        gamma=gamma,
        device=device,
        lr=lr,
        local_epochs=local_epochs,
        model=model,
        dataset=None if dataset is None else str(dataset),
        clients_per_domain=clients_per_domain,
        samples_per_client=parse_sizes(samples_per_client),
        resolution=resolution,
        split_file=None if split_file is None else str(split_file),
        batch_size=batch_size,
        dirichlet_alpha=dirichlet_alpha,
        size_sigma=size_sigma,
        aggregation=aggregation,
        val_per_domain=val_per_domain,
        test_per_domain=test_per_domain,
        fisher_samples=fisher_samples,
        threads=threads,
    )
    if surrogate is not None:  # --surrogate sets the field; the run is named canonically
        spec = spec.with_surrogate(surrogate)
        selector = spec.canonical
    sel = make_selector(spec, seed=seed)
    # --overwrite: the data and model are checked (the oracle built) before the old run goes
    oracle = make_oracle(config) if overwrite else None
    # one run per folder: locked, another run refused, nothing left behind by a failed start
    with claim_run_folder(
        out, "train", overwrite=overwrite, committed="history.csv", resumable=False
    ):
        oracle = oracle if oracle is not None else make_oracle(config)
        write_text_atomic(_recorded_config(config, oracle), out / "config.toml")
        rows, tables = [], []
        with rich_progress(transient=False) as progress:

            def on_round(row, table):
                import pandas as pd

                rows.append(row)
                tables.append(table)
                _write_run(out, pd.DataFrame(rows), pd.concat(tables, ignore_index=True))
                progress(
                    len(rows),
                    rounds,
                    (
                        f"train {selector}: round {row['round']} avg {row['acc_avg']:.1f}% "
                        f"worst {row['acc_worst']:.1f}%"
                    ),
                )

            def keep_logits() -> dict:
                # the round's logits are the oracle's until the commit: write them before it
                if save_logits and oracle.measured_clients:
                    from selection.logits import logits_path, write_logits

                    write_logits(oracle.round_logits(), logits_path(out, oracle.round))
                return {}

            res = run_training(
                oracle,
                sel,
                rounds=rounds,
                k=k,
                name=selector,
                seed=seed,
                stats_mode=stats,
                on_round=on_round,
                before_step=keep_logits,
            )
        _write_run(out, res.history, res.stats)
    last = res.history.iloc[-1]
    fb = int((res.history["fallback"] != "").sum())
    print(
        f"{selector}: {rounds} rounds, final avg {last['acc_avg']:.2f}% worst "
        f"{last['acc_worst']:.2f}%{f', {fb} fallback round(s)' if fb else ''} -> {out}"
    )


def demo_factory(overrides: dict[str, Any]):
    """The picklable ``seed -> Oracle`` factory of the demo (tests inject tiny data here)."""
    from fl_oracle.experiments.runner import OracleFactory

    return OracleFactory(overrides)


def demo(
    out: Path = typer.Option(
        Path("runs/demo"),
        "--out",
        "-o",
        help="Output folder: report.html, summary.csv, history.csv, fronts.csv, record.toml.",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the run --out holds (its files are deleted)."
    ),
    rounds: int | None = typer.Option(
        None, "--rounds", "-r", min=1, help="Rounds per run.", show_default=str(_D.rounds)
    ),
    seeds: int | None = typer.Option(
        None, "--seeds", min=1, help="Number of seeds 0..N-1.", show_default=str(_D.seeds)
    ),
    k: int | None = typer.Option(
        None, "--k", "-k", min=1, help="Clients selected per round.", show_default=str(_D.k)
    ),
    selectors: str | None = typer.Option(
        None,
        "--selectors",
        help="Comma-separated selector specs, the first is the reference run.",
        show_default=", ".join(_D.selectors),
    ),
    data_root: Path | None = typer.Option(
        None, "--data-root", help="Folder with the real digit datasets."
    ),
    data: str | None = typer.Option(None, "--data", help=DATA_HELP),
    front_round: int | None = typer.Option(
        None, "--front-round", min=0, help="Round of the fronts.", show_default="rounds // 2"
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=1,
        help="Parallel run processes.",
        show_default="CPU count, at most 8",
    ),
    device: str | None = typer.Option(None, "--device", help="auto | cpu | cuda."),
) -> None:
    """Compare selectors on the same federation over several seeds; write report.html and tables."""
    from fl_oracle.experiments.demo.report import write_outputs
    from fl_oracle.experiments.demo.run import DemoSettings, run_demo
    from selection.progress import rich_progress
    from selection.selectors import make_selector, split_specs

    _check_choice("--data", data, DATA_MODES)
    kw: dict[str, Any] = {"rounds": rounds, "seeds": seeds, "k": k, "front_round": front_round}
    if selectors is not None:
        kw["selectors"] = tuple(split_specs(selectors))
    settings = DemoSettings(**{a: v for a, v in kw.items() if v is not None})
    for text in settings.selectors:
        make_selector(settings.spec(text), seed=0)  # bad spec -> one line before any training
    overrides = {**DEMO_ORACLE, "data_mode": data, "device": device}
    overrides["data_root"] = None if data_root is None else str(data_root)
    overrides = {a: v for a, v in overrides.items() if v is not None}
    # bad value, or K beyond the clients -> one line before any process starts (K is the runs':
    # settings.k; the oracle's configuration holds none)
    make_config(0, k=settings.k, **overrides)
    runs = settings.seeds * len(settings.selectors)
    n_workers = workers or max(1, min(os.cpu_count() or 1, 8, runs))
    factory = demo_factory(overrides)
    from fl_oracle.cli import command_line, interrupt_hint
    from fl_oracle.experiments.run_record import record_toml, run_record
    from fl_oracle.experiments.runfolder import claim_run_folder

    interrupt_hint(f"nothing was written to {out}; the demo starts afresh when run again")
    # the record first: the tree as the command found it (--overwrite deletes the old run)
    rec = run_record(factory.config(0).device, command=command_line())
    with claim_run_folder(
        out, "demo", overwrite=overwrite, committed="summary.csv", resumable=False
    ):
        t0 = time.perf_counter()
        with rich_progress(transient=False) as progress:
            factory.load(progress=progress)  # the data once, before the workers
            result = run_demo(
                factory, make_selector, settings, workers=n_workers, progress=progress
            )
        rec.update(workers=n_workers, seconds=round(time.perf_counter() - t0, 1))
        paths = write_outputs(result, out, record=record_toml(rec))
    print(result.summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print("wrote " + ", ".join(str(p) for p in paths))


def register(app: typer.Typer) -> None:
    """Add ``train`` and ``demo`` to the fedsel app."""
    app.command("train")(train)
    app.command("demo")(demo)
