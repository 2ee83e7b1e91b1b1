"""``fedsel train`` and ``fedsel demo``: live training with a selector in the loop.

Thin: parse, build the oracle and the selector, call :mod:`fl_oracle.experiments.loop` /
:mod:`fl_oracle.experiments.demo.run`, write files atomically. torch is imported inside the commands only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import typer

from fl_oracle.cli.options import (
    DP_DELTA,
    DP_EPSILON,
    NO_PROGRESS,
    SECURE_AGGREGATION,
    federation_options,
    make_config,
    stats_privacy,
    worker_count,
)
from fl_oracle.experiments.demo.settings import DEMO_ORACLE, DemoSettings
from selection.defaults import DEFAULT_SURROGATE
from selection.selectors import selector_help
from selection.words import counted

_D = DemoSettings()  # the demo's defaults, shown in --help

__all__ = ["register", "make_config", "make_oracle", "demo_factory", "DEMO_ORACLE"]

# make_config lives beside the flags it names (fl_oracle.cli.options); re-exported here


def make_oracle(config, data: dict | None = None, *, progress=None):
    """A fresh :class:`fl_oracle.sim.oracle.Oracle` at round 0 (``progress``: a
    :data:`~selection.progress.ProgressFn` for the data's loading or generation)."""
    from fl_oracle.sim.oracle import Oracle

    return Oracle(config, data=data, progress=progress or False)


def _with_bar(config, no_progress: bool):
    """The oracle, its data loaded or generated under a progress bar (the first use of a
    federation generates its stand-ins: about a minute, not in silence)."""
    from selection.progress import rich_progress

    with rich_progress(enabled=not no_progress, transient=True) as bar:
        return make_oracle(config, progress=bar)


def _write_run(out: Path, history, stats) -> None:
    from selection.atomic import write_table_atomic

    write_table_atomic(history, out / "history.csv")
    write_table_atomic(stats, out / "stats.parquet")


def _recorded_config(config, oracle, privacy=None, selector: str = "", run=None) -> str:
    """config.toml text: the configuration, the data provenance (also one line per domain on
    stderr), the run record and, for a run that has them, its selector and its privacy
    (``[privacy]``: ε, δ, the noise multiplier z, secure aggregation)."""

    from fl_oracle.experiments.run_record import record_toml, run_record
    from fl_oracle.sim.data.provenance import provenance_lines, provenance_toml

    prov = getattr(oracle, "provenance", None) or {}
    for line in provenance_lines(prov):
        print(line, file=sys.stderr)
    rec = record_toml(run_record(getattr(oracle, "device", None)))
    text = config.to_toml() + "\n" + provenance_toml(prov) + "\n" + rec
    if selector:
        from selection.toml_text import toml_value

        text += f"\n[selection]\nselector = {toml_value(selector)}\n"
        text += "".join(f"{k} = {toml_value(v)}\n" for k, v in (run or {}).items())
    if privacy is not None:
        text += "\n" + privacy.to_toml()
    return text


@federation_options(
    "data_root", "data", "mu", "gamma", "device", "lr", "local_epochs", "model", "dataset",
    "clients_per_domain", "samples_per_client", "resolution", "split_file", "batch_size",
    "dirichlet_alpha", "size_sigma", "aggregation", "val_per_domain", "test_per_domain",
    "fisher_samples", "threads",
)  # fmt: skip
def train(
    selector: str = typer.Option(
        ...,
        "--selector",
        help=selector_help(),
    ),
    save_logits: bool = typer.Option(
        False,
        "--save-logits",
        help="Also write each round's validation logits to --out/logits/.",
    ),
    surrogate: str | None = typer.Option(
        None,
        "--surrogate",
        help="Surrogate of U(S), U_d(S) the selector judges by: mean, weighted, ensemble "
        "(the same as SPEC@NAME).",
        show_default=DEFAULT_SURROGATE,
    ),
    k: int = typer.Option(..., "--k", "-k", min=1, help="Clients selected per round."),
    rounds: int = typer.Option(10, "--rounds", "-r", min=1, help="Training rounds."),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the federation, the model and the selector."
    ),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output folder: history.csv, stats.parquet, config.toml."
    ),
    federation: dict[str, Any] | None = None,
    stats: str | None = typer.Option(
        None,
        "--information",
        help="Information model (fedsel methods lists them), as @MODEL in the spec. Default: "
        "fresh for a formulation; a baseline rule reads what it reads.",
        show_default=False,
    ),
    stats_old: str | None = typer.Option(None, "--stats", hidden=True),  # --information
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace the run --out holds (its files are deleted)."
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue the interrupted run in --out to the history an uninterrupted run "
        "writes (same command; --rounds may grow).",
    ),
    dp_epsilon: float = DP_EPSILON,
    dp_delta: float = DP_DELTA,
    secure_aggregation: bool = SECURE_AGGREGATION,
    no_progress: bool = NO_PROGRESS,
) -> None:
    """Train with a selector choosing the K clients of every round."""
    from fl_oracle.cli import interrupt_hint
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run
    from fl_oracle.experiments.run_state import load_run_state
    from fl_oracle.experiments.runfolder import claim_run_folder
    from selection.atomic import write_text_atomic
    from selection.cli.options import renamed
    from selection.progress import report, rich_progress
    from selection.selectors import make_selector, parse_spec

    stats = renamed("--stats", "--information", stats_old, stats)
    spec = parse_spec(selector)  # the one parse: typed from here on
    if surrogate is not None:  # --surrogate sets the field; the run is named canonically
        spec = spec.with_surrogate(surrogate)
        selector = spec.canonical
    config = make_config(seed, federation, k=k)
    # the information model (--information or the spec's), against N and K: before any data
    stats = spec.run_information(stats, n=config.n_clients, k=k)
    privacy = stats_privacy(dp_epsilon, dp_delta, rounds, secure_aggregation, stats, spec)
    sel = make_selector(spec, seed=seed)
    # what a resumed run must share with the run it continues (rounds may grow)
    same = {"selector": selector, "information": str(stats), "seed": seed, "k": k,
            "config": config.to_toml(),
            "privacy": privacy.to_toml() if privacy is not None else ""}  # fmt: skip
    # --overwrite: the data and model are checked (the oracle built) before the old run goes
    oracle = _with_bar(config, no_progress) if overwrite else None
    state_file = out / "run_state.pt"
    interrupt_hint(lambda: _resume_hint(out))
    # one run per folder: locked, another run refused, nothing left behind by a failed start
    with claim_run_folder(
        out, "train", resume=resume, overwrite=overwrite, committed="history.csv"
    ):
        state = load_run_state(state_file, same, rounds) if resume else None
        oracle = oracle if oracle is not None else _with_bar(config, no_progress)
        if state is None:
            run = {"rounds": rounds, **{key: same[key] for key in ("information", "seed", "k")}}
            text = _recorded_config(config, oracle, privacy, selector, run)
            write_text_atomic(text, out / "config.toml")
        rows = list(state["history"]) if state else []
        tables = list(state["tables"]) if state else []
        with rich_progress(enabled=not no_progress, transient=False) as progress:

            def on_round(row, table):
                import pandas as pd

                rows.append(row)
                tables.append(table)
                _write_run(out, pd.DataFrame(rows), pd.concat(tables, ignore_index=True))
                report(
                    progress,
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

            plan = plan_run(
                sel, rounds=rounds, k=k, name=selector, seed=seed, stats_mode=stats,
                privacy=privacy,
            )  # fmt: skip
            res = run_training(
                oracle,
                plan,
                on_round=on_round,
                before_step=keep_logits,
                state_file=state_file,
                state_meta=same,
                resume=state,
            )
        _write_run(out, res.history, res.stats)
    last = res.history.iloc[-1]
    fb = int((res.history["fallback"] != "").sum())
    print(
        f"{selector}: {counted(rounds, 'round')}, final avg {last['acc_avg']:.2f}% worst "
        f"{last['acc_worst']:.2f}%{f', {fb} fallback round(s)' if fb else ''}"
    )
    print(f"wrote {out / 'history.csv'}, stats.parquet, config.toml", file=sys.stderr)


def _resume_hint(out: Path) -> str:
    """What an interrupted fedsel train says: what is kept and how to go on."""
    from fl_oracle.experiments.runfolder import history_rounds

    done = history_rounds(out)
    if not done:
        return "no round had finished; run the same command again to start it"
    return (
        f"the {done} finished rounds are kept in {out}; add --resume to the same command "
        "to continue"
    )


def demo_factory(overrides: dict[str, Any]):
    """The picklable ``seed -> Oracle`` factory of the demo (tests inject tiny data here)."""
    from fl_oracle.experiments.runner import OracleFactory

    return OracleFactory(overrides)


@federation_options("data_root", "data", "device")
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
    federation: dict[str, Any] | None = None,
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
    no_progress: bool = NO_PROGRESS,
) -> None:
    """Compare selectors on the same federation over several seeds; write report.html and tables."""
    from fl_oracle.experiments.demo.report import write_outputs
    from fl_oracle.experiments.demo.run import DemoSettings, run_demo
    from selection.progress import rich_progress
    from selection.selectors import make_selector, split_specs

    kw: dict[str, Any] = {"rounds": rounds, "seeds": seeds, "k": k, "front_round": front_round}
    if selectors is not None:
        kw["selectors"] = tuple(split_specs(selectors))
    settings = DemoSettings(**{a: v for a, v in kw.items() if v is not None})
    for entry in settings.entries:
        make_selector(entry.spec, seed=0)  # bad spec -> one line before any training
    overrides = {**DEMO_ORACLE, **federation}
    # bad value, or K beyond the clients -> one line before any process starts (K is the runs':
    # settings.k; the oracle's configuration holds none)
    config = make_config(0, k=settings.k, **overrides)
    for entry in settings.entries:  # each information model against N and K, before any data
        entry.spec.run_information(n=config.n_clients, k=settings.k)
    runs = settings.seeds * len(settings.selectors)
    n_workers = worker_count(workers, runs)
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
        with rich_progress(enabled=not no_progress, transient=False) as progress:
            factory.load(progress=progress)  # the data once, before the workers
            result = run_demo(
                factory, make_selector, settings, workers=n_workers, progress=progress
            )
        rec.update(workers=n_workers, seconds=round(time.perf_counter() - t0, 1))
        paths = write_outputs(result, out, record=record_toml(rec))
    print(result.summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add ``train`` and ``demo`` to the fedsel app."""
    app.command("train")(train)
    app.command("demo")(demo)
