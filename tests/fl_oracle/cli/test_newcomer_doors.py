"""What a newcomer meets at the door: a refused setting named as the user typed it (the flag,
``--k 30``, or the study's own key, ``k=30``; never an internal configuration field or an
[oracle] table that refuses k), and a first fedsel train that shows its data being made."""

from __future__ import annotations

import pytest

from helpers.cli import run_fedsel as run


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["train", "--selector", "random", "--k", "30", "--rounds", "1"], "--k 30: exceeds the 20 clients"),
        (["study", "--k", "30", "--rounds", "1", "--seeds", "1"], "--k 30: exceeds the 20 clients"),
        (["study", "--reference", "foo", "--seeds", "1"], "--reference foo: is not among the selectors"),
        (["study", "--model", "resnet19", "--seeds", "1"], "--model resnet19: must be one of"),
        (["train", "--selector", "random", "--clients-per-domain", "1", "--k", "5", "--rounds", "1"],
         "--k 5: exceeds the 4 clients"),
    ],
)  # fmt: skip
def test_the_error_names_what_was_typed(argv, said, tmp_path, capsys):
    code, _, err = run([*argv, "--out", tmp_path / "out"], capsys)
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert said in line and "config field" not in line and "[oracle]" not in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ("k = 30\n", "k = 30 in {config}: exceeds the 20 clients"),
        ("seeds = 2\nreference = 'foo'\n", 'reference = "foo" in {config}: is not among'),
        ("[oracle]\nmodel = 'resnet19'\n", '[oracle] model = "resnet19" in {config}: must be'),
    ],
)  # fmt: skip
def test_a_refused_setting_of_a_config_names_its_key_and_file(toml, said, tmp_path, capsys):
    """A setting refused in --config's TOML is named by its key and the file (it was the
    settings' "study: k=30", which names neither), and one of a flag by the flag; a stored
    study continued with --out alone names its study.toml."""
    config = tmp_path / "my.toml"
    config.write_text(toml)
    code, _, err = run(["study", "--config", config, "--out", tmp_path / "out"], capsys)
    assert code == 2 and said.format(config=config) in err.strip().splitlines()[-1], err
    assert not (tmp_path / "out").exists()
    stored = tmp_path / "stored"
    stored.mkdir()
    (stored / "study.toml").write_text(toml)
    code, _, err = run(["study", "--out", stored], capsys)
    assert code == 2 and said.format(config=stored / "study.toml") in err, err


def test_train_builds_its_federation_under_a_progress_bar(monkeypatch):
    """The first use of a federation generates its stand-ins (about a minute): fedsel train
    hands the oracle a progress callback for it, not progress=False (it was silent)."""
    import fl_oracle.cli.train as cli_train
    import fl_oracle.sim.oracle as sim_oracle

    seen = {}

    class Recorder:
        def __init__(self, config, data=None, progress=None):
            seen["progress"] = progress

    monkeypatch.setattr(sim_oracle, "Oracle", Recorder)
    cli_train._with_bar(cli_train.make_config(0, k=5), no_progress=False)
    assert callable(seen["progress"])
    cli_train._with_bar(cli_train.make_config(0, k=5), no_progress=True)
    assert seen["progress"] is False  # --no-progress: none


def test_a_private_runs_config_records_its_privacy(tmp_path):
    """config.toml of a private train run holds ε, δ, z and secure aggregation (it held
    none), and still reads back as the configuration."""
    import tomllib

    from fl_oracle.cli.train import _recorded_config, make_config
    from fl_oracle.experiments.privacy import StatsPrivacy
    from fl_oracle.sim.config import OracleConfig

    config = make_config(0, k=5)
    privacy = StatsPrivacy(epsilon=1.0, delta=1e-5, rounds=3)
    text = _recorded_config(config, object(), privacy, "maxmin:2@probe")
    raw = tomllib.loads(text)
    assert raw["privacy"]["dp_epsilon"] == 1.0 and raw["privacy"]["dp_delta"] == 1e-5
    assert raw["privacy"]["dp_z"] == pytest.approx(privacy.z)
    assert raw["privacy"]["secure_aggregation"] is False
    assert raw["selection"]["selector"] == "maxmin:2@probe"
    assert OracleConfig.from_toml(text) == config


def _flags(command) -> dict[str, str]:
    """Every visible long flag of a click command -> the parameter's kind (file, count, ...)."""
    out = {}
    for p in command.params:
        if getattr(p, "hidden", False):
            continue
        for opt in p.opts:
            if opt.startswith("--"):
                out[opt] = p.name
    return out


def test_one_flag_means_one_thing_in_every_command():
    """--stats is a round-stats file wherever it shows (train and flower name the information
    model --information), --rounds a count of training rounds (sweep's selection of rounds is
    --per-round), --workers the parallel processes (no --jobs beside it): checked over every
    command of the app, so a new command cannot bring the clash back."""
    from typer.main import get_command

    from fl_oracle.cli import build_app

    app = get_command(build_app())
    kinds = {"--stats": set(), "--rounds": set(), "--workers": set(), "--jobs": set()}
    for name, cmd in app.commands.items():
        flags = _flags(cmd)
        for flag in kinds:
            if flag in flags:
                param = next(p for p in cmd.params if flag in p.opts)
                kinds[flag].add((name, param.type.name))
    assert {t for _, t in kinds["--stats"]} == {"path"}, kinds["--stats"]
    assert {t for _, t in kinds["--rounds"]} == {"integer range"}, kinds["--rounds"]
    assert kinds["--jobs"] == set()
    assert {n for n, _ in kinds["--workers"]} >= {"sweep", "compare", "study"}


@pytest.mark.parametrize(
    ("argv", "old", "new"),
    [
        (["train", "--selector", "random", "--k", "2", "--rounds", "1", "--stats", "fresh", "-o", "o",
          "--information", "fresh"], "--stats", "--information"),
        (["sweep", "--stats", "s.csv", "--k", "2", "--method", "eps", "--out", "o",
          "--jobs", "2", "--workers", "2"], "--jobs", "--workers"),
    ],
)  # fmt: skip
def test_an_old_flag_beside_its_new_name_is_refused(argv, old, new, tmp_path, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2 and old in err and new in err, err


def test_an_old_flag_still_works_with_a_note(tmp_path, capsys):
    from selection.example import example_stats

    stats = tmp_path / "s.csv"
    example_stats().to_csv(stats, index=False)
    code, _, err = run(["sweep", "--stats", stats, "--k", "5", "--method", "eps", "--eps", "30",
                        "--jobs", "1", "--rounds", "2", "--out", tmp_path / "o",
                        "--no-progress"], capsys)  # fmt: skip
    assert code == 0 and "--jobs is --workers" in err and "--rounds is --per-round" in err, err


def test_every_where_i_wrote_line_goes_to_stderr():
    """Results go to stdout, notes to stderr: every command's "wrote ..." line is a note,
    printed to stderr (it was stdout in data, oracle, demo and analyze, stderr elsewhere)."""
    import ast

    from helpers import ROOT

    bad = []
    for path in [
        *(ROOT / "fl_oracle" / "cli").glob("*.py"),
        *(ROOT / "selection" / "cli").glob("*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print"):
                continue
            first = node.args[0] if node.args else None
            text = ast.unparse(first) if first is not None else ""
            where = "wrote" in text or "-> {out" in text  # train and flower said "... -> DIR"
            if where and not any(k.arg == "file" for k in node.keywords):
                bad.append(f"{path.name}:{node.lineno}")
    assert bad == [], f"'wrote' lines on stdout: {bad}"


def _said_on_stderr(path) -> bool:
    """Whether a command module prints a "wrote ..." line to stderr."""
    import ast

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print" and node.args:
            if "wrote" in ast.unparse(node.args[0]) and any(k.arg == "file" for k in node.keywords):
                return True
    return False


@pytest.mark.parametrize("module", ["selection/cli/compare.py", "fl_oracle/cli/train.py",
                                    "fl_oracle/cli/flower.py", "selection/cli/analyze.py"])  # fmt: skip
def test_every_writing_command_says_where_it_wrote(module):
    """compare said nothing of where it wrote; train and flower said it on stdout."""
    from helpers import ROOT

    assert _said_on_stderr(ROOT / module), module


def test_compare_says_where_it_wrote_on_stderr(tmp_path, capsys):
    from selection.example import example_stats

    stats = tmp_path / "s.csv"
    example_stats().to_csv(stats, index=False)
    out = tmp_path / "cmp"
    code, stdout, err = run(["compare", "-s", stats, "-k", "5", "-o", out, "--no-progress",
                             "--backend", "enum"], capsys)  # fmt: skip
    assert code == 0, err
    assert f"wrote {out / 'compare.csv'}, compare.html, fronts.csv" in err
    assert "wrote" not in stdout


@pytest.mark.parametrize(
    ("argv", "near"),
    [
        (["solve", "-s", "{stats}", "-k", "3", "--method", "maxmn"], "maxmin"),
        (["sweep", "-s", "{stats}", "-k", "3", "--method", "maxmn", "-o", "{out}"], "maxmin"),
        (["solve", "-s", "{stats}", "-k", "3", "--method", "eps", "--eps", "5",
          "--surrogate", "ensembl"], "ensemble"),
        (["solve", "-s", "{stats}", "-k", "3", "--method", "eps", "--eps", "5",
          "--backend", "higs"], "highs"),
        (["compare", "-s", "{stats}", "-k", "3", "--backend", "higs", "-o", "{out}"], "highs"),
        (["train", "--selector", "random", "--information", "stael", "--k", "3", "--rounds", "1",
          "-o", "{out}"], "stale"),
        (["train", "--selector", "random", "--model", "resnet19", "--k", "3", "--rounds", "1",
          "-o", "{out}"], "resnet18"),
        (["study", "--model", "resnet19", "-o", "{out}"], "resnet18"),
        (["study", "--selectors", "proportional,eps:5", "--surrogate", "ensembl", "-o", "{out}"],
         "ensemble"),
    ],
)  # fmt: skip
def test_a_mistyped_name_gets_a_did_you_mean(argv, near, tmp_path, capsys):
    """A typo of --method, --surrogate, --backend, --information or --model is one line, exit
    2, naming the closest choice (only selector specs did)."""
    from selection.example import example_stats

    stats = tmp_path / "s.csv"
    example_stats().to_csv(stats, index=False)
    argv = [a.format(stats=stats, out=tmp_path / "out") for a in argv]
    code, _, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert f"did you mean {near!r}?" in lines[0], err
    assert not (tmp_path / "out").exists()


def test_a_folder_holding_another_study_is_refused_before_any_data(monkeypatch, tmp_path, capsys):
    """fedsel study --out DIR, DIR holding a study with other selectors, printed four 'data
    ...' provenance lines (the data loaded) before refusing; it refuses first."""
    from fl_oracle.experiments.study.settings import StudySettings

    from helpers.cli import forbid_data

    out = tmp_path / "st"
    out.mkdir()
    stored = StudySettings(seeds=1, rounds=1, k=2, selectors=("proportional", "random"))
    (out / "study.toml").write_text(stored.to_toml())
    forbid_data(monkeypatch, "the data were loaded before the refusal")
    code, _, err = run(["study", "--out", out, "--seeds", "1", "--rounds", "1", "--k", "2",
                        "--selectors", "proportional,eps:5", "--no-progress"], capsys)  # fmt: skip
    assert code == 2 and "holds a study with other selectors" in err, err
    assert err.strip().count("\n") == 0, err  # the refusal alone: no data lines before it
    assert (out / "study.toml").read_text() == stored.to_toml()
    assert not (out / "sources.toml").exists()


def test_a_study_on_ray_without_ray_leaves_nothing_behind(monkeypatch, tmp_path, capsys):
    """--executor ray without Ray installed exited 2 but left study.toml, sources.toml and
    .fedsel.lock; Ray is checked before anything is written."""
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray: ImportError, as without it
    out = tmp_path / "st"
    code, _, err = run(["study", "--out", out, "--executor", "ray", "--seeds", "1", "--rounds",
                        "1", "--k", "2", "--selectors", "proportional,random", "--no-progress"],
                       capsys)  # fmt: skip
    assert code == 2 and "--executor ray needs Ray" in err, err
    assert not out.exists()
