"""One run per folder: claim a run folder for a command's lifetime.

Every command that writes a run folder (``fedsel oracle``, ``train``, ``flower``, ``study``,
``demo``) enters
:func:`claim_run_folder` before it writes anything:

* **Exclusive lock.** ``DIR/.fedsel.lock`` is created atomically (``O_CREAT``) and locked with
  ``flock(LOCK_EX | LOCK_NB)`` for the run's lifetime; a second process on the same folder gets
  :class:`RunFolderError` naming the holder's pid. The kernel drops the lock when the holder
  exits, however it exits (``kill -9`` included), so a killed run never leaves a stale lock and
  ``--resume`` works at once. The file itself stays beside a run; it is unlinked only while
  held and beside no run file, and an opener checks after locking that the path still names
  the file it locked, so two processes never hold two different files.
* **Another run's folder is refused.** A folder holding a run (any of :data:`RUN_FILES`) is
  refused unless ``resume`` (continue a run of the same kind) or ``overwrite`` (replace the run's
  files, only those, and start afresh). The error names the run's kind and seed.
* **A replacement keeps the old run until it has one of its own.** ``overwrite`` sets the old
  run's files aside (``DIR/.fedsel-replaced/``) and deletes them only once the new run has
  committed (its ``committed`` file exists, or the command finished); a replacement that fails or
  is interrupted before then puts the old run back, and one killed outright has it put back by
  the next claim of the folder.
* **No half run.** A fresh run that fails before its first committed round (bad data, a bad
  option found late) has the files it wrote removed again, so the retry is not refused; a
  refusal that leaves no run files also removes the lock file (and the folder, when the claim
  created it), so a refused command leaves nothing behind.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fl_oracle.errors import CheckpointError
from selection.words import counted

__all__ = [
    "RUN_FILES",
    "LOCK_NAME",
    "RunFolderError",
    "run_kind",
    "claim_run_folder",
    "history_rounds",
    "orphaned_temp_files",
]

LOCK_NAME = ".fedsel.lock"
# --overwrite sets the old run aside here until the new one commits its first round (or, for a
# run that commits only at its end, finishes): a replacement that fails or is interrupted before
# then puts the old run back
REPLACED_NAME = ".fedsel-replaced"
# What a run writes into its folder (oracle: config, stats, rounds, logits, checkpoints; train:
# config, history, stats). --overwrite deletes exactly these.
RUN_FILES = (
    "config.toml",
    "stats.parquet",
    "stats.csv",
    "rounds.csv",
    "history.csv",
    "run_state.pt",  # fedsel train's state after its last round (--resume continues from it)
    "checkpoints",
    "logits",
    "study.toml",  # a study (fedsel study): its settings and its finished runs
    "runs",
    "fronts.csv",  # a demo (fedsel demo): its tables, report and record
    "summary.csv",
    "report.html",
    "record.toml",
)


class RunFolderError(CheckpointError):
    """A run folder is locked by another process or holds another run."""


def orphaned_temp_files(folder: str | os.PathLike) -> list[Path]:
    """Temp files (``.<name>.<pid>.tmp``, :func:`selection.atomic.atomic_path`) anywhere under
    ``folder`` whose writing process is gone: a kill interrupted their write. A file whose pid
    is alive (another process writing now) is left alone.

    Examples:
        >>> import os, tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> deep = d / "cells" / "a" / "runs" / "e"
        >>> deep.mkdir(parents=True)
        >>> (deep / ".seed00.csv.999999999.tmp").write_text("x")  # a pid no process has
        1
        >>> (deep / f".seed01.csv.{os.getpid()}.tmp").write_text("x")  # alive: left alone
        1
        >>> [p.name for p in orphaned_temp_files(d)]
        ['.seed00.csv.999999999.tmp']
    """
    out = []
    for tmp in sorted(Path(folder).rglob(".*.tmp")):
        pid = tmp.name.rsplit(".", 2)[-2] if tmp.name.count(".") >= 3 else ""
        if pid.isdigit() and _alive(int(pid)):
            continue
        out.append(tmp)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid < 2**22  # another user's live process (or an impossible pid: gone)
    return True


def run_kind(folder: str | os.PathLike) -> str | None:
    """``oracle``, ``train``, ``flower``, ``study``, ``demo``, ``unknown`` (run files of no
    known shape) or None."""
    d = Path(folder)
    present = [name for name in RUN_FILES if (d / name).exists()]
    if not present:
        return None
    if (d / "study.toml").exists() or (d / "runs").is_dir():  # a study (its toml may be lost)
        return "study"
    if (d / "fronts.csv").exists():
        return "demo"
    if (d / "checkpoints").is_dir() or (d / "rounds.csv").exists():
        return "oracle"
    if (d / "history.csv").exists():
        try:
            cfg = tomllib.loads((d / "config.toml").read_text(encoding="utf-8"))
            engine = str(cfg.get("run", {}).get("engine", ""))
        except (OSError, ValueError, UnicodeDecodeError):
            engine = ""
        return "flower" if engine.startswith("flower") else "train"
    return "unknown"


def _describe(folder: Path, kind: str) -> str:
    """``a run (oracle, seed 3, k=5)``: the kind and the settings that tell runs apart."""
    parts, cfg = [kind], {}
    try:
        cfg = tomllib.loads((folder / "config.toml").read_text(encoding="utf-8"))
        parts += [f"{key} {cfg[key]}" for key in ("seed", "k") if key in cfg]
    except (OSError, ValueError, UnicodeDecodeError):
        pass
    if (folder / "run_state.pt").exists():  # a train run that may have stopped early
        done, asked = history_rounds(folder), cfg.get("selection", {}).get("rounds")
        parts.append(
            f"{done} of {counted(asked, 'round')} done"
            if isinstance(asked, int)
            else f"{counted(done, 'round')}"
        )
    return f"a run ({', '.join(parts)})"


def history_rounds(folder: str | os.PathLike) -> int:
    """The rounds a run folder's ``history.csv`` holds (0 without one)."""
    try:
        with open(Path(folder) / "history.csv", encoding="utf-8") as fh:
            return max(0, sum(1 for _ in fh) - 1)
    except OSError:
        return 0


def _remove_run_files(folder: Path) -> None:
    for name in RUN_FILES:
        p = folder / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


# inside the set-aside folder while files move between it and the run folder: a move cut
# short (a second interrupt, a kill) is finished by the next claim, never taken for a new run
_MOVING = ".moving"


def _set_aside(folder: Path) -> Path:
    """Move the run files into ``folder/.fedsel-replaced/`` (one rename each) and return it."""
    aside = folder / REPLACED_NAME
    shutil.rmtree(aside, ignore_errors=True)
    aside.mkdir()
    (aside / _MOVING).touch()
    for name in RUN_FILES:
        if (folder / name).exists() or (folder / name).is_symlink():
            (folder / name).rename(aside / name)
    (aside / _MOVING).unlink()
    return aside


def _put_back(folder: Path, aside: Path) -> None:
    """The set-aside run back in place (the new run's files already removed)."""
    (aside / _MOVING).touch()
    for p in aside.iterdir():
        if p.name != _MOVING:
            p.rename(folder / p.name)
    (aside / _MOVING).unlink()
    aside.rmdir()


def _recover(folder: Path, aside: Path, committed: str) -> None:
    """What a replacement left when it was killed outright (``kill -9``, out of memory): a
    move cut short is finished (the folder holds only the old run's files then); a
    replacement that committed keeps its run and the old one goes; one that never committed
    is removed and the old run comes back."""
    if (aside / _MOVING).exists():
        _put_back(folder, aside)
    elif (folder / committed).exists():
        shutil.rmtree(aside)
    else:
        _remove_run_files(folder)
        _put_back(folder, aside)


def _open_locked(path: Path, folder: Path) -> int:
    """A descriptor of ``path`` holding its exclusive flock. The lock counts only while
    ``path`` still names the locked file: a holder that unlinks it on a refusal (see
    :func:`claim_run_folder`) may have left a waiting opener the old, unlinked file, so such
    an opener tries again on the new one."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock (documented limitation)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise RunFolderError(
                f"{folder} is in use by another fedsel process (pid {holder}); "
                "wait for it to finish or choose another --out"
            ) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the file was unlinked after we opened it: lock the one there now


@contextmanager
def _lock(folder: Path) -> Iterator[None]:
    path = folder / LOCK_NAME
    fd = _open_locked(path, folder)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _leave_nothing(folder: Path, created: bool) -> None:
    """After a refusal that left no run files: the lock file goes (unlinked while still held,
    so no other process holds it: :func:`_open_locked`), and the folder too when this claim
    created it and nothing else is in it."""
    if {p.name for p in folder.iterdir()} - {LOCK_NAME}:
        return
    (folder / LOCK_NAME).unlink(missing_ok=True)
    if created:
        try:
            folder.rmdir()
        except OSError:  # something appeared meanwhile: it stays
            pass


@contextmanager
def claim_run_folder(
    folder: str | os.PathLike,
    kind: str,
    *,
    resume: bool = False,
    overwrite: bool = False,
    committed: str = "checkpoints",
    resumable: bool = True,
) -> Iterator[Path]:
    """Hold ``folder`` for one run of ``kind`` (``oracle`` or ``train``) for the with-block.

    Args:
        folder: the run folder (created when missing).
        kind: the command's run kind.
        resume: continue the run in the folder (it must be a run of ``kind``, or empty).
        overwrite: replace whatever run the folder holds (its run files only): they are set
            aside, put back if the new run fails before ``committed`` exists, else deleted.
        committed: the file or folder whose presence means a round was committed; a fresh run
            that fails before it exists has its files removed.
        resumable: the command has ``--resume`` (the refusal names it only then).

    Raises:
        RunFolderError: the folder is locked by another process, holds another run (neither
            ``resume`` nor ``overwrite``), or ``resume`` names a run of another kind.
    """
    if resume and overwrite:
        raise RunFolderError("give --resume or --overwrite, not both")
    d = Path(folder)
    if d.exists() and not d.is_dir():
        raise RunFolderError(f"--out {d} is a file, not a folder")
    created = not d.exists()
    d.mkdir(parents=True, exist_ok=True)
    with _lock(d):
        # temp files of a write that a kill interrupted (atomic_path: .<name>.<pid>.tmp), at
        # every depth a run writes (a grid's cells/<slug>/runs/<entry>/ included)
        for tmp in orphaned_temp_files(d):
            tmp.unlink(missing_ok=True)
        stale = d / REPLACED_NAME  # a replacement killed (kill -9) before it decided
        if stale.is_dir():
            _recover(d, stale, committed)
        found = run_kind(d)
        aside = None  # the old run while --overwrite replaces it
        if resume:
            if found not in (None, kind, "unknown"):  # unknown: killed before round 1
                raise RunFolderError(
                    f"cannot resume {d}: it holds {_describe(d, found)}, not a {kind} run"
                )
        elif found is not None:
            if not overwrite:
                cont = "pass --resume to continue it, " if resumable and found == kind else ""
                raise RunFolderError(
                    f"{d} already holds {_describe(d, found)}; {cont}"
                    "pass --overwrite to replace it, or choose another --out"
                )
            aside = _set_aside(d)
        fresh = not resume
        try:
            yield d
        except BaseException:
            if fresh and not (d / committed).exists():
                _remove_run_files(d)
                if aside is not None:
                    _put_back(d, aside)  # cut short by a second interrupt: the next claim
                    aside = None  # finishes it (_recover)
            elif aside is not None:  # the replacement committed: it is the run now
                shutil.rmtree(aside, ignore_errors=True)
            _leave_nothing(d, created)
            raise
        if aside is not None:  # finished: the old run is replaced for good
            shutil.rmtree(aside, ignore_errors=True)
