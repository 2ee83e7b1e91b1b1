"""USPS: the libsvm ``usps.bz2`` files or FedBN's pickle; handwritten stand-ins."""

from __future__ import annotations

from pathlib import Path

from selection.schema import DEFAULT_SAMPLES_PER_CLIENT

from .. import readers
from ..sources import RealSource, arrays_reader, first_file
from . import DomainSpec, register_domain


def _name(split: str) -> str:
    return "usps.bz2" if split == "train" else "usps.t.bz2"


def locate(root: Path, split: str) -> RealSource | None:
    p = first_file(root / "usps" / _name(split), root / _name(split))
    if p is None:
        return None
    return RealSource("usps", split, p, arrays_reader(lambda: readers.read_usps_libsvm(p)))


def expected(r: str, split: str) -> str:
    return f"{r}/usps/{_name(split)} or {r}/{_name(split)}"


def generate(split: str, n: int, seed: int, start: int):
    from ..gen_handwritten import generate_handwritten

    return generate_handwritten("usps", split, n, seed, start=start)


register_domain(
    DomainSpec(
        "usps",
        locate,
        expected,
        generate,
        fedbn_dir="USPS",
        samples_per_client=DEFAULT_SAMPLES_PER_CLIENT["usps"],
    )
)
