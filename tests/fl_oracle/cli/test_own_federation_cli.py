"""`--dataset DIR` and `--model module:factory` through the commands that build a federation."""

import contextlib
import io
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from fl_oracle.cli import main
from fl_oracle.sim.data.shapes import write_shapes

HERE = Path(__file__).resolve().parents[1] / "sim"


def run_cli(argv) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main([str(a) for a in argv])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("own") / "shapes"
    return write_shapes(root, per_class=8, size=40, classes=("circle", "square", "star"))


def test_oracle_on_a_dataset_folder_records_its_domains_and_provenance(folder, tmp_path):
    out = tmp_path / "run"
    code, err = run_cli(["oracle", "--dataset", folder, "--resolution", "16", "-r", "2", "-o",
                         out, "--clients-per-domain", "2", "--threads", "1", "--no-progress"])  # fmt: skip
    assert code == 0, err
    stats = pd.read_parquet(out / "stats.parquet")
    assert sorted(stats["domain"].unique()) == ["cartoon", "photo", "sketch"]
    assert {"U_cartoon", "U_photo", "U_sketch"} <= set(stats.columns)
    cfg = tomllib.loads((out / "config.toml").read_text())
    assert cfg["dataset"] == str(folder) and cfg["resolution"] == 16
    assert cfg["domains"] == ["cartoon", "photo", "sketch"]
    src = cfg["sources"]["photo"]["train"]
    assert src["kind"] == "user files" and src["n_images"] == 18  # 3 classes x (8 - 2 test)
    # resume reads the same configuration back
    code, err = run_cli(["oracle", "--dataset", folder, "--resolution", "16", "-r", "3", "-o",
                         out, "--clients-per-domain", "2", "--threads", "1", "--no-progress",
                         "--resume"])  # fmt: skip
    assert code == 0, err
    assert pd.read_parquet(out / "stats.parquet")["round"].nunique() == 3


def test_train_with_a_user_model(folder, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    out = tmp_path / "train"
    code, err = run_cli(["train", "--dataset", folder, "--model", "_user_models:make_tiny",
                         "-r", "2", "-k", "2", "--selector", "eps:5", "-o", out,
                         "--threads", "1"])  # fmt: skip
    assert code == 0, err
    hist = pd.read_csv(out / "history.csv")
    assert len(hist) == 2 and {"acc_cartoon", "acc_photo", "acc_sketch"} <= set(hist.columns)
    assert tomllib.loads((out / "config.toml").read_text())["model"] == "_user_models:make_tiny"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--dataset", "/nonexistent/folder"], "does not exist"),
        (["--model", "nosuchmodule_q:make"], "cannot import"),
        (["--model", "resnet99"], "model"),
    ],
)
def test_bad_dataset_or_model_is_one_line_exit_2(folder, tmp_path, args, match):
    argv = ["oracle", "-r", "1", "-o", tmp_path / "bad", "--no-progress"]
    if "--dataset" not in args:
        argv += ["--dataset", folder, "--clients-per-domain", "2"]
    code, err = run_cli(argv + args)
    assert code == 2, err
    assert match in err and "Traceback" not in err
    assert not (tmp_path / "bad" / "stats.parquet").exists()


def test_a_study_on_a_dataset_fixes_its_domains_in_study_toml(folder, tmp_path):
    from fl_oracle.experiments.study.settings import StudySettings

    out = tmp_path / "study"
    code, err = run_cli(["study", "-o", out, "--dataset", folder, "--resolution", "16",
                         "--selectors", "proportional,eps:5", "--seeds", "1", "-r", "2",
                         "-k", "2", "--workers", "1"])  # fmt: skip
    assert code == 0, err
    s = StudySettings.from_toml((out / "study.toml").read_text())
    assert s.oracle["dataset"] == str(folder) and s.oracle["resolution"] == 16
    assert list(s.oracle["domains"]) == ["cartoon", "photo", "sketch"]
    assert dict(s.oracle["samples_per_client"]) == {
        "cartoon": 3,
        "photo": 3,
        "sketch": 3,
    }  # (18 - 2 val) // 5
    assert StudySettings.from_toml(s.to_toml()) == s
    metrics = pd.read_csv(out / "metrics.csv")
    assert set(metrics["entry"]) == {"proportional", "eps:5"}


def test_flower_on_a_dataset_folder_with_a_user_model(folder, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    out = tmp_path / "flower"
    code, err = run_cli(["flower", "--selector", "maxmin:2", "-k", "2", "-r", "2",
                         "--num-supernodes", "6", "--dataset", folder, "--resolution", "16",
                         "--model", "_user_models:make_tiny", "--engine", "local",
                         "-o", out])  # fmt: skip
    assert code == 0, err
    hist = pd.read_csv(out / "history.csv")
    assert len(hist) == 2 and {"acc_cartoon", "acc_photo", "acc_sketch"} <= set(hist.columns)
    assert all(len(s.split(";")) == 2 for s in hist["selected"])
    code, err = run_cli(["flower", "--selector", "maxmin:2", "-k", "2", "--num-supernodes", "4",
                         "--dataset", folder, "--engine", "local", "-o", tmp_path / "f2"])  # fmt: skip
    assert code == 2 and "multiple of 3" in err


def test_client_sizes_per_domain_from_the_command_line(folder, tmp_path):
    out = tmp_path / "sized"
    code, err = run_cli(["oracle", "--dataset", folder, "-r", "1", "-o", out, "--no-progress",
                         "--clients-per-domain", "2", "--samples-per-client",
                         "cartoon=3,photo=5"])  # fmt: skip
    assert code == 0, err
    stats = pd.read_parquet(out / "stats.parquet")
    n = stats.groupby("domain")["n_samples"].first().to_dict()
    assert n["cartoon"] == 3 and n["photo"] == 5 and n["sketch"] > 5  # the rest: equal split
    code, err = run_cli(["oracle", "--dataset", folder, "-r", "1", "-o", tmp_path / "x",
                         "--samples-per-client", "mnist=3", "--no-progress"])  # fmt: skip
    assert code == 2 and "not one of the domains" in err


def test_a_stored_dataset_study_is_read_again_with_its_dataset(folder):
    """Its study.toml names the dataset under [oracle]: read with --dataset again (a resumed
    or grown study) it ended in "dataset_fields() got multiple values for argument
    'dataset'"; now the folder given is read afresh and the settings are the same."""
    from fl_oracle.experiments.study.settings import StudySettings

    s = StudySettings.from_toml(
        'seeds = 1\nrounds = 1\nk = 2\nselectors = ["proportional", "eps:5"]\n',
        dataset=str(folder),
    )
    assert s.oracle["dataset"] == str(folder)
    assert StudySettings.from_toml(s.to_toml(), dataset=str(folder)) == s


GRID_HEAD = 'seeds = 1\nrounds = 1\nk = 2\nselectors = ["proportional", "random"]\n'


@pytest.mark.parametrize(
    "oracle, grid",
    [
        ("", "clients_per_domain = [2, 3]"),
        ("", "clients_per_domain = [2, 3]\nk = [2, 3]"),
        ("val_per_domain = 2\n", "clients_per_domain = [2, 4]"),
        ("clients_per_domain = 2\n", "val_per_domain = [2, 4]"),
        ("", "samples_per_client = [3, 'none']\nclients_per_domain = [2, 3]"),
    ],
)
def test_every_grid_cell_on_a_dataset_is_the_study_its_settings_make(folder, oracle, grid):
    """A grid on --dataset fits the folder's domains and sizes to each cell's own settings:
    every cell equals the plain study its values make on the folder (the Digits-4 default's
    val_per_domain = 200 is not kept, a cell with more clients shares the folder among them),
    and the grid reads back from its TOML equal."""
    from fl_oracle.experiments.study.grid import GridSettings, _value_text
    from fl_oracle.experiments.study.settings import StudySettings

    text = GRID_HEAD + (f"[oracle]\n{oracle}" if oracle else "") + f"[grid]\n{grid}\n"
    g = GridSettings.from_toml(text, dataset=str(folder))
    assert len(g.cells) > 1
    for cell in g.cells:
        values = {a: v for a, v in cell.values if a != "k"}
        table = tomllib.loads(GRID_HEAD + (f"[oracle]\n{oracle}" if oracle else ""))
        table.setdefault("oracle", {}).update(
            {a: v for a, v in values.items() if _value_text(v) != "none"}
        )
        plain = StudySettings.from_table(table, dataset=str(folder), k=cell.settings.k)
        assert cell.settings == plain, cell.label
    assert GridSettings.from_toml(g.to_toml()) == g  # the folder named in its [oracle]
    assert GridSettings.from_toml(g.to_toml(), dataset=str(folder)) == g


@pytest.mark.parametrize(
    "oracle, grid, cell",
    [
        ("", "clients_per_domain = [2, 50]", "clients_per_domain=50"),
        ("clients_per_domain = 2\n", "val_per_domain = [2, 1000]", "val_per_domain=1000"),
        ("", "[[grid]]\nk = [2]\n[[grid]]\nclients_per_domain = [40]", "clients_per_domain=40"),
        ("val_per_domain = 10\n", "clients_per_domain = [2, 12]", "clients_per_domain=12"),
    ],
)
def test_a_grid_cell_the_dataset_cannot_hold_is_refused_before_any_run(
    folder, tmp_path, oracle, grid, cell
):
    """Every cell is checked against the folder's image counts as the grid is read: the
    refusal names the cell and no cell has trained (the folder keeps only its lock)."""
    head = GRID_HEAD + (f"[oracle]\n{oracle}" if oracle else "")
    text = head + (grid if grid.startswith("[[") else f"[grid]\n{grid}") + "\n"
    config = tmp_path / "grid.toml"
    config.write_text(text)
    out = tmp_path / "out"
    code, err = run_cli(["study", "--config", config, "--dataset", folder, "-o", out,
                         "--no-progress"])  # fmt: skip
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("fedsel: error: grid cell") and cell in last, err
    assert "Traceback" not in err
    assert not out.exists() or {p.name for p in out.iterdir()} <= {".fedsel.lock"}
