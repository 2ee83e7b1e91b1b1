"""``fedsel study``: a paired multi-seed comparison of selectors in live training.

Design (common random numbers): for each seed every selector trains the same federation from
the same initial model, and every random stream of training is a function of (seed, round,
client); a selector's own stream is seeded by the seed. So two selectors on one seed differ
only by what they choose, and they are compared seed by seed (:mod:`.stats`).

A study entry is a selector spec (:func:`selection.selectors.make_selector`), optionally with
an information model (``@stale``, ``@probe``, ``@pool:10``, ``@predicted``; a formulation
without one is ``fresh``, the oracle's upper bound; :mod:`selection.information`). Each
formulation is swept over its parameter (ε grid, δ grid, weight pairs, α grid), so it draws a
realized (average, worst-domain) front of its own. Entries are text in ``study.toml`` and run
folders; the settings (:mod:`.settings`) parse each once into a typed
:class:`~selection.selectors.Spec` (:meth:`~.settings.StudySettings.spec`), which the runs and
the report read.

The study folder:

* ``study.toml`` — the settings (written first; a restart with other settings is refused);
* ``runs/<entry>/seed<NN>.csv`` — one finished run's history, written atomically when the run
  ends, so a killed study restarted with the same arguments redoes only unfinished runs and
  ends with exactly the history of an uninterrupted one; ``runs/<reference>/seed00.stats.parquet``
  — the reference run's statistics (every client, every round: the fronts over rounds);
* ``history.csv``, ``summary.csv``, ``paired.csv``, ``fronts.csv``, ``surrogate.csv``,
  ``report.html`` — assembled from the run files (:func:`finish_study`);
* ``history.parquet`` — the same history, compressed and typed (:func:`write_packed_history`):
  the form a results tree keeps. A folder that holds it but lacks run files (a clone of a
  committed study: run files are not committed) gets them back from it, byte for byte, before
  the study continues or is assembled (:func:`restore_runs`), so committed studies grow and
  continue like local ones.

Why one module past 450 lines: the run files, their packed form and the race that schedules
them share one folder layout; the code that writes, checks, restores and schedules them reads
that layout in one place.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fl_oracle.experiments.cost import COST_COLUMNS
from fl_oracle.experiments.runner import RunTask, run_all
from fl_oracle.experiments.study.settings import StudySettings, entry_slug
from selection.atomic import write_table_atomic, write_text_atomic
from selection.progress import ProgressFn, report
from selection.words import counted

__all__ = [
    "entry_slug",
    "run_path",
    "run_study",
    "check_stored",
    "grown",
    "run_file_problem",
    "load_history",
    "missing_runs",
    "reference_stats",
    "restore_runs",
    "write_packed_history",
    "PACKED",
    "read_history",
    "RACE_LOG",
    "check_growth",
]

#: the compressed history a study folder keeps beside ``history.csv``
PACKED = "history.parquet"


def run_path(out: Path, entry: str, seed: int) -> Path:
    return out / "runs" / entry_slug(entry) / f"seed{seed:02d}.csv"


def _tasks(settings: StudySettings) -> list[tuple[str, RunTask]]:
    out = []
    for seed in settings.seed_list:  # seed-major: every selector of a seed, then the next
        for e in settings.entries:
            entry = e.text
            truth = entry == settings.reference and seed == settings.first_seed  # its stats kept
            task = RunTask(
                e.spec,
                seed,
                settings.rounds,
                settings.k,
                truth=truth,
                records=settings.records,
                privacy=settings.privacy,
            )
            out.append((entry, task))
    return out


def run_study(
    settings: StudySettings,
    out: str | Path,
    *,
    make_oracle: Callable[[int], Any],
    make_selector: Callable[..., Callable],
    workers: int = 1,
    progress: ProgressFn | None = None,
    on_run: Callable[[str, int], None] | None = None,
    grow: bool = False,
    executor: str = "local",
    address: str | None = None,
) -> pd.DataFrame:
    """Run every (entry, seed) not finished yet, then return the whole history.

    A finished study can **grow**: with ``grow`` the settings may add entries after the stored
    ones and seeds after the stored seeds (everything else equal, the stored entries kept in
    their order); only the new runs are made, the folder's ``study.toml`` then lists them all. Paired statistics stay
    valid as long as the code that trains is the one that made the stored runs (the caller's
    responsibility; ``fedsel study --add`` records the commit of each addition).

    Args:
        settings: the study; must equal the folder's ``study.toml`` when there is one.
        out: the study folder.
        make_oracle: picklable ``seed -> Oracle`` (K is the runs': ``settings.k``).
        make_selector: :func:`selection.selectors.make_selector` (picklable; called with each
            entry's parsed spec).
        workers: run processes (1 = in this process).
        progress: ``(rounds done, rounds total, label)`` callback.
        on_run: called with (entry, seed) after each finished run is written.
        grow: allow settings that append entries to the stored ones (see above).
        executor: ``local`` (``workers`` processes here) or ``ray`` (one Ray task per run,
            :mod:`fl_oracle.experiments.study.ray_runs`; ``workers`` is then unused).
        address: the Ray cluster to join (None: a local instance or ``RAY_ADDRESS``).

    Returns:
        The history of every run (:func:`load_history`).
    """
    out = Path(out)
    cfg = out / "study.toml"
    stored = check_stored(settings, out, grow=grow)
    if stored != settings:  # none yet, or grown
        write_text_atomic(settings.to_toml(), cfg)
    restore_runs(settings, out)
    run = dict(make_oracle=make_oracle, make_selector=make_selector, workers=workers,
               executor=executor, address=address, on_run=on_run)  # fmt: skip
    if settings.racing is not None:
        return _race(settings, out, progress, run)
    todo = _unfinished(settings, out, _tasks(settings))
    total = settings.seeds * len(settings.selectors) * settings.rounds
    _execute(settings, out, todo, progress, total - len(todo) * settings.rounds, total, run)
    return load_history(settings, out)


def check_stored(
    settings: StudySettings, out: str | Path, *, grow: bool = False
) -> StudySettings | None:
    """The settings the folder's ``study.toml`` holds (None: none yet), refused (ValueError in
    one line) where ``settings`` cannot continue them: other settings, or with ``grow`` more
    than appended entries and seeds. Writes nothing, so a command checks it before loading
    any data."""
    cfg = Path(out) / "study.toml"
    if not cfg.is_file():
        return None
    stored = StudySettings.from_toml(cfg.read_text(encoding="utf-8"))
    if grow and stored != settings:
        check_growth(stored, settings, Path(out))
    elif stored != settings:
        diff = _differing(stored, settings)
        raise ValueError(
            f"{out} holds a study with other {', '.join(diff)}; run it with the same "
            "settings to continue it, or choose another --out"
        )
    return stored


def _unfinished(settings: StudySettings, out: Path, tasks) -> list[tuple[str, RunTask]]:
    """The tasks without a finished run file (a damaged one is named and run again)."""
    todo = []
    for e, t in tasks:
        p = run_path(out, e, t.seed)
        if p.is_file():
            why = run_file_problem(p, e, t.seed, settings.rounds)
            if not why:
                continue
            print(f"fedsel: {p}: {why}; re-running that run", file=sys.stderr)
        todo.append((e, t))
    return todo


def _execute(
    settings: StudySettings,
    out: Path,
    todo: list[tuple[str, RunTask]],
    progress: ProgressFn | None,
    done: int,
    total: int,
    run: dict,
    label: str = "",
) -> None:
    """Run ``todo`` (locally or on Ray) and write each finished run's file atomically."""
    label = label or f"study: {counted(len(todo), 'run')} left"
    report(progress, done, total, label)

    def tick() -> None:
        nonlocal done
        done += 1
        report(progress, done, total, label)

    by_task = {(t.spec, t.seed): e for e, t in todo}
    tasks = [t for _, t in todo]
    make_oracle, make_selector = run["make_oracle"], run["make_selector"]
    if run["executor"] == "ray":
        from fl_oracle.experiments.study.ray_runs import run_all_ray

        runs = run_all_ray(make_oracle, make_selector, tasks, address=run["address"], tick=tick)
    elif run["executor"] == "local":
        runs = run_all(make_oracle, make_selector, tasks, workers=run["workers"], tick=tick)
    else:
        raise ValueError(f"executor {run['executor']!r} must be 'local' or 'ray'")
    for task, (res, _snap, _setup) in runs:
        entry = by_task[(task.spec, task.seed)]
        hist = res.history.assign(entry=entry)
        if entry == settings.reference and task.seed == settings.first_seed:
            stats_path = run_path(out, entry, task.seed).with_suffix(".stats.parquet")
            write_table_atomic(res.stats, stats_path)
        write_table_atomic(hist, run_path(out, entry, task.seed))
        if run["on_run"] is not None:
            run["on_run"](entry, task.seed)


#: the race's log in a study folder: every look's MCB bounds and statuses
RACE_LOG = "race.csv"


def _race(settings: StudySettings, out: Path, progress: ProgressFn | None, run: dict):
    """Run the study as a race (:mod:`.racing`): look by look, the running entries on the
    look's seeds; after each look the comparisons with the best decide who runs on. Every
    decision reads only the runs of the look's seeds, so a resumed race replays it."""
    from fl_oracle.experiments.study.racing import finished, look_table, next_entries
    from fl_oracle.experiments.study.stats import run_metrics

    race = settings.racing
    seeds = list(settings.seed_list)
    running = list(settings.selectors)
    m = len(running)
    total = settings.seeds * m * settings.rounds
    logs = []
    looks = race.looks()
    for j, n in enumerate(looks, start=1):
        look_seeds = seeds[:n]
        tasks = [(e, t) for e, t in _tasks(settings) if e in running and t.seed in look_seeds]
        todo = _unfinished(settings, out, tasks)
        # the bar's rounds already run: the run files present, less the damaged ones of this
        # look that are run again (earlier looks' files were checked when they were loaded)
        present = sum(run_path(out, e, s).is_file() for e in settings.selectors for s in seeds)
        damaged = sum(run_path(out, e, t.seed).is_file() for e, t in todo)
        spent = (present - damaged) * settings.rounds
        label = (
            f"race: look {j}/{len(looks)} ({counted(n, 'seed')}, {counted(len(running), 'entry')})"
        )
        _execute(settings, out, todo, progress, spent, total, run, label)
        history = load_history(settings, out)
        metrics = run_metrics(history, target_worst=settings.target_worst, rounds=settings.rounds)
        look = look_table(metrics, running, look_seeds, race, m)
        logs.append(look.assign(look=j))
        write_table_atomic(pd.concat(logs, ignore_index=True), out / RACE_LOG)
        if finished(look, running):
            break
        running = next_entries(look, running, keep=[settings.reference])
    return load_history(settings, out)


def grown(stored: StudySettings, add: Sequence[str]) -> StudySettings:
    """``stored`` with the entries of ``add`` it lacks appended (so a killed addition, started
    again with the same ``add``, continues)."""
    new = [e for e in dict.fromkeys(add) if e not in stored.selectors]
    return replace(stored, selectors=(*stored.selectors, *new))


def _differing(a: StudySettings, b: StudySettings) -> list[str]:
    """Names of the settings fields that differ."""
    return [f.name for f in fields(StudySettings) if getattr(a, f.name) != getattr(b, f.name)]


def check_growth(stored: StudySettings, settings: StudySettings, out: Path) -> None:
    """A study grows by entries appended and by seeds added after its own (the stored runs
    keep their seeds); nothing else may differ."""
    diff = [name for name in _differing(stored, settings) if name not in ("selectors", "seeds")]
    n = len(stored.selectors)
    if settings.seeds < stored.seeds:
        diff.append("seeds (a study grows by more seeds, never fewer)")
    if diff or settings.selectors[:n] != stored.selectors:
        what = ", ".join(diff) if diff else "selectors (the stored entries must come first)"
        raise ValueError(
            f"{out}: a study grows only by new entries and more seeds; it holds other {what}"
        )


_NUMERIC = ("round", "seed", "acc_avg", "acc_worst", "acc_gap")
# Further columns a run file records, checked where present: column -> (lowest value, whether
# it counts, so is a whole number). A column a driver could not fill is empty throughout (NaN
# is written as ""); one empty cell among filled ones is damage. The cost columns count samples
# and bytes (fl_oracle.experiments.cost), k counts clients.
_RECORDED: dict[str, tuple[float, bool]] = {
    "k": (1, True),
    "solve_seconds": (0, False),
    "round_seconds": (0, False),
    "round_cpu_seconds": (0, False),
    **{c: (0, True) for c in COST_COLUMNS},
}


def _read_run(p: Path) -> pd.DataFrame:
    return pd.read_csv(p, dtype={"selected": str, "fallback": str}, keep_default_na=False)


def run_file_problem(p: Path, entry: str, seed: int, rounds: int) -> str:
    """Why the run file ``p`` is not a finished run of (entry, seed, rounds); "" when it is.

    A finished run has exactly the rounds 0..rounds-1 once each, in order, its ``entry`` and
    ``seed`` columns equal to the file's entry and seed, numeric accuracies, and the columns of
    :data:`_RECORDED` (K, the seconds, the deployment costs) finite and in range, whole numbers
    where they count, or not recorded at all.
    """
    try:
        h = _read_run(p)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        return f"unreadable ({str(exc).splitlines()[0]})"
    lost = [c for c in ("entry", *_NUMERIC) if c not in h.columns]
    if lost:
        return f"has no column {lost[0]}"
    for c in _NUMERIC:
        v = pd.to_numeric(h[c], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(v)
        if bad.any():
            return f"row {int(bad.argmax()) + 2}: column {c} is not a number"
        bad = (v < 0) | ((v > 100) if c.startswith("acc_") else False)
        if np.any(bad):
            pos = int(np.argmax(bad))
            return f"row {pos + 2}: column {c} is {v[pos]!r}, outside its range"
    for c, (lo, counts) in _RECORDED.items():
        why = _recorded_problem(h, c, lo, counts)
        if why:
            return why
    r = pd.to_numeric(h["round"]).astype(int).tolist()
    if r != list(range(rounds)):
        return f"holds rounds {r[:3]}{'...' if len(r) > 3 else ''} ({counted(len(r), 'row')}), not 0..{rounds - 1}"
    wrong = h["entry"].astype(str) != entry
    if wrong.any():
        return f"row {int(wrong.to_numpy().argmax()) + 2}: entry is {h['entry'].iloc[int(wrong.to_numpy().argmax())]!r}, not {entry!r}"
    if (pd.to_numeric(h["seed"]).astype(int) != int(seed)).any():
        return f"a row's seed is not {seed}"
    return ""


def _recorded_problem(h: pd.DataFrame, c: str, lo: float, counts: bool) -> str:
    """Why column ``c`` of a run file cannot be read back as recorded ("" when it can): every
    cell a finite number >= ``lo`` (a whole one where it ``counts``), or every cell empty (not
    recorded). Rows are the file's lines (the header is line 1)."""
    if c not in h.columns:
        return ""
    raw = h[c]
    empty = (raw.isna() | (raw.astype(str).str.strip() == "")).to_numpy()
    if empty.all():
        return ""
    v = pd.to_numeric(raw.where(~empty), errors="coerce").to_numpy(dtype=float)
    for pos in range(len(v)):
        cell = str(raw.iloc[pos]).strip()  # as the file has it (pandas may have parsed it)
        if empty[pos]:
            why = "is empty where the other rows are recorded"
        elif not np.isfinite(v[pos]):
            why = f"is {cell!r}, not a finite number"
        elif v[pos] < lo:
            why = f"is {cell!r}, below {lo:g}"
        elif counts and v[pos] != np.floor(v[pos]):
            why = f"is {cell!r}, not a whole count"
        else:
            continue
        return f"row {pos + 2}: column {c} {why}"
    return ""


def load_history(settings: StudySettings, out: str | Path) -> pd.DataFrame:
    """Every finished run's history, in settings order (entry, seed, round).

    Raises:
        ValueError: a run file is damaged (naming the file and what is wrong); it is never
            counted.
    """
    out = Path(out)
    frames = []
    for entry in settings.selectors:
        for seed in settings.seed_list:
            p = run_path(out, entry, seed)
            if p.is_file():
                why = run_file_problem(p, entry, seed, settings.rounds)
                if why:
                    raise ValueError(
                        f"{p}: {why}; run the study again to re-run it, or remove the file"
                    )
                frames.append(_read_run(p))
    if not frames:
        return pd.DataFrame()
    h = pd.concat(frames, ignore_index=True)
    cols = ["entry", *[c for c in h.columns if c != "entry"]]
    return h[cols]


def missing_runs(settings: StudySettings, out: str | Path) -> list[tuple[str, int]]:
    """(entry, seed) pairs without a finished run file."""
    return [
        (e, s)
        for s in settings.seed_list
        for e in settings.selectors
        if not _finished(run_path(Path(out), e, s), e, s, settings.rounds)
    ]


def _finished(p: Path, entry: str, seed: int, rounds: int) -> bool:
    return p.is_file() and not run_file_problem(p, entry, seed, rounds)


def reference_stats(settings: StudySettings, out: str | Path) -> pd.DataFrame | None:
    p = run_path(Path(out), settings.reference, settings.first_seed).with_suffix(".stats.parquet")
    return pd.read_parquet(p) if p.is_file() else None


def _typed(history: pd.DataFrame) -> pd.DataFrame:
    """``history`` with its text columns that hold numbers or nothing read as floats (an
    empty cell NaN), so Parquet stores them typed; text columns stay text."""
    h = history.copy()
    for c in h.columns:
        if h[c].dtype.kind in "OT" or str(h[c].dtype).startswith("str"):
            v = h[c].astype(str)
            num = pd.to_numeric(v.where(v != ""), errors="coerce")
            if (num.notna() | (v == "")).all():
                h[c] = num.astype(float)
    return h


def write_packed_history(settings: StudySettings, history: pd.DataFrame, out: str | Path) -> Path:
    """Write ``history`` as ``out/history.parquet`` (zstd): every run's rows with exact floats,
    about a tenth of the CSV, and in its metadata each run file's columns, so that
    :func:`restore_runs` rebuilds the run files byte for byte."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from selection.atomic import atomic_path

    out = Path(out)
    columns = {}
    for e in settings.selectors:
        for s in settings.seed_list:
            rp = run_path(out, e, s)
            if rp.is_file():
                columns[f"{e}\t{s}"] = list(pd.read_csv(rp, nrows=0).columns)
    table = pa.Table.from_pandas(_typed(history), preserve_index=False)
    meta = {**(table.schema.metadata or {}), b"fedsel.run_columns": json.dumps(columns).encode()}
    p = out / PACKED
    with atomic_path(p) as tmp:
        pq.write_table(
            table.replace_schema_metadata(meta), tmp, compression="zstd", compression_level=19
        )
    return p


def restore_runs(settings: StudySettings, out: str | Path) -> list[tuple[str, int]]:
    """Write back, from ``out/history.parquet``, the run files of ``settings`` that ``out``
    lacks but the packed history holds whole (every round); returns the (entry, seed) pairs
    restored. A restored run file has the text the packed one had (its columns in its order,
    the same numbers), so the study continues and assembles exactly as before."""
    import json

    import pyarrow.parquet as pq

    out = Path(out)
    packed = out / PACKED
    if not packed.is_file():
        return []
    wanted = [
        (e, s) for s in settings.seed_list for e in settings.selectors
        if not run_path(out, e, s).exists()
    ]  # fmt: skip
    if not wanted:
        return []
    try:
        table = pq.read_table(packed)
        h = table.to_pandas()
        meta = json.loads((table.schema.metadata or {}).get(b"fedsel.run_columns", b"{}"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{packed}: unreadable ({str(exc).splitlines()[0]})") from None
    if "entry" not in h.columns or "seed" not in h.columns:
        raise ValueError(f"{packed}: not a study history (no entry or seed column)")
    groups = dict(list(h.groupby(["entry", "seed"], sort=False)))
    done = []
    for e, s in wanted:
        g = groups.get((e, s))
        if g is None or len(g) != settings.rounds:
            continue
        cols = meta.get(f"{e}\t{s}") or [c for c in g.columns if c != "entry"] + ["entry"]
        p = run_path(out, e, s)
        write_table_atomic(g[cols], p)
        why = run_file_problem(p, e, s, settings.rounds)
        if why:
            p.unlink()
            raise ValueError(f"{packed}: the run {e!r} seed {s} it holds is damaged ({why})")
        done.append((e, s))
    return done


def read_history(folder: str | Path) -> pd.DataFrame:
    """A study folder's whole history: ``history.parquet`` where it is (typed: an empty cell
    NaN; a committed study has only this), else ``history.csv``."""
    folder = Path(folder)
    if (folder / PACKED).is_file():
        return pd.read_parquet(folder / PACKED)
    if (folder / "history.csv").is_file():
        return pd.read_csv(folder / "history.csv")
    raise ValueError(f"{folder} holds no study history (history.parquet or history.csv)")
