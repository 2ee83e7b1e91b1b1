"""What ``fedsel study`` does once its flags are parsed: :func:`run_study_command`.

The command's body parses its flags into :class:`~fl_oracle.experiments.study.setup.StudyFlags`
(the settings the command line gives) and :class:`StudyRunning` (how the runs are run) and
calls :func:`run_study_command`, which decides everything else: the settings text run (a
config's, a stored study's), a grid or one study, the checks made before any process starts,
the data recorded in ``sources.toml``, the runs, the tables and report. What the experiments
layer cannot import from the command line (it sits below it) comes in one
:class:`CommandSide`: how an oracle factory is made (where tests inject tiny data), how an
oracle setting is checked (its error naming the flag), the worker-count rule, the command as
typed, and where an interruption's hint goes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fl_oracle.experiments.study.setup import StudyFlags, study_settings
from selection.words import counted

__all__ = ["CommandSide", "StudyRunning", "check_address", "run_study_command"]


@dataclass(frozen=True)
class StudyRunning:
    """How ``fedsel study`` runs what its settings name (none of it changes a run's result).

    Attributes:
        workers: run processes (None: the command's worker-count rule).
        executor: ``local`` (``workers`` processes here) or ``ray``.
        address: the Ray cluster to join (``executor="ray"``); None: a local instance.
        report_only: write the tables and report from the finished runs only.
        progress: show progress bars (stderr).
        grow: extend the grid in the folder by the config's new cells.
    """

    workers: int | None = None
    executor: str = "local"
    address: str | None = None
    report_only: bool = False
    progress: bool = True
    grow: bool = False


def _no_hint(hint: Callable[[], str]) -> None:
    """Where an interruption's hint goes without a command line: nowhere."""


@dataclass(frozen=True)
class CommandSide:
    """What the command line lends the study it runs (module docstring).

    Attributes:
        make_factory: ``oracle settings -> OracleFactory`` (picklable ``seed -> Oracle``).
        check_oracle: ``(seed, **oracle settings) -> config``; raises for a bad setting.
        worker_count: ``(workers, runs) -> processes``.
        command: the command as typed, written to ``sources.toml``.
        interrupt_hint: takes a callable saying, when an interruption comes, how to go on.
        flag_of: an ``[oracle]`` setting -> the flag that sets it (a refused setting is named
            as the user typed it).
    """

    make_factory: Callable[[dict[str, Any]], Any]
    check_oracle: Callable[..., Any]
    worker_count: Callable[[int | None, int], int]
    command: str = ""
    interrupt_hint: Callable[[Callable[[], str]], None] = _no_hint
    flag_of: Mapping[str, str] = field(default_factory=dict)


def run_study_command(
    flags: StudyFlags,
    out: Path,
    running: StudyRunning,
    side: CommandSide,
    *,
    federation: dict[str, Any],
    dataset: str | None = None,
) -> None:
    """``fedsel study`` in folder ``out``: a grid's cells or one paired study, checked before
    any work (ValueError in one line), run where unfinished, assembled and reported (the
    verdict on stdout, the files written on stderr).

    Args:
        flags: the settings the command line gives (the text it runs, the overrides).
        out: the study folder (held by an exclusive lock while the study runs).
        running: how the runs are run.
        side: what the command line lends (:class:`CommandSide`).
        federation: the federation flags given (configuration fields), ``dataset`` aside.
        dataset: the image-folder dataset whose domains and sizes the settings take.
    """
    from fl_oracle.experiments.study.settings import SettingError
    from fl_oracle.experiments.study.setup import as_typed

    try:
        _run_study_command(flags, out, running, side, federation=federation, dataset=dataset)
    except SettingError as exc:  # named as typed: --k 30, or k = 30 in my.toml
        fed = dict(federation, **({"dataset": dataset} if dataset is not None else {}))
        raise as_typed(exc, flags, out, federation=fed, flag_of=dict(side.flag_of)) from None


def _run_study_command(
    flags: StudyFlags,
    out: Path,
    running: StudyRunning,
    side: CommandSide,
    *,
    federation: dict[str, Any],
    dataset: str | None = None,
) -> None:
    from fl_oracle.experiments.runfolder import claim_run_folder
    from fl_oracle.experiments.study.assembly import finish_study
    from fl_oracle.experiments.study.grid import is_grid
    from fl_oracle.experiments.study.runs import check_stored
    from selection.selectors import make_selector

    if not running.report_only:
        if running.executor == "ray":  # before anything is written (no folder, no lock)
            from fl_oracle.experiments.study.ray_runs import check_ray

            check_ray()
        check_address(running.address)
    text = flags.text(out)
    overrides = flags.overrides()
    if is_grid(text):
        if flags.surrogate is not None:
            raise ValueError("--surrogate: give a grid's entries with their @SURROGATE")
        _grid(text, out, flags.add, running, side, federation=federation, dataset=dataset,
              overrides=overrides)  # fmt: skip
        return
    if running.grow:
        raise ValueError("--grow extends a grid study (a [grid] in --config); --add grows a study")
    settings, added = study_settings(
        text, dataset=dataset, federation=federation, add=flags.add, overrides=overrides
    )
    for entry in settings.entries:
        make_selector(entry.spec, seed=0)  # bad spec -> one line before any work
    # bad oracle setting -> one line before any process starts (K is the runs', settings.k)
    side.check_oracle(0, **settings.oracle)
    with claim_run_folder(out, "study", resume=True, committed="study.toml"):
        if not running.report_only:
            # a folder holding another study: refused before any data is loaded or printed
            check_stored(settings, out, grow=added is not None)
            _run_runs(settings, out, added, running, side)
        res = finish_study(settings, out)
    for line in res.terminal(str(out / "verdict.md")):
        print(line)
    print(f"wrote {out / 'report.html'}, history.csv, summary.csv, paired.csv", file=sys.stderr)


def _run_runs(
    settings: Any, out: Path, added: list[str] | None, running: StudyRunning, side: CommandSide
) -> None:
    """The study's unfinished runs, on ``workers`` processes here or on Ray."""
    from fl_oracle.experiments.study.runs import run_study
    from selection.progress import rich_progress
    from selection.selectors import make_selector

    runs = settings.seeds * len(settings.selectors)
    n_workers = side.worker_count(running.workers, runs)
    factory = side.make_factory(dict(settings.oracle))
    _record_sources(factory, out, side.command, added=added, progress=running.progress)

    def hint() -> str:  # said when the interruption comes: what is kept then
        kept = sorted((out / "runs").glob("*/seed*.csv")) if (out / "runs").is_dir() else []
        if not kept:
            return "no run had finished; run the same command again to start the study"
        return (
            f"the {len(kept)} finished runs are kept in {out / 'runs'}; run the same command "
            "again to continue (only unfinished runs are redone)"
        )

    side.interrupt_hint(hint)
    with rich_progress(enabled=running.progress, transient=False) as bar:
        run_study(
            settings,
            out,
            make_oracle=factory,
            make_selector=make_selector,
            workers=n_workers,
            progress=bar,
            grow=added is not None,
            executor=running.executor,
            address=running.address,
        )


def _grid(
    text: str,
    out: Path,
    add: str | None,
    running: StudyRunning,
    side: CommandSide,
    *,
    federation: dict[str, Any],
    dataset: str | None,
    overrides: dict[str, Any],
) -> None:
    """``fedsel study`` on a grid: every cell checked before any run, then
    :func:`~fl_oracle.experiments.study.grid_run.run_grid` with this command's way of running
    one study folder."""
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
            side.check_oracle(0, **cell.settings.oracle)
        except ValueError as exc:
            raise ValueError(f"grid cell {cell.label}: {exc}") from None
    s = grid.base
    print(
        f"fedsel: grid of {counted(len(grid.cells), 'cell')} x "
        f"{counted(len(s.selectors), 'entry')} x {counted(s.seeds, 'seed')} "
        f"({counted(len(grid.cells) * len(s.selectors) * s.seeds, 'screen run')})",
        file=sys.stderr,
    )
    with claim_run_folder(out, "study", resume=True, committed="study.toml"):
        check_stored_grid(grid, out, grow=running.grow or add is not None)
        table, lines = run_grid(grid, out, run_cell=_cell_runner(running, side))
    for line in lines:
        print(line)
    print(f"wrote {out / 'map.html'}, grid.csv, grid.md, cells/", file=sys.stderr)


def _cell_runner(running: StudyRunning, side: CommandSide):
    """How ``fedsel study`` runs one folder of a grid (the study's own steps)."""
    from fl_oracle.experiments.study.assembly import finish_study
    from fl_oracle.experiments.study.runs import run_study
    from selection.progress import rich_progress
    from selection.selectors import make_selector

    def run_cell(settings, folder: Path, label: str):
        if running.report_only:
            if not (folder / "study.toml").is_file():
                return None
            return finish_study(settings, folder)
        folder.mkdir(parents=True, exist_ok=True)
        factory = side.make_factory(dict(settings.oracle))
        _record_sources(factory, folder, side.command, progress=False, quiet=True)
        runs = settings.seeds * len(settings.selectors)
        n_workers = side.worker_count(running.workers, runs)
        with rich_progress(enabled=running.progress, transient=False) as bar:
            tick = None
            if bar is not None:

                def tick(done, total, what, bar=bar):
                    bar(done, total, f"grid {label}: {counted(len(settings.selectors), 'entry')} x "
                                     f"{counted(settings.seeds, 'seed')}, {what.split(': ', 1)[-1]}")  # fmt: skip

            run_study(
                settings, folder, make_oracle=factory, make_selector=make_selector,
                workers=n_workers, progress=tick, grow=True, executor=running.executor,
                address=running.address,
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
    reads it): ValueError in one line before any work otherwise.

    Examples:
        >>> from fl_oracle.experiments.study.command import check_address
        >>> check_address(None), check_address("auto")
        (None, None)
        >>> check_address("head")
        Traceback (most recent call last):
        ...
        ValueError: --address 'head': expected host:port (or ray://host:port)
    """
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
    factory,
    out: Path,
    command: str,
    added: list[str] | None = None,
    progress: bool = True,
    quiet: bool = False,
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
    rec = run_record(factory.config(0).device, command=command)
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
