"""``fedsel study``: thin wrapper over :mod:`fl_oracle.experiments.study` (settings, runs, assembly).

Settings come from built-in defaults, then ``--config FILE`` (TOML), then the flags; a folder
that already holds a study and no settings flag means that study's stored settings. The folder
is held by an exclusive lock for the study's lifetime; started again with the same arguments (or
with ``--out`` alone) a study continues where it stopped (finished runs are not redone).
"""

from __future__ import annotations

import sys
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
    from fl_oracle.cli.options import make_config
    from fl_oracle.experiments.runfolder import claim_run_folder
    from fl_oracle.experiments.study.assembly import finish_study
    from fl_oracle.experiments.study.settings import StudySettings
    from fl_oracle.experiments.study.setup import StudyFlags, study_settings
    from selection.selectors import make_selector

    if show_defaults:
        print(StudySettings().to_toml(), end="")
        return
    if out is None:
        raise typer.BadParameter("is required", param_hint="--out")
    if executor not in ("local", "ray"):
        raise typer.BadParameter(f"{executor!r} is not one of local, ray", param_hint="--executor")
    if address is not None and executor != "ray":
        raise typer.BadParameter("needs --executor ray", param_hint="--address")
    if not report_only:
        check_address(address)
    dataset = federation.pop("dataset", None)  # the folder's domains and sizes: read below
    flags = StudyFlags(config=config, seeds=seeds, first_seed=first_seed, rounds=rounds, k=k,
                       selectors=selectors, surrogate=surrogate, reference=reference,
                       dp_epsilon=dp_epsilon, dp_delta=dp_delta,
                       secure_aggregation=secure_aggregation, add=add)  # fmt: skip
    text = flags.text(out)
    overrides = flags.overrides()
    from fl_oracle.experiments.study.grid import is_grid

    if is_grid(text):
        if surrogate is not None:
            raise ValueError("--surrogate: give a grid's entries with their @SURROGATE")
        _grid(
            text, out, add=add, grow=grow, federation=federation, dataset=dataset,
            run=dict(workers=workers, executor=executor, address=address,
                     report_only=report_only, progress=not no_progress),
            overrides=overrides,
        )  # fmt: skip
        return
    if grow:
        raise ValueError("--grow extends a grid study (a [grid] in --config); --add grows a study")
    settings, added = study_settings(
        text,
        dataset=dataset,
        federation=federation,
        add=add,
        overrides=overrides,
    )
    for entry in settings.entries:
        make_selector(entry.spec, seed=0)  # bad spec -> one line before any work
    # bad oracle setting -> one line before any process starts (K is the runs', settings.k)
    make_config(0, **settings.oracle)
    with claim_run_folder(out, "study", resume=True, committed="study.toml"):
        if not report_only:
            _run_runs(settings, out, added, workers=workers, executor=executor,
                      address=address, progress=not no_progress)  # fmt: skip
        res = finish_study(settings, out)
    for line in res.terminal(str(out / "verdict.md")):
        print(line)
    print(f"wrote {out / 'report.html'}, history.csv, summary.csv, paired.csv", file=sys.stderr)


def _run_runs(
    settings: Any,
    out: Path,
    added: list[str] | None,
    *,
    workers: int | None,
    executor: str,
    address: str | None,
    progress: bool,
) -> None:
    """The study's unfinished runs, on ``workers`` processes here or on Ray."""
    from fl_oracle.cli import interrupt_hint
    from fl_oracle.experiments.study.runs import run_study
    from selection.progress import rich_progress
    from selection.selectors import make_selector

    runs = settings.seeds * len(settings.selectors)
    n_workers = worker_count(workers, runs)
    factory = study_factory(dict(settings.oracle))
    _record_sources(factory, out, added=added, progress=progress)

    def hint() -> str:  # said when the interruption comes: what is kept then
        kept = sorted((out / "runs").glob("*/seed*.csv")) if (out / "runs").is_dir() else []
        if not kept:
            return "no run had finished; run the same command again to start the study"
        return (
            f"the {len(kept)} finished runs are kept in {out / 'runs'}; run the same command "
            "again to continue (only unfinished runs are redone)"
        )

    interrupt_hint(hint)
    with rich_progress(enabled=progress, transient=False) as bar:
        run_study(
            settings,
            out,
            make_oracle=factory,
            make_selector=make_selector,
            workers=n_workers,
            progress=bar,
            grow=added is not None,
            executor=executor,
            address=address,
        )


def _grid(
    text: str,
    out: Path,
    *,
    add: str | None,
    grow: bool,
    federation: dict[str, Any],
    dataset: str | None,
    run: dict[str, Any],
    overrides: dict[str, Any],
) -> None:
    """``fedsel study`` on a grid: every cell checked before any run, then
    :func:`~fl_oracle.experiments.study.grid_run.run_grid` with this command's way of running
    one study folder."""
    from fl_oracle.cli.options import make_config
    from fl_oracle.experiments.runfolder import claim_run_folder
    from fl_oracle.experiments.study.grid import GridSettings
    from fl_oracle.experiments.study.grid_run import check_stored_grid, run_grid
    from selection.selectors import make_selector, split_specs

    # the folder's domains and sizes fitted to every cell, each checked as the grid is read
    grid = GridSettings.from_toml(text, dataset=dataset, oracle=federation, **overrides)
    if add is not None:
        grid = grid.grown(split_specs(add))
    for entry in grid.base.entries:
        make_selector(entry.spec, seed=0)  # bad spec -> one line before any work
    for cell in grid.cells:  # bad cell -> one line before any process starts
        try:
            make_config(0, **cell.settings.oracle)
        except ValueError as exc:
            raise ValueError(f"grid cell {cell.label}: {exc}") from None
    s = grid.base
    print(
        f"fedsel: grid of {len(grid.cells)} cells x {len(s.selectors)} entries x {s.seeds} "
        f"seeds ({len(grid.cells) * len(s.selectors) * s.seeds} screen runs)",
        file=sys.stderr,
    )
    with claim_run_folder(out, "study", resume=True, committed="study.toml"):
        check_stored_grid(grid, out, grow=grow or add is not None)
        table, lines = run_grid(grid, out, run_cell=_cell_runner(**run))
    for line in lines:
        print(line)
    print(f"wrote {out / 'map.html'}, grid.csv, grid.md, cells/", file=sys.stderr)


def _cell_runner(
    *, workers: int | None, executor: str, address: str | None, report_only: bool, progress: bool
):
    """How ``fedsel study`` runs one folder of a grid (the study's own steps)."""
    from fl_oracle.experiments.study.assembly import finish_study
    from fl_oracle.experiments.study.runs import run_study
    from selection.progress import rich_progress
    from selection.selectors import make_selector

    def run_cell(settings, folder: Path, label: str):
        if report_only:
            if not (folder / "study.toml").is_file():
                return None
            return finish_study(settings, folder)
        folder.mkdir(parents=True, exist_ok=True)
        overrides = dict(settings.oracle)
        factory = study_factory(overrides)
        _record_sources(factory, folder, progress=False, quiet=True)
        runs = settings.seeds * len(settings.selectors)
        n_workers = worker_count(workers, runs)
        with rich_progress(enabled=progress, transient=False) as bar:
            tick = None
            if bar is not None:

                def tick(done, total, what, bar=bar):
                    bar(done, total, f"grid {label}: {len(settings.selectors)} entries x "
                                     f"{settings.seeds} seeds, {what.split(': ', 1)[-1]}")  # fmt: skip

            run_study(
                settings, folder, make_oracle=factory, make_selector=make_selector,
                workers=n_workers, progress=tick, grow=True, executor=executor, address=address,
            )  # fmt: skip
        return finish_study(settings, folder)

    return run_cell


def _check_model(model: str, data: dict) -> None:
    """Build the model once for the loaded data (ConfigError in one line if it cannot be)."""
    from fl_oracle.sim.model import resolve_model

    train = next(iter(data.values()))["train"]
    shape = getattr(train, "image_shape", None) or tuple(train.images.shape[1:])
    resolve_model(model, n_classes=train.n_classes, image_shape=tuple(shape))


def check_address(address: str | None, timeout: float = 5.0) -> None:
    """A Ray address names a reachable ``host:port`` (``ray://`` allowed; ``auto`` as Ray
    reads it): ValueError in one line before any work otherwise."""
    import socket

    if address is None or address == "auto":
        return
    rest = address.removeprefix("ray://")
    host, colon, port = rest.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--address {address!r}: expected host:port (or ray://host:port)")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ValueError(
            f"--address {address}: nothing answers there ({exc.strerror or exc}); is the Ray "
            "head running?"
        ) from None


def _record_sources(
    factory, out: Path, added: list[str] | None = None, progress: bool = True, quiet: bool = False
) -> None:
    """Load the data once (before the workers) and record where it came from.

    A continued study keeps its first record (and refuses other data); a study grown with
    ``--add`` gets one ``[[additions]]`` table more (the entries, the commit and command that
    made them, when).
    """
    from fl_oracle.experiments.run_record import record_toml, run_record
    from fl_oracle.sim.data.provenance import data_provenance, provenance_lines, provenance_toml
    from selection.atomic import write_text_atomic
    from selection.progress import rich_progress

    with rich_progress(enabled=progress) as bar:
        data = factory.load(progress=bar)
    _check_model(factory.config(0).model, data)  # a failing factory: before anything is written
    prov = data_provenance(data)
    for line in [] if quiet else provenance_lines(prov):
        print(line, file=sys.stderr)
    from fl_oracle.cli import command_line

    rec = run_record(factory.config(0).device, command=command_line())
    path = out / "sources.toml"
    if not path.is_file():
        write_text_atomic(record_toml(rec) + "\n" + provenance_toml(prov), path)
        return
    old = path.read_text(encoding="utf-8")  # a continued study keeps its first record
    if provenance_toml(prov) not in old:
        raise ValueError(f"the data differ from those {path} records; runs would not pair")
    if added:
        table = record_toml({"entries": "; ".join(added), **rec}).replace("[run]", "[[additions]]")
        write_text_atomic(old.rstrip("\n") + "\n\n" + table, path)


def register(app: typer.Typer) -> None:
    """Add ``study`` to the fedsel app."""
    app.command("study")(study)
