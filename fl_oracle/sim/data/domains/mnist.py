"""MNIST: real files in the IDX layout or FedBN's pickle; handwritten stand-ins."""

from __future__ import annotations

from pathlib import Path

from selection.schema import DEFAULT_SAMPLES_PER_CLIENT

from .. import readers
from ..sources import RealSource, arrays_reader, first_file
from . import DomainSpec, register_domain


def _names(split: str) -> list[tuple[str, str]]:
    pre = "train" if split == "train" else "t10k"
    return [
        (f"{pre}-images-idx3-ubyte", f"{pre}-labels-idx1-ubyte"),
        (f"{pre}-images.idx3-ubyte", f"{pre}-labels.idx1-ubyte"),
    ]


def locate(root: Path, split: str) -> RealSource | None:
    for d in (root / "mnist", root / "MNIST" / "raw"):
        for img, lab in _names(split):
            xi = first_file(d / img, d / f"{img}.gz")
            yi = first_file(d / lab, d / f"{lab}.gz")
            if xi and yi:
                read = arrays_reader(lambda xi=xi, yi=yi: readers.read_mnist_idx(xi, yi))
                return RealSource("mnist", split, xi, read)
    return None


def expected(r: str, split: str) -> str:
    pre = "train" if split == "train" else "t10k"
    files = f"{pre}-images-idx3-ubyte[.gz] + {pre}-labels-idx1-ubyte[.gz]"
    return f"{r}/mnist/{files} or {r}/MNIST/raw/{files}"


def generate(split: str, n: int, seed: int, start: int):
    from ..gen_handwritten import generate_handwritten

    return generate_handwritten("mnist", split, n, seed, start=start)


register_domain(
    DomainSpec(
        "mnist",
        locate,
        expected,
        generate,
        fedbn_dir="MNIST",
        samples_per_client=DEFAULT_SAMPLES_PER_CLIENT["mnist"],
    )
)
