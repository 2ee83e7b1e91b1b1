"""Hostile data files (issue 9): truncated caches are regenerated, empty datasets refused."""

from __future__ import annotations

import bz2
import pickle
import struct

import numpy as np
import pytest
import scipy.io

from fl_oracle.sim.data import DataError, load_domain
from fl_oracle.sim.data.cache import _cached_sizes, cache_path, read_cached


def _idx(path, shape, magic):
    path.write_bytes(struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in shape))


@pytest.mark.parametrize("cut", [0, 10, 0.5, -3])
def test_truncated_cache_file_is_regenerated(tmp_path, cut):
    first = load_domain("usps", "train", n=30, seed=4, cache_dir=tmp_path, standardize=False)
    (size,) = _cached_sizes(tmp_path, "usps", "train", 4)
    path = cache_path(tmp_path, "usps", "train", size, 4)
    raw = path.read_bytes()
    n = int(len(raw) * cut) if isinstance(cut, float) else (cut if cut >= 0 else len(raw) + cut)
    path.write_bytes(raw[:n])
    assert read_cached(tmp_path, "usps", "train", 30, 4) is None
    again = load_domain("usps", "train", n=30, seed=4, cache_dir=tmp_path, standardize=False)
    assert np.array_equal(again.images.numpy(), first.images.numpy())
    assert read_cached(tmp_path, "usps", "train", 30, 4) is not None  # rewritten


def test_idx_with_zero_images_is_refused(tmp_path):
    (tmp_path / "mnist").mkdir()
    _idx(tmp_path / "mnist" / "t10k-images-idx3-ubyte", (0, 28, 28), 2051)
    _idx(tmp_path / "mnist" / "t10k-labels-idx1-ubyte", (0,), 2049)
    with pytest.raises(DataError, match="t10k-images-idx3-ubyte: holds 0 images"):
        load_domain("mnist", "test", root=tmp_path, mode="real", standardize=False)


def test_other_empty_dataset_files_are_refused(tmp_path):
    with bz2.open(tmp_path / "usps.t.bz2", "wt") as fh:
        fh.write("\n")
    with pytest.raises(DataError, match="holds 0 images"):
        load_domain("usps", "test", root=tmp_path, mode="real", standardize=False)
    scipy.io.savemat(
        tmp_path / "train_32x32.mat",
        {"X": np.zeros((32, 32, 3, 0), np.uint8), "y": np.zeros((0, 1), np.uint8)},
    )
    with pytest.raises(DataError, match="holds 0 images"):
        load_domain("svhn", "train", root=tmp_path, mode="real", standardize=False)


def test_empty_fedbn_pickle_is_refused(tmp_path):
    from fl_oracle.sim.data.readers import read_fedbn_pickle

    p = tmp_path / "empty.pkl"
    p.write_bytes(pickle.dumps((np.zeros((0, 28, 28), np.uint8), np.zeros(0, np.int64))))
    with pytest.raises(DataError, match="holds 0 images"):
        read_fedbn_pickle(p)
