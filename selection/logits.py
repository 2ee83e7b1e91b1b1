"""Per-client validation logits of one round: what the ``ensemble`` surrogate reads.

For every client i of a round the oracle evaluates the candidate model w_t + Δ_i on the
pooled validation set (that is how ``U`` and ``U_<domain>`` are counted); its logits z_i
(S samples × C classes) are kept, rounded to float16, with the validation labels and each
sample's domain. The format (``docs/contract.md``) is one ``.npz`` file per round that numpy
alone reads:

========== ============ ==============================================================
array      dtype        shape / meaning
========== ============ ==============================================================
``round``  int64        () the round t of the statistics
``client`` str          (N,) client ids, the rows of ``z``
``z``      float16      (N, S, C) logits of w_t + Δ_i on the S validation samples
``y``      int64        (S,) labels in 0..C−1
``domain`` int64        (S,) index into ``domains`` of each sample's domain
``domains`` str         (D,) domain names (the ``U_<domain>`` columns)
========== ============ ==============================================================

A run folder holds them as ``logits/round_<tttt>.npz`` (:func:`logits_path`).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from selection.atomic import atomic_path
from selection.errors import SelectionError

__all__ = ["ValidationLogits", "read_logits", "write_logits", "logits_path", "read_run_logits"]


@dataclass(frozen=True, eq=False)
class ValidationLogits:
    """Validation logits of N candidate models (one per client) of one round.

    Attributes:
        round: the round t.
        ids: client ids, shape (N,).
        z: logits, float16, shape (N, S, C).
        y: labels, shape (S,).
        domain: each sample's domain as an index into ``domains``, shape (S,).
        domains: the D domain names.
    """

    round: int
    ids: np.ndarray
    z: np.ndarray
    y: np.ndarray
    domain: np.ndarray
    domains: tuple[str, ...]

    def __post_init__(self) -> None:
        n, s = len(self.ids), len(self.y)
        if self.z.ndim != 3 or self.z.shape[:2] != (n, s):
            raise SelectionError(
                f"logits of round {self.round}: z has shape {self.z.shape}, expected "
                f"({n} clients, {s} samples, classes)"
            )
        if self.domain.shape != (s,):
            raise SelectionError(f"logits of round {self.round}: domain must have shape ({s},)")
        if s and (self.domain.min() < 0 or self.domain.max() >= len(self.domains)):
            raise SelectionError(
                f"logits of round {self.round}: a sample's domain index is out of range"
            )
        if s and (self.y.min() < 0 or self.y.max() >= self.z.shape[2]):
            raise SelectionError(f"logits of round {self.round}: a label is outside 0..C-1")
        if len(set(self.ids.tolist())) != n:
            raise SelectionError(f"logits of round {self.round}: duplicate client ids")

    @property
    def n_classes(self) -> int:
        return int(self.z.shape[2])

    def for_clients(self, ids: Sequence[str], domains: Sequence[str]) -> ValidationLogits:
        """The rows of ``ids`` in that order, samples restricted to ``domains`` (re-indexed).

        Raises:
            SelectionError: a client or a domain has no logits.
        """
        pos = {c: i for i, c in enumerate(self.ids.tolist())}
        missing = [c for c in ids if c not in pos]
        if missing:
            raise SelectionError(
                f"logits of round {self.round} have no row for client {missing[0]!r}"
            )
        dmap = {d: j for j, d in enumerate(self.domains)}
        lost = [d for d in domains if d not in dmap]
        if lost:
            raise SelectionError(
                f"logits of round {self.round} have no samples of domain {lost[0]!r}"
            )
        keep_d = np.array([dmap[d] for d in domains])
        remap = np.full(len(self.domains), -1)
        remap[keep_d] = np.arange(len(domains))
        sample = np.flatnonzero(remap[self.domain] >= 0)
        rows = np.array([pos[c] for c in ids], dtype=np.int64)
        same = np.array_equal(rows, np.arange(len(self.ids))) and len(sample) == len(self.y)
        if same and tuple(domains) == self.domains:
            return self
        return ValidationLogits(
            round=self.round,
            ids=np.asarray(list(ids), dtype=str),
            z=self.z[rows][:, sample],
            y=self.y[sample],
            domain=remap[self.domain[sample]],
            domains=tuple(domains),
        )

    def replace_rows(self, fresh: ValidationLogits) -> ValidationLogits:
        """These logits with the clients of ``fresh`` replaced by its rows (stale statistics)."""
        pos = {c: i for i, c in enumerate(self.ids.tolist())}
        z = self.z.copy()
        for j, c in enumerate(fresh.ids.tolist()):
            z[pos[c]] = fresh.z[j]
        return ValidationLogits(fresh.round, self.ids, z, self.y, self.domain, self.domains)


def write_logits(logits: ValidationLogits, path: str | os.PathLike) -> Path:
    """Write one round's logits as an ``.npz`` (atomically; ``np.load`` reads it)."""
    arrays = {
        "round": np.asarray(np.int64(logits.round)),
        "client": np.asarray(logits.ids, dtype=str),
        "z": np.asarray(logits.z, dtype=np.float16),
        "y": np.asarray(logits.y, dtype=np.int64),
        "domain": np.asarray(logits.domain, dtype=np.int64),
        "domains": np.asarray(logits.domains, dtype=str),
    }
    p = Path(path)
    with atomic_path(p) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            # a fixed timestamp: the same logits give the same bytes (resume is byte-identical)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w") as fh:
                np.lib.format.write_array(fh, arr, allow_pickle=False)
    return p


def read_logits(path: str | os.PathLike) -> ValidationLogits:
    """Read one round's logits (SelectionError naming the file when it is not one: a damaged
    or truncated archive, logits that are not finite numbers, labels or domains that are not
    integers)."""
    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as f:
            need = ("round", "client", "z", "y", "domain", "domains")
            lost = [k for k in need if k not in f.files]
            if lost:
                raise SelectionError(f"{p}: not a logits file (no array {lost[0]!r})")
            z = f["z"]
            if z.dtype.kind not in "fiu":
                raise SelectionError(f"{p}: logits z are {z.dtype}, not numbers")
            z16 = z.astype(np.float16, copy=False)
            if not np.isfinite(z16).all():
                raise SelectionError(
                    f"{p}: logits z hold NaN, inf or values beyond float16's range"
                )
            return ValidationLogits(
                round=_integer(p, "round", f["round"]),
                ids=f["client"].astype(str),
                z=z16,
                y=_integers(p, "y", f["y"]),
                domain=_integers(p, "domain", f["domain"]),
                domains=tuple(str(d) for d in f["domains"]),
            )
    except SelectionError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SelectionError(f"{p}: cannot read logits ({why})") from None


def _integers(p: Path, name: str, a: np.ndarray) -> np.ndarray:
    """An integer array from a logits file (SelectionError: text, fractions, non-finite)."""
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    if a.dtype.kind != "f" or not np.isfinite(a).all() or not np.all(a == np.round(a)):
        raise SelectionError(f"{p}: {name} must hold integers, not {a.dtype} values like "
                             f"{a.ravel()[:1].tolist()}")  # fmt: skip
    return a.astype(np.int64)


def _integer(p: Path, name: str, a: np.ndarray) -> int:
    v = _integers(p, name, np.asarray(a).reshape(-1))
    if v.size != 1:
        raise SelectionError(f"{p}: {name} must be one integer, not {v.size} values")
    return int(v[0])


def logits_path(folder: str | os.PathLike, round: int) -> Path:  # noqa: A002
    """Where a run folder keeps the logits of ``round``: ``logits/round_<tttt>.npz``."""
    return Path(folder) / "logits" / f"round_{int(round):04d}.npz"


def read_run_logits(path: str | os.PathLike, round: int) -> ValidationLogits:  # noqa: A002
    """Logits of ``round`` from a file, or from a folder (a run folder or its ``logits/``)."""
    p = Path(path)
    if p.is_dir():
        for cand in (logits_path(p, round), p / f"round_{int(round):04d}.npz"):
            if cand.is_file():
                p = cand
                break
        else:
            raise SelectionError(f"{p} holds no logits of round {round}")
    out = read_logits(p)
    if out.round != int(round):
        raise SelectionError(f"{p} holds the logits of round {out.round}, not of round {round}")
    return out
