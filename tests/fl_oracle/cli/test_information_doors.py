"""An information model is checked in one place (``Spec.run_information``) for every driver and
every door it enters by: a spec's ``@MODEL``, ``--stats``, a study's TOML, its ``--selectors``
and ``--add``, ``fedsel flower``. Each bad class of input is refused with one line and exit
code 2 by arithmetic on the settings, before any data is loaded or generated, leaving no run
folder, no lock and no study file behind (issue 53)."""

from __future__ import annotations

import itertools

import pytest

from fl_oracle.experiments.runfolder import LOCK_NAME
from fl_oracle.experiments.study.settings import StudySettings
from selection.errors import SelectionError
from selection.information import information_models
from selection.specs import parse_spec

from helpers.cli import forbid_data, run_fedsel

CPD, N, K = 2, 8, 3  # clients per domain, clients (4 domains), clients per round
BAD_P = [1, 2, 9, 99]  # P < K and P > N
# every model as a valid modifier: its example argument (the pool's P fitted to N and K)
MODELS = [
    c.name if c.arg is None else f"{c.name}:{4 if c.arg == 'P' else c.arg_example}"
    for c in information_models().values()
]


@pytest.fixture(autouse=True)
def no_data(monkeypatch):
    """Any federation built (data loaded or generated) is the defect these tests look for."""
    forbid_data(monkeypatch, "data were touched before the information model was checked")


def assert_refused(code: int, err: str, *needles: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("fedsel: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def assert_nothing_left(out) -> None:
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == []


def _train(out, selector: str, *extra) -> list:
    return ["train", "--selector", selector, "-k", K, "-r", 1, "--clients-per-domain", CPD,
            "-o", out, "--no-progress", *extra]  # fmt: skip


def _flower(out, selector: str, *extra) -> list:
    pytest.importorskip("flwr")
    return ["flower", "--selector", selector, "-k", K, "-r", 1, "--num-supernodes", N,
            "--engine", "local", "-o", out, *extra]  # fmt: skip


def _study_toml(tmp_path, entries) -> StudySettings:
    return StudySettings.from_toml(
        'seeds = 1\nrounds = 1\nk = 3\nreference = "proportional"\n[oracle]\n'
        f"clients_per_domain = {CPD}\n",
        selectors=("proportional", *entries),
    )


# -------------------------------------------------------------- pool:P outside K <= P <= N
DOORS = ["train spec", "train --stats", "flower spec", "flower --stats", "study TOML",
         "study --selectors", "study --add"]  # fmt: skip


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("p", BAD_P)
def test_a_pool_outside_k_and_n_is_refused_at_every_door_before_any_data(door, p, tmp_path, capsys):
    out = tmp_path / "out"
    before = None
    if door == "train spec":
        argv = _train(out, f"maxmin:2@pool:{p}")
    elif door == "train --stats":
        argv = _train(out, "maxmin:2", "--information", f"pool:{p}")
    elif door == "flower spec":
        argv = _flower(out, f"maxmin:2@pool:{p}")
    elif door == "flower --stats":
        argv = _flower(out, "maxmin:2", "--information", f"pool:{p}")
    elif door == "study TOML":
        cfg = tmp_path / "study.toml"
        cfg.write_text(
            f'seeds = 1\nrounds = 1\nk = {K}\nselectors = ["proportional", '
            f'"maxmin:2@pool:{p}"]\n[oracle]\nclients_per_domain = {CPD}\n'
        )
        argv = ["study", "-o", out, "-c", cfg, "--workers", 1, "--no-progress"]
    elif door == "study --selectors":
        cfg = tmp_path / "oracle.toml"
        cfg.write_text(f"[oracle]\nclients_per_domain = {CPD}\n")
        argv = ["study", "-o", out, "-c", cfg, "--selectors", f"proportional,maxmin:2@pool:{p}",
                "--seeds", 1, "-r", 1, "-k", K, "--workers", 1, "--no-progress"]  # fmt: skip
    else:  # --add to a stored study (N = 8, K = 3), which must stay as it was
        out.mkdir()
        (out / "study.toml").write_text(_study_toml(tmp_path, ["maxmin:2"]).to_toml())
        before = (out / "study.toml").read_bytes()
        argv = ["study", "-o", out, "--add", f"maxmin:2@pool:{p}", "--workers", 1,
                "--no-progress"]  # fmt: skip
    code, _, err = run_fedsel(argv, capsys)
    assert_refused(code, err, f"pool:{p}", f"k={K} <= P <= {N}")
    if before is None:
        assert_nothing_left(out)
    else:  # the bad entry is not written, nothing is run or recorded
        assert (out / "study.toml").read_bytes() == before
        assert sorted(x.name for x in out.iterdir()) == ["study.toml"]
        assert not (out / LOCK_NAME).exists()


@pytest.mark.parametrize("p", [K, 5, N])
def test_a_pool_within_k_and_n_passes_the_check(p):
    assert parse_spec(f"maxmin:2@pool:{p}").run_information(n=N, k=K) == f"pool:{p}"
    assert parse_spec("maxmin:2").run_information(f"pool:{p}.0", n=N, k=K) == f"pool:{p}"
    assert len(_study_toml(None, [f"maxmin:2@pool:{p}"]).selectors) == 2


# -------------------------------------------------------------- --stats against the spec
@pytest.mark.parametrize("driver", [_train, _flower])
@pytest.mark.parametrize(("own", "given"), list(itertools.permutations(MODELS, 2)))
def test_stats_contradicting_the_specs_own_model_is_refused(driver, own, given, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run_fedsel(driver(out, f"maxmin:2@{own}", "--information", given), capsys)
    assert_refused(code, err, f"--information {given} contradicts the spec's @{own}")
    assert_nothing_left(out)


@pytest.mark.parametrize("model", MODELS)
def test_stats_naming_the_specs_own_model_again_is_that_model(model):
    spec = parse_spec(f"maxmin:2@{model}")
    assert spec.run_information(model, n=N, k=K) == spec.run_information(n=N, k=K) == model


@pytest.mark.parametrize("driver", [_train, _flower])
@pytest.mark.parametrize(
    "bad", ["rule", "bogus", "", "pool", "pool:0", "pool:1.5", "pool:-3", "pool:nan", "fresh:2"]
)
def test_stats_that_names_no_information_model_is_refused(driver, bad, tmp_path, capsys):
    """``rule`` is the loop's internal charge of a baseline rule, not a model a user picks."""
    out = tmp_path / "out"
    code, _, err = run_fedsel(driver(out, "maxmin:2", "--information", bad), capsys)
    assert_refused(code, err, "--information")
    assert_nothing_left(out)


@pytest.mark.parametrize(
    ("modifier", "models"),
    [("verify", ["stale", "probe", "predicted"]), ("ensemble", ["probe", "predicted"]),
     ("softvote", ["probe", "predicted"])],
)  # fmt: skip
def test_stats_is_refused_where_the_spec_naming_it_would_be(modifier, models, tmp_path, capsys):
    """``--selector S@verify --information stale`` is the spec ``S@stale+verify``: refused alike, for
    the same reason."""
    for model in models:
        code, _, err = run_fedsel(_train(tmp_path / "a", f"maxmin:2@{model}+{modifier}"), capsys)
        spec_line = assert_refused(code, err)
        code, _, err = run_fedsel(
            _train(tmp_path / "b", f"maxmin:2@{modifier}", "--information", model), capsys
        )
        stats_line = assert_refused(code, err)
        reason = spec_line.split("': ", 1)[1]
        assert reason == stats_line.split("': ", 1)[1], (spec_line, stats_line)
        assert_nothing_left(tmp_path / "a")
        assert_nothing_left(tmp_path / "b")


def test_the_check_is_the_specs_own_for_every_driver():
    """One place: the train, study and flower drivers all answer with Spec.run_information."""
    spec = parse_spec("maxmin:2@pool:99")
    with pytest.raises(SelectionError, match="pool:99 needs"):
        spec.run_information(n=N, k=K)
    assert parse_spec("proportional").run_information(n=N, k=K) == "rule"  # a rule's own
    with pytest.raises(SelectionError, match="exceeds the 8 clients"):
        parse_spec("maxmin:2").run_information(n=N, k=9)
