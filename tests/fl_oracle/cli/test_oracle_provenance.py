"""``fedsel oracle --data-root DIR --data auto`` says which domains came from the user's files."""

import gzip
import struct
import tomllib

import numpy as np

from fl_oracle.cli import main


def _idx(path, arr, magic):
    head = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in arr.shape)
    with gzip.open(str(path) + ".gz", "wb") as fh:
        fh.write(head + arr.astype(np.uint8).tobytes())


def test_mixed_run_real_mnist_generated_others(tmp_path, capsys):
    rng = np.random.default_rng(0)
    root = tmp_path / "data"
    (root / "mnist").mkdir(parents=True)
    for pre, n in (("train", 620), ("t10k", 30)):
        _idx(root / "mnist" / f"{pre}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)), 2051)
        _idx(root / "mnist" / f"{pre}-labels-idx1-ubyte", rng.integers(0, 10, n), 2049)
    out = tmp_path / "run"
    main(
        [
            "oracle", "--rounds", "1", "--out", str(out), "--data-root", str(root),
            "--data", "auto", "--clients-per-domain", "1", "--val-per-domain", "10",
            "--local-holdout", "0", "--test-per-domain", "10", "--model", "cnn-small",
            "--fisher-samples", "8", "--threads", "1", "--device", "cpu",
            "--cache-dir", str(tmp_path / "cache"), "--no-progress",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("data ")]
    assert len(lines) == 4
    mnist = next(ln for ln in lines if ln.startswith("data mnist:"))
    assert mnist.startswith("data mnist: user files (") and str(root / "mnist") in mnist
    for d in ("usps", "svhn", "syn"):
        line = next(ln for ln in lines if ln.startswith(f"data {d}:"))
        assert line.startswith(f"data {d}: generated stand-in (generator v")
    src = tomllib.loads((out / "config.toml").read_text())["sources"]
    assert src["mnist"]["train"]["kind"] == "user files"
    assert src["mnist"]["train"]["path"].endswith("train-images-idx3-ubyte.gz")
    assert src["mnist"]["test"]["n_images"] == 10
    assert {src[d]["train"]["kind"] for d in ("usps", "svhn", "syn")} == {"generated stand-in"}
