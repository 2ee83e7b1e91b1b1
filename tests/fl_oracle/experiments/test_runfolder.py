"""One run per folder (issue 9, classes 3-5): locks, refusing another run, no half runs."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fl_oracle.cli import main
from fl_oracle.errors import CheckpointError, OracleError
from fl_oracle.experiments.oracle_run import run_oracle
from fl_oracle.experiments.runfolder import (
    LOCK_NAME,
    REPLACED_NAME,
    RUN_FILES,
    RunFolderError,
    claim_run_folder,
    run_kind,
)

from helpers.oracle import tiny_config, tiny_data

ROOT = Path(__file__).resolve().parents[3]


def run_cli(argv) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main([str(a) for a in argv])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


def fake_oracle_run(folder: Path, seed: int = 7) -> Path:
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "round_00001.pt").write_bytes(b"x")
    (folder / "config.toml").write_text(f"seed = {seed}\nk = 3\n")
    (folder / "stats.parquet").write_bytes(b"stats")
    (folder / "rounds.csv").write_text("round\n0\n")
    return folder


def fake_train_run(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text("seed = 2\n")
    (folder / "history.csv").write_text("round\n0\n")
    return folder


def test_run_kind(tmp_path):
    assert run_kind(tmp_path) is None
    assert run_kind(fake_oracle_run(tmp_path / "o")) == "oracle"
    assert run_kind(fake_train_run(tmp_path / "t")) == "train"
    (tmp_path / "u").mkdir()
    (tmp_path / "u" / "config.toml").write_text("seed = 1\n")
    assert run_kind(tmp_path / "u") == "unknown"


@pytest.mark.parametrize("kind", ["oracle", "train"])
def test_another_run_is_refused_and_left_intact(kind, tmp_path):
    folder = fake_oracle_run(tmp_path / "run")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(RunFolderError, match=r"already holds a run \(oracle, seed 7, k 3\)"):
        with claim_run_folder(folder, kind):
            pytest.fail("entered")
    assert {
        p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != LOCK_NAME
    } == before


def test_resume_of_another_kind_is_refused(tmp_path):
    folder = fake_train_run(tmp_path / "t")
    with pytest.raises(RunFolderError, match="cannot resume .* not a oracle run"):
        with claim_run_folder(folder, "oracle", resume=True):
            pass
    with pytest.raises(RunFolderError, match="--resume or --overwrite, not both"):
        with claim_run_folder(folder, "train", resume=True, overwrite=True):
            pass


def test_overwrite_deletes_only_the_run_files(tmp_path):
    folder = fake_oracle_run(tmp_path / "run")
    (folder / "notes.txt").write_text("mine")
    with claim_run_folder(folder, "train", overwrite=True) as d:
        assert run_kind(d) is None
        (d / "history.csv").write_text("round\n0\n")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [LOCK_NAME, "history.csv", "notes.txt"]
    )


def test_an_interrupted_overwrite_puts_the_old_run_back(tmp_path):
    """make demo-example interrupted once lost the committed example it was replacing."""
    folder = fake_oracle_run(tmp_path / "run")
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(KeyboardInterrupt):
        with claim_run_folder(folder, "demo", overwrite=True, committed="summary.csv") as d:
            assert run_kind(d) is None  # the old run is out of the way while the new one runs
            (d / "fronts.csv").write_text("half")
            raise KeyboardInterrupt
    kept = [p for p in folder.rglob("*") if p.is_file() and p.name != LOCK_NAME]
    assert {p.relative_to(folder): p.read_bytes() for p in kept} == before
    assert not (folder / REPLACED_NAME).exists()


def _files(folder):
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != LOCK_NAME
    }


def test_a_replacement_killed_before_it_committed_is_undone_by_the_next_claim(tmp_path):
    """kill -9 during a replacement's first round: the old run set aside, the new run's
    config.toml written, nothing committed. The next claim puts the old run back."""
    from fl_oracle.experiments.runfolder import _set_aside

    folder = fake_oracle_run(tmp_path / "run")
    before = _files(folder)
    _set_aside(folder)
    (folder / "config.toml").write_text("seed = 9\n")  # the killed replacement's
    with pytest.raises(RunFolderError, match="already holds a run"):
        with claim_run_folder(folder, "oracle"):  # the old run is back, and is refused
            pass
    assert _files(folder) == before and not (folder / REPLACED_NAME).exists()


def test_a_replacement_killed_after_it_committed_keeps_its_run(tmp_path):
    from fl_oracle.experiments.runfolder import _set_aside

    folder = fake_oracle_run(tmp_path / "run")
    _set_aside(folder)
    (folder / "config.toml").write_text("seed = 9\n")
    (folder / "checkpoints").mkdir()
    (folder / "checkpoints" / "round_00001.pt").write_bytes(b"new")  # committed
    with claim_run_folder(folder, "oracle", resume=True) as d:
        assert (d / "config.toml").read_text() == "seed = 9\n"
    assert not (folder / REPLACED_NAME).exists()
    assert (folder / "checkpoints" / "round_00001.pt").read_bytes() == b"new"


def test_a_move_cut_short_is_finished_by_the_next_claim(tmp_path):
    """A set-aside or a put-back cut short (a second interrupt, a kill) leaves old files on
    both sides; the next claim finishes putting them back, losing none."""
    folder = fake_oracle_run(tmp_path / "run")
    before = _files(folder)
    aside = folder / REPLACED_NAME
    aside.mkdir()
    (aside / ".moving").touch()
    (folder / "config.toml").rename(aside / "config.toml")  # one moved, the rest not yet
    with claim_run_folder(folder, "oracle", resume=True):
        pass
    assert _files(folder) == before and not aside.exists()


def test_a_second_interrupt_while_putting_back_loses_nothing(tmp_path, monkeypatch):
    import fl_oracle.experiments.runfolder as runfolder

    folder = fake_oracle_run(tmp_path / "run")
    before = _files(folder)
    real = runfolder._put_back

    def interrupted(d, aside):  # the first file back, then a second Ctrl-C
        (aside / ".moving").touch()
        first = next(p for p in aside.iterdir() if p.name != ".moving")
        first.rename(d / first.name)
        raise KeyboardInterrupt

    monkeypatch.setattr(runfolder, "_put_back", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with claim_run_folder(folder, "demo", overwrite=True, committed="summary.csv") as d:
            (d / "fronts.csv").write_text("half")
            raise KeyboardInterrupt
    monkeypatch.setattr(runfolder, "_put_back", real)
    with pytest.raises(RunFolderError, match="already holds a run"):
        with claim_run_folder(folder, "oracle"):
            pass
    assert _files(folder) == before


def test_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(RunFolderError, match="is a file"):
        with claim_run_folder(tmp_path / "f", "oracle"):
            pass


def test_a_failed_fresh_start_leaves_nothing(tmp_path):
    folder = tmp_path / "run"
    with pytest.raises(OracleError, match="bad data"):
        with claim_run_folder(folder, "oracle"):
            (folder / "config.toml").write_text("seed = 0\n")
            raise OracleError("bad data")
    assert not any((folder / n).exists() for n in RUN_FILES)
    with claim_run_folder(folder, "oracle"):  # the retry is not refused
        (folder / "checkpoints").mkdir()
        (folder / "config.toml").write_text("seed = 0\n")
        raise_later = True
    assert raise_later and (folder / "config.toml").exists()


@pytest.mark.parametrize("resume", [False, True])  # a train-like start, a study-like claim
@pytest.mark.parametrize("exists", [False, True])
def test_a_refusal_inside_a_claim_leaves_no_lock_behind(tmp_path, exists, resume):
    """Issue 53: a refusal after the folder was claimed (an option found bad late) leaves
    neither the lock file nor, when the claim made it, the folder; a folder the user made
    stays, empty."""
    folder = tmp_path / "run"
    if exists:
        folder.mkdir()
    with pytest.raises(ValueError, match="refused late"):
        with claim_run_folder(folder, "train", resume=resume):
            assert (folder / LOCK_NAME).is_file()
            raise ValueError("refused late")
    assert folder.exists() == exists
    if exists:
        assert list(folder.iterdir()) == []
    with claim_run_folder(folder, "train", resume=resume):  # the retry is not refused
        (folder / "history.csv").write_text("round\n0\n")
    assert sorted(p.name for p in folder.iterdir()) == [LOCK_NAME, "history.csv"]


def test_a_lock_file_unlinked_by_its_holder_is_not_locked_twice(tmp_path, monkeypatch):
    """An opener whose lock file is unlinked between its open and its flock (the holder's
    refusal) locks the file the path names afterwards, never the unlinked one: two processes
    never hold two different lock files."""
    import fcntl

    from fl_oracle.experiments.runfolder import _open_locked

    path = tmp_path / LOCK_NAME
    path.write_text("")
    real, calls = fcntl.flock, []

    def flock(fd, op):
        calls.append(os.fstat(fd).st_ino)
        if len(calls) == 1:  # the holder unlinks it, and another opener makes a new one
            path.unlink()
            path.write_text("")
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    fd = _open_locked(path, tmp_path)
    try:
        assert len(calls) == 2 and calls[0] != calls[1]  # it tried again on the new file
        assert os.path.samestat(os.fstat(fd), os.stat(path))
    finally:
        os.close(fd)


def test_a_failure_after_a_committed_round_keeps_the_run(tmp_path):
    folder = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        with claim_run_folder(folder, "oracle"):
            (folder / "checkpoints").mkdir()
            (folder / "config.toml").write_text("seed = 0\n")
            raise KeyboardInterrupt
    assert (folder / "config.toml").exists()


def test_second_claim_on_a_locked_folder_is_refused(tmp_path):
    with claim_run_folder(tmp_path, "oracle"):
        with pytest.raises(
            RunFolderError, match=f"in use by another fedsel process \\(pid {os.getpid()}\\)"
        ):
            with claim_run_folder(tmp_path, "oracle"):
                pass
    with claim_run_folder(tmp_path, "oracle"):  # released on exit
        pass


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from fl_oracle.experiments.runfolder import claim_run_folder, RunFolderError
    folder = Path(sys.argv[1])
    try:
        with claim_run_folder(folder, "oracle"):
            (folder / "config.toml").write_text(f"seed = {sys.argv[2]}\\n")
            (folder / "checkpoints").mkdir(exist_ok=True)
            print("held", flush=True)
            time.sleep(float(sys.argv[3]))
            (folder / "stats.csv").write_text(f"seed {sys.argv[2]}\\n")
    except RunFolderError as exc:
        print(f"refused: {exc}", flush=True)
        sys.exit(2)
    """
)


def _holder(folder: Path, seed: int, sleep: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder), str(seed), str(sleep)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_lock_is_released_when_the_holder_is_killed(tmp_path):
    proc = _holder(tmp_path, 1, 60)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderError, match=f"pid {proc.pid}"):
            with claim_run_folder(tmp_path, "oracle", resume=True):
                pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with claim_run_folder(tmp_path, "oracle", resume=True):  # kill -9 then --resume works
        pass


def test_concurrent_starts_one_wins_the_other_is_refused(tmp_path):
    procs = [_holder(tmp_path, seed, 1.0) for seed in (1, 2)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    loser = outs[[p.returncode for p in procs].index(2)]
    assert "in use by another fedsel process" in loser or "already holds a run" in loser
    winner = (1, 2)[[p.returncode for p in procs].index(0)]
    assert (tmp_path / "config.toml").read_text() == f"seed = {winner}\n"
    assert (tmp_path / "stats.csv").read_text() == f"seed {winner}\n"


# -- through the commands ----------------------------------------------------------------------


def test_train_refuses_an_oracle_folder_and_changes_nothing(tmp_path):
    folder = fake_oracle_run(tmp_path / "run")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    code, err = run_cli(["train", "--selector", "random", "--k", 2, "--rounds", 1, "--out", folder])
    assert code == 2 and err.count("\n") == 1, err
    assert "already holds a run (oracle, seed 7" in err and "--overwrite" in err
    assert "--resume" not in err  # train has no --resume: the refusal does not suggest it
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    assert after == before


def test_oracle_failed_start_then_retry_then_damaged_checkpoint(tmp_path, monkeypatch):
    import fl_oracle.sim.oracle as oracle_mod

    data, cfg, out = tiny_data(), tiny_config(k=3, lr=0.2), tmp_path / "run"

    def broken(*args, **kwargs):
        raise OracleError("truncated IDX file")

    with monkeypatch.context() as m:
        m.setattr(oracle_mod, "Oracle", broken)
        with pytest.raises(OracleError, match="truncated IDX"):
            run_oracle(cfg, rounds=1, out=out, data=data, progress=False)
    assert not any((out / n).exists() for n in RUN_FILES)  # no half run
    run_oracle(cfg, rounds=1, out=out, data=data, progress=False)  # the retry starts
    assert (out / "config.toml").is_file() and (out / "checkpoints" / "round_00001.pt").is_file()
    with pytest.raises(CheckpointError, match="already holds a run"):
        run_oracle(cfg, rounds=1, out=out, data=data, progress=False)
    (out / "checkpoints" / "round_00002.pt").write_bytes(b"")  # a zero-byte checkpoint
    with pytest.raises(CheckpointError, match="round_00002.pt is empty"):
        run_oracle(cfg, rounds=2, out=out, data=data, progress=False, resume=True)


def test_overwrite_with_bad_data_keeps_the_old_run(tmp_path):
    """--overwrite --data real without a data root once deleted the old run, then failed."""
    folder = fake_oracle_run(tmp_path / "run")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    code, err = run_cli(
        ["oracle", "--rounds", 1, "--out", folder, "--overwrite", "--data", "real", "--no-progress"]
    )
    assert code == 2 and "needs a data root" in err
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != LOCK_NAME}
    assert after == before


def test_temp_files_of_a_killed_write_are_removed(tmp_path):
    folder = fake_oracle_run(tmp_path / "run")
    stale = folder / "checkpoints" / ".round_00002.pt.999.tmp"
    stale.write_bytes(b"half")
    with claim_run_folder(folder, "oracle", resume=True):
        assert not stale.exists()


def test_a_study_folder_without_its_toml_is_still_a_study(tmp_path):
    (tmp_path / "s" / "runs" / "eps_5").mkdir(parents=True)
    (tmp_path / "s" / "history.csv").write_text("round\n0\n")
    assert run_kind(tmp_path / "s") == "study"


@pytest.mark.parametrize("depth", [0, 1, 2, 4])
def test_a_claim_sweeps_a_killed_writes_temp_files_at_every_depth(tmp_path, depth):
    """kill -9 mid-write leaves .<name>.<pid>.tmp wherever the run writes (a grid's
    cells/<slug>/runs/<entry>/ is four folders deep): the next claim removes it; a temp file
    whose process is alive is another writer's and stays."""
    from fl_oracle.experiments.runfolder import claim_run_folder

    where = tmp_path.joinpath(*[f"d{i}" for i in range(depth)])
    where.mkdir(parents=True, exist_ok=True)
    dead = where / ".seed00.stats.parquet.999999999.tmp"
    live = where / f".seed01.csv.{os.getppid()}.tmp"
    dead.write_text("half")
    live.write_text("being written")
    with claim_run_folder(tmp_path, "study", resume=True):
        pass
    assert not dead.exists() and live.exists()
