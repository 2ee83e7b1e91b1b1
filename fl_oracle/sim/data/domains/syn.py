"""SynthDigits: a ``{train,val}/<digit>/*.png`` folder, ``synth_*_32x32.mat`` or FedBN's
pickle; printed stand-ins."""

from __future__ import annotations

from pathlib import Path

from selection.schema import DEFAULT_SAMPLES_PER_CLIENT

from .. import readers
from ..sources import RealSource, arrays_reader, first_file
from . import DomainSpec, register_domain


def locate(root: Path, split: str) -> RealSource | None:
    subs = ("train",) if split == "train" else ("val", "test")
    for sub in subs:
        folder = root / "syn" / sub
        if folder.is_dir() and any((folder / str(d)).is_dir() for d in range(10)):

            def read(n, rng, folder=folder):
                files = readers.folder_files(folder)
                if n is not None and n < len(files):
                    files = [files[i] for i in rng.permutation(len(files))[:n]]
                return readers.read_image_files(files)

            return RealSource("syn", split, folder, read)
    name = f"synth_{split}_32x32.mat"
    p = first_file(root / "syn" / name, root / name)
    if p is None:
        return None
    return RealSource("syn", split, p, arrays_reader(lambda: readers.read_mat(p)))


def expected(r: str, split: str) -> str:
    sub = "train" if split == "train" else "val"
    name = f"synth_{split}_32x32.mat"
    return f"{r}/syn/{sub}/<digit>/*.png or {r}/syn/{name} or {r}/{name}"


def generate(split: str, n: int, seed: int, start: int):
    from ..gen_printed import generate_printed

    return generate_printed("syn", split, n, seed, start=start)


register_domain(
    DomainSpec(
        "syn",
        locate,
        expected,
        generate,
        fedbn_dir="SynthDigits",
        samples_per_client=DEFAULT_SAMPLES_PER_CLIENT["syn"],
    )
)
