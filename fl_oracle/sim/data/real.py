"""Locating a domain's real files under a user's data root, and loading them.

Each domain's layouts are its registered ``locate`` (:mod:`.domains`); FedBN's
``<dir>/{train,test}.pkl`` is tried after them. The Digits-4 layouts (first match wins, per
domain and split):

=========  ==============================================================================
mnist      ``mnist/`` or ``MNIST/raw/``: ``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``;
           FedBN ``MNIST/{train,test}.pkl``
usps       ``usps/`` or ``root``: ``usps.bz2`` (train), ``usps.t.bz2`` (test);
           FedBN ``USPS/{train,test}.pkl``
svhn       ``svhn/``, ``SVHN/`` or ``root``: ``{train,test}_32x32.mat``;
           FedBN ``SVHN/{train,test}.pkl``
syn        ``syn/{train,val}/<digit>/*.png`` (val is the test split);
           ``syn/`` or ``root``: ``synth_{train,test}_32x32.mat``;
           FedBN ``SynthDigits/{train,test}.pkl``
=========  ==============================================================================
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import readers
from .base import check_images, split_index
from .domains import domain_index, domain_spec
from .sources import RealSource, arrays_reader

__all__ = ["expected_files", "find_real", "load_real"]


def find_real(domain: str, split: str, root: str | Path | None) -> RealSource | None:
    """The real files for (domain, split) under ``root``, or None if there are none.

    The domain's own layouts first (its registered ``locate``), then FedBN's pickle.
    """
    spec = domain_spec(domain)
    split_index(split)
    if root is None:
        return None
    root = Path(root)
    found = spec.locate(root, split)
    if found is None and spec.fedbn_dir:
        p = root / spec.fedbn_dir / f"{split}.pkl"
        if p.is_file():
            found = RealSource(
                domain, split, p, arrays_reader(lambda: readers.read_fedbn_pickle(p))
            )
    return found


def expected_files(domain: str, split: str, root: str | Path) -> str:
    """Human-readable list of where (domain, split) files were looked for."""
    spec = domain_spec(domain)
    r = str(root).rstrip("/")
    where = spec.expected(r, split)
    return f"{where} or {r}/{spec.fedbn_dir}/{split}.pkl" if spec.fedbn_dir else where


def load_real(src: RealSource, n: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Read a located source; a seeded subsample of ``n`` images if ``n`` is given.

    Returns:
        uint8 images (N, 32, 32, 3) and int64 labels (N,), in file order when ``n`` is None.
    """
    rng = np.random.default_rng([seed, domain_index(src.domain), split_index(src.split), 7])
    x, y = src.read(n, rng)
    return check_images(x, y, str(src.path))
