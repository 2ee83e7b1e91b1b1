"""SVHN: the cropped-digits ``{train,test}_32x32.mat`` or FedBN's pickle; printed stand-ins."""

from __future__ import annotations

from pathlib import Path

from selection.schema import DEFAULT_SAMPLES_PER_CLIENT

from .. import readers
from ..sources import RealSource, arrays_reader, first_file
from . import DomainSpec, register_domain


def locate(root: Path, split: str) -> RealSource | None:
    name = f"{split}_32x32.mat"
    p = first_file(root / "svhn" / name, root / "SVHN" / name, root / name)
    if p is None:
        return None
    return RealSource("svhn", split, p, arrays_reader(lambda: readers.read_mat(p)))


def expected(r: str, split: str) -> str:
    name = f"{split}_32x32.mat"
    return f"{r}/svhn/{name} or {r}/SVHN/{name} or {r}/{name}"


def generate(split: str, n: int, seed: int, start: int):
    from ..gen_printed import generate_printed

    return generate_printed("svhn", split, n, seed, start=start)


register_domain(
    DomainSpec(
        "svhn",
        locate,
        expected,
        generate,
        fedbn_dir="SVHN",
        samples_per_client=DEFAULT_SAMPLES_PER_CLIENT["svhn"],
    )
)
