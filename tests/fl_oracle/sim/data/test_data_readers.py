"""Real-format readers on tiny files written by the tests, and the restricted unpickler."""

from __future__ import annotations

import bz2
import gzip
import os
import pickle
import struct

import numpy as np
import pytest
from PIL import Image
from scipy.io import savemat

from fl_oracle.sim.data import DataError, load_digits, load_domain
from fl_oracle.sim.data.readers import read_idx, read_mat, read_usps_libsvm
from fl_oracle.sim.data.safe_pickle import load_numpy_pickle


def _idx(path, arr, magic, gz):
    head = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in arr.shape)
    data = head + arr.astype(np.uint8).tobytes()
    if gz:
        with gzip.open(str(path) + ".gz", "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


def _write_mnist(folder, split, x, y, gz):
    folder.mkdir(parents=True, exist_ok=True)
    pre = "train" if split == "train" else "t10k"
    _idx(folder / f"{pre}-images-idx3-ubyte", x, 2051, gz)
    _idx(folder / f"{pre}-labels-idx1-ubyte", y, 2049, gz)


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_idx_plain_and_gz(tmp_path, gz):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    y = np.array([3, 0, 9, 1, 7], np.uint8)
    _write_mnist(tmp_path / "mnist", "test", x, y, gz)
    d = load_domain("mnist", "test", root=tmp_path, mode="real", standardize=False)
    assert d.source == "real" and d.images.shape == (5, 3, 32, 32)
    assert d.labels.tolist() == [3, 0, 9, 1, 7]
    # grey replicated over three channels
    assert np.array_equal(d.images[:, 0].numpy(), d.images[:, 2].numpy())
    # 28 -> 32 bilinear keeps the mean brightness roughly
    assert abs(float(d.images.mean()) - x.mean() / 255) < 0.02


def test_mnist_torchvision_raw_layout_and_bad_magic(tmp_path):
    x = np.full((2, 28, 28), 255, np.uint8)
    _write_mnist(tmp_path / "MNIST" / "raw", "train", x, np.array([4, 5], np.uint8), gz=True)
    d = load_domain("mnist", "train", root=tmp_path, mode="real", standardize=False)
    assert d.labels.tolist() == [4, 5] and float(d.images.min()) == 1.0
    bad = tmp_path / "bad-idx"
    bad.write_bytes(struct.pack(">IIII", 2049, 1, 28, 28) + bytes(784))
    with pytest.raises(DataError, match="bad-idx: IDX magic 2049, expected 2051"):
        read_idx(bad, "images")


def test_usps_libsvm_bz2(tmp_path):
    rows = []
    for lab in (1, 10, 5):
        vals = np.full(256, -1.0)
        vals[0], vals[255] = 1.0, 0.0
        rows.append(f"{lab} " + " ".join(f"{k + 1}:{v:g}" for k, v in enumerate(vals)))
    (tmp_path / "usps").mkdir()
    with bz2.open(tmp_path / "usps" / "usps.t.bz2", "wt") as fh:
        fh.write("\n".join(rows) + "\n")
    x, y = read_usps_libsvm(tmp_path / "usps" / "usps.t.bz2")
    assert y.tolist() == [0, 9, 4]  # labels 1..10 -> 0..9
    assert x.shape == (3, 16, 16) and x[0, 0, 0] == 255 and x[0, 15, 15] == 128 and x[0, 5, 5] == 0
    d = load_domain("usps", "test", root=tmp_path, mode="real", standardize=False)
    assert d.images.shape == (3, 3, 32, 32) and d.labels.tolist() == [0, 9, 4]


def test_usps_bad_line_names_file_and_line(tmp_path):
    p = tmp_path / "usps.bz2"
    with bz2.open(p, "wt") as fh:
        fh.write("3 1:0.5\nseven 1:0.1\n")
    with pytest.raises(DataError, match=r"usps.bz2: line 2"):
        read_usps_libsvm(p)


def _mat(path, n, labels):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 256, size=(32, 32, 3, n), dtype=np.uint8)
    savemat(path, {"X": X, "y": np.asarray(labels, np.uint8).reshape(-1, 1)})
    return X


def test_svhn_mat_label_10_is_0(tmp_path):
    (tmp_path / "svhn").mkdir()
    X = _mat(tmp_path / "svhn" / "train_32x32.mat", 4, [10, 1, 2, 10])
    x, y = read_mat(tmp_path / "svhn" / "train_32x32.mat")
    assert y.tolist() == [0, 1, 2, 0]
    assert np.array_equal(x[2], X[:, :, :, 2])
    d = load_domain("svhn", "train", root=tmp_path, mode="real", standardize=False)
    assert np.allclose(d.images[1].numpy().transpose(1, 2, 0) * 255, X[:, :, :, 1], atol=1e-3)


def test_synth_mat_and_image_folder(tmp_path):
    (tmp_path / "syn").mkdir()
    _mat(tmp_path / "syn" / "synth_test_32x32.mat", 3, [7, 8, 10])
    d = load_domain("syn", "test", root=tmp_path, mode="real")
    assert d.labels.tolist() == [7, 8, 0] and d.path.endswith("synth_test_32x32.mat")
    for digit in (2, 6):
        sub = tmp_path / "syn" / "train" / str(digit)
        sub.mkdir(parents=True)
        for k in range(2):
            Image.new("RGB", (32, 32), (10 * digit, 20 * k, 200)).save(sub / f"{k}.png")
    d = load_domain("syn", "train", root=tmp_path, mode="real", standardize=False)
    assert d.labels.tolist() == [2, 2, 6, 6]
    assert abs(float(d.images[2, 0, 0, 0]) - 60 / 255) < 1e-6
    # the folder wins over a .mat; val is the test split of the folder layout
    sub = tmp_path / "syn" / "val" / "3"
    sub.mkdir(parents=True)
    Image.new("L", (28, 28), 255).save(sub / "a.png")  # grey, other size -> resized RGB
    d = load_domain("syn", "test", root=tmp_path, mode="real", standardize=False)
    assert d.labels.tolist() == [3] and d.images.shape == (1, 3, 32, 32)
    assert float(d.images.min()) == 1.0


def test_fedbn_pickles_all_domains(tmp_path):
    rng = np.random.default_rng(2)
    shapes = {
        "MNIST": (6, 28, 28),
        "USPS": (6, 16, 16),
        "SVHN": (6, 32, 32, 3),
        "SynthDigits": (6, 32, 32, 3),
    }
    for folder, shape in shapes.items():
        (tmp_path / folder).mkdir()
        for split in ("train", "test"):
            x = rng.integers(0, 256, size=shape, dtype=np.uint8)
            if folder == "USPS":
                x = x.astype(np.float32) / 255.0  # floats in [0, 1] are accepted too
            y = np.arange(6) + (3 if split == "test" else 0)
            with open(tmp_path / folder / f"{split}.pkl", "wb") as fh:
                pickle.dump((x, y), fh, protocol=2 if folder == "MNIST" else 5)
    data = load_digits(root=tmp_path, mode="real", n_train=4, standardize=False)
    for d in ("mnist", "usps", "svhn", "syn"):
        assert data[d]["train"].source == "real" and len(data[d]["train"]) == 4
        assert data[d]["test"].labels.tolist() == [3, 4, 5, 6, 7, 8]
        assert data[d]["test"].images.shape == (6, 3, 32, 32)


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "MNIST").mkdir()
    p = tmp_path / "MNIST" / "train.pkl"
    with open(p, "wb") as fh:
        pickle.dump((_Evil(marker), np.zeros(1)), fh)
    with pytest.raises(
        DataError, match=r"train.pkl: refused to unpickle global (posix|os|nt)\.system"
    ):
        load_numpy_pickle(p)
    with pytest.raises(DataError, match="refused"):
        load_domain("mnist", "train", root=tmp_path, mode="real")
    assert not marker.exists()


def test_real_mode_names_missing_files(tmp_path):
    (tmp_path / "svhn").mkdir()
    _mat(tmp_path / "svhn" / "train_32x32.mat", 2, [1, 2])
    with pytest.raises(DataError) as err:
        load_digits(["svhn", "usps"], root=tmp_path, mode="real")
    msg = str(err.value)
    assert "\n" not in msg
    assert "svhn test" in msg and f"{tmp_path}/svhn/test_32x32.mat" in msg
    assert "usps train" in msg and f"{tmp_path}/usps/usps.bz2" in msg
    assert "svhn train" not in msg
    with pytest.raises(DataError, match="needs a data root"):
        load_domain("mnist", "train", mode="real")


def test_auto_mixes_real_and_generated(tmp_path):
    (tmp_path / "svhn").mkdir()
    _mat(tmp_path / "svhn" / "test_32x32.mat", 3, [1, 2, 3])
    _mat(tmp_path / "svhn" / "train_32x32.mat", 3, [1, 2, 3])
    from fl_oracle.sim.data import describe_sources

    data = load_digits(
        ["svhn", "usps"], root=tmp_path, n_train=20, n_test=10, cache_dir=tmp_path / "cache"
    )
    src = describe_sources(data)
    assert src["svhn"].startswith("real (") and "train_32x32.mat" in src["svhn"]
    assert src["usps"] == "generated stand-in"
    assert len(data["svhn"]["train"]) == 3 and len(data["usps"]["train"]) == 20
    gen = load_digits(
        ["svhn"], root=tmp_path, mode="generated", n_train=5, n_test=5, cache_dir=tmp_path / "cache"
    )
    assert gen["svhn"]["train"].source == "generated"


def test_fedbn_pickle_pixel_conventions(tmp_path):
    from fl_oracle.sim.data.readers import read_fedbn_pickle

    x = np.full((2, 1, 28, 28), -1.0, np.float32)  # NCHW floats in [-1, 1]
    x[1] = 1.0
    p = tmp_path / "train.pkl"
    with open(p, "wb") as fh:
        pickle.dump((x, np.array([2.0, 7.0])), fh)
    imgs, labels = read_fedbn_pickle(p)
    assert imgs.shape == (2, 28, 28) and imgs.dtype == np.uint8
    assert imgs[0].max() == 0 and imgs[1].min() == 255 and labels.tolist() == [2, 7]
    with open(p, "wb") as fh:
        pickle.dump((x, np.array([2.5, 7.0])), fh)
    with pytest.raises(DataError, match="train.pkl: labels are not integers"):
        read_fedbn_pickle(p)


def test_root_that_is_not_a_folder_is_an_error(tmp_path):
    with pytest.raises(DataError, match=f"data root {tmp_path / 'nope'} is not a folder"):
        load_domain("usps", "train", root=tmp_path / "nope", n=5, cache_dir=tmp_path)
    with pytest.raises(DataError, match="missing real data files; expected usps test: "):
        load_domain("usps", "test", root=tmp_path, mode="real")
