"""Absurd sizes are refused by arithmetic on the settings, at every door, before anything is
allocated, loaded or generated (issue 53: 2^31 clients per domain or 2^31 Flower nodes ended in
a MemoryError, 10^20 clients per domain in an OverflowError, 1e300 local epochs in an
OverflowError after the run folder was claimed), and a client size of 0 is refused, never
replaced by a dataset folder's share (``--samples-per-client 0 --dataset DIR`` trained
clients the user asked to hold no samples)."""

from __future__ import annotations

import pytest

from fl_oracle.errors import ConfigError
from fl_oracle.sim.config import MAX_CLIENTS, OracleConfig, dataset_fields
from fl_oracle.sim.data.shapes import write_shapes

from helpers.cli import forbid_data, run_fedsel

HUGE_CPD = [2**31, 10**20, MAX_CLIENTS // 4 + 1]  # 4 Digits-4 domains


@pytest.fixture(autouse=True)
def no_data(monkeypatch):
    """Loading or generating any data is the defect these tests look for."""
    forbid_data(monkeypatch, "data were touched before the sizes were checked")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("sizes") / "shapes"
    return write_shapes(root, per_class=8, size=24, classes=("circle", "square"))


def _refused(code: int, err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("fedsel: error: "), err
    assert "Traceback" not in err
    for needle in needles:  # a configuration field is named as the flag that sets it
        flag = "--" + needle.replace("_", "-")
        assert needle in lines[0] or flag in lines[0], (needle, lines[0])


@pytest.mark.parametrize("cpd", HUGE_CPD)
@pytest.mark.parametrize("door", ["train", "oracle", "flower", "study TOML"])
def test_absurd_federation_sizes_are_refused_by_arithmetic(door, cpd, tmp_path, capsys):
    out = tmp_path / "out"
    if door == "train":
        argv = ["train", "--selector", "random", "-k", 2, "--clients-per-domain", cpd, "-o", out]
    elif door == "oracle":
        argv = ["oracle", "-r", 1, "--clients-per-domain", cpd, "-o", out, "--no-progress"]
    elif door == "flower":
        pytest.importorskip("flwr")
        argv = ["flower", "--selector", "random", "-k", 2, "--num-supernodes", 4 * cpd,
                "--engine", "local", "-o", out]  # fmt: skip
    else:
        cfg = tmp_path / "s.toml"
        cfg.write_text(f"k = 2\n[oracle]\nclients_per_domain = {min(cpd, 2**63 - 1)}\n")
        argv = ["study", "-o", out, "-c", cfg, "--no-progress"]
    code, _, err = run_fedsel(argv, capsys)
    _refused(code, err, "clients_per_domain")
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [("--local-epochs", "1e300", "local_epochs"), ("--local-epochs", "10001", "local_epochs"),
     ("--threads", str(10**20), "threads"), ("--threads", "4097", "threads")],
)  # fmt: skip
def test_absurd_training_settings_are_refused_before_the_run(flag, value, field, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run_fedsel(["train", "--selector", "random", "-k", 2, flag, value, "-o", out],
                              capsys)  # fmt: skip
    _refused(code, err, f"{flag} ")  # named as typed, not as the configuration's field
    assert f"config field {field}" not in err
    assert not out.exists()


def test_the_bounds_are_the_configurations_own():
    with pytest.raises(ConfigError, match=f"exceed the {MAX_CLIENTS:,} clients"):
        OracleConfig(clients_per_domain=MAX_CLIENTS // 4 + 1)
    assert OracleConfig(clients_per_domain=MAX_CLIENTS // 4).n_clients == MAX_CLIENTS
    with pytest.raises(ConfigError, match="budgets are at most"):
        OracleConfig(epoch_budgets={"svhn": 1e9})


@pytest.mark.parametrize("sizes", [0, "0", "photo=0", "photo=0,sketch=3"])
@pytest.mark.parametrize("door", ["train", "oracle", "study TOML"])
def test_a_client_size_of_zero_is_refused_with_a_dataset(door, sizes, folder, tmp_path, capsys):
    out = tmp_path / "out"
    if door == "study TOML":
        value = "0" if sizes in (0, "0") else "{ photo = 0 }"
        cfg = tmp_path / "s.toml"
        cfg.write_text(f"k = 2\n[oracle]\nclients_per_domain = 2\nsamples_per_client = {value}\n")
        argv = ["study", "-o", out, "-c", cfg, "--dataset", folder, "--no-progress"]
    else:
        argv = [door, "--dataset", folder, "--clients-per-domain", 2, "--samples-per-client",
                sizes, "-o", out]  # fmt: skip
        argv += ["--selector", "random", "-k", 2] if door == "train" else ["-r", 1]
    code, _, err = run_fedsel(argv, capsys)
    _refused(code, err, "samples_per_client", "needs a sample count >= 1, got 0")
    assert not out.exists()


def test_dataset_fields_keep_a_size_given_as_given(folder):
    """None means "the folder's share"; any given size, 0 included, is the configuration's
    to check (it was ``sizes or {}``: 0 read as unset)."""
    assert dataset_fields(folder, clients_per_domain=2)["samples_per_client"]["photo"] >= 1
    assert dataset_fields(folder, samples_per_client=0)["samples_per_client"] == {
        d: 0 for d in ("cartoon", "photo", "sketch")}  # fmt: skip
    with pytest.raises(ConfigError, match="got 0"):
        OracleConfig.for_dataset(folder, samples_per_client=0)
