"""``fedsel study``: thin wrapper over :mod:`fl_oracle.experiments.study` (settings, runs, assembly).

Settings come from built-in defaults, then ``--config FILE`` (TOML), then the flags; a folder
that already holds a study and no settings flag means that study's stored settings. The folder
is held by an exclusive lock for the study's lifetime; started again with the same arguments (or
with ``--out`` alone) a study continues where it stopped (finished runs are not redone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from fl_oracle.cli.options import NO_PROGRESS, federation_options, worker_count

__all__ = ["register", "study_factory"]


def study_factory(overrides: dict[str, Any]):
    """The picklable ``seed -> Oracle`` factory (tests inject tiny data by replacing this)."""
    from fl_oracle.experiments.runner import OracleFactory

    return OracleFactory(overrides)


@federation_options("data_root", "data", "device", "dataset", "resolution", "model")
def study(
    out: Path | None = typer.Option(None, "--out", "-o", help="Study folder (resumable)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="Settings (TOML)."),
    seeds: int | None = typer.Option(
        None, "--seeds", min=1, help="Number of seeds.", show_default="10"
    ),
    first_seed: int | None = typer.Option(
        None, "--first-seed", min=0, help="First seed (held-out seeds: e.g. 10).", show_default="0"
    ),
    rounds: int | None = typer.Option(
        None, "--rounds", "-r", min=1, help="Rounds per run.", show_default="40"
    ),
    k: int | None = typer.Option(
        None, "--k", "-k", min=1, help="Clients per round.", show_default="5"
    ),
    selectors: str | None = typer.Option(
        None,
        "--selectors",
        help="Comma-separated entries SPEC or SPEC@INFORMATION, e.g. "
        "proportional,eps:5@probe (information models: fedsel methods).",
        show_default="7 baselines and the swept formulations: fedsel study --show-defaults",
    ),
    reference: str | None = typer.Option(
        None, "--reference", help="Entry the others are paired with.", show_default="proportional"
    ),
    surrogate: str | None = typer.Option(
        None,
        "--surrogate",
        help="Judge every formulation entry of --selectors by this surrogate (mean, weighted, "
        "ensemble), as SPEC@NAME would; baselines are unchanged.",
    ),
    workers: int | None = typer.Option(
        None, "--workers", "-w", min=1, help="Run processes.", show_default="CPU count, at most 8"
    ),
    federation: dict[str, Any] | None = None,
    executor: str = typer.Option(
        "local",
        "--executor",
        help="local (--workers processes here) | ray (one Ray task per run, on a local Ray "
        "instance or the cluster --address names).",
    ),
    address: str | None = typer.Option(
        None,
        "--address",
        help="Ray cluster to join with --executor ray (host:port or auto).",
        show_default="a local instance, or RAY_ADDRESS",
    ),
    add: str | None = typer.Option(
        None,
        "--add",
        help="Grow the finished study in --out by these entries (comma-separated); its "
        "stored settings are kept and only the new entries run.",
    ),
    grow: bool = typer.Option(
        False,
        "--grow",
        help="A grid study (a [grid] in --config): extend the grid in --out by the config's "
        "new cells, entries appended and more seeds; nothing finished runs again.",
    ),
    report_only: bool = typer.Option(
        False, "--report-only", help="Write the tables and report from the finished runs only."
    ),
    show_defaults: bool = typer.Option(
        False, "--show-defaults", help="Print the default settings as TOML and exit."
    ),
    dp_epsilon: float | None = typer.Option(
        None,
        "--dp-epsilon",
        help="Private statistics: each run's epsilon over its rounds (the settings' "
        "dp_epsilon; inf = off).",
        show_default=False,
    ),
    dp_delta: float | None = typer.Option(
        None, "--dp-delta", help="Each run's delta (dp_delta).", show_default=False
    ),
    secure_aggregation: bool = typer.Option(
        False,
        "--secure-aggregation",
        help="The server sees only the sum of the updates (secure_aggregation = true).",
    ),
    no_progress: bool = NO_PROGRESS,
) -> None:
    """Paired multi-seed comparison of selectors in live training; writes report.html."""
    from fl_oracle.cli import command_line, interrupt_hint
    from fl_oracle.cli.options import FLAG_OF, make_config
    from fl_oracle.experiments.study.command import CommandSide, StudyRunning, run_study_command
    from fl_oracle.experiments.study.settings import StudySettings
    from fl_oracle.experiments.study.setup import StudyFlags

    if show_defaults:
        print(StudySettings().to_toml(), end="")
        return
    if out is None:
        raise typer.BadParameter("is required", param_hint="--out")
    if executor not in ("local", "ray"):
        raise typer.BadParameter(f"{executor!r} is not one of local, ray", param_hint="--executor")
    if address is not None and executor != "ray":
        raise typer.BadParameter("needs --executor ray", param_hint="--address")
    dataset = federation.pop("dataset", None)  # the folder's domains and sizes
    flags = StudyFlags(config=config, seeds=seeds, first_seed=first_seed, rounds=rounds, k=k,
                       selectors=selectors, surrogate=surrogate, reference=reference,
                       dp_epsilon=dp_epsilon, dp_delta=dp_delta,
                       secure_aggregation=secure_aggregation, add=add)  # fmt: skip
    running = StudyRunning(workers=workers, executor=executor, address=address,
                           report_only=report_only, progress=not no_progress, grow=grow)  # fmt: skip
    side = CommandSide(make_factory=study_factory, check_oracle=make_config,
                       worker_count=worker_count, command=command_line(),
                       interrupt_hint=interrupt_hint, flag_of=FLAG_OF)  # fmt: skip
    run_study_command(flags, out, running, side, federation=federation, dataset=dataset)


def register(app: typer.Typer) -> None:
    """Add ``study`` to the fedsel app."""
    app.command("study")(study)
