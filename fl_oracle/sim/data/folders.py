"""Any domain-structured image dataset: ``DIR/<domain>/<class>/*.{png,jpg,...}``.

This is the layout PACS, Office-Caltech-10 and DomainNet ship in (torchvision's
``ImageFolder`` per domain). Every sub-folder of ``DIR`` is a domain (named after the folder,
:func:`domain_id`), every sub-folder of a domain a class (any name); the classes are the union over the domains, indexed in sorted order (a domain
may lack some). Images of any size and mode are read with Pillow and resized to
``resolution`` x ``resolution`` (bilinear, aspect ratio not kept); when every image is
grey-scale the dataset has one channel, otherwise three (grey images replicated).

The train/test split, in order of precedence:

1. a split file (``split_file``, CSV with a header ``path,split``; ``path`` relative to
   ``DIR``, ``split`` ``train`` or ``test``): every image must be listed;
2. ``DIR/<domain>/{train,test}/<class>/...`` sub-folders, when a domain has them;
3. otherwise a deterministic split: within each (domain, class), files sorted by name and
   permuted by ``seed``; the first ``ceil(test_fraction * n)`` are the test split.

Nothing is downloaded; provenance (folder, image counts, content hash) is recorded like that
of the other sources (:mod:`.provenance`).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from selection.progress import report

from .base import DataError, DomainData
from .imageops import standardize_per_image

__all__ = ["DatasetIndex", "IMAGE_SUFFIXES", "domain_id", "scan_dataset", "load_dataset"]

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_RESERVED = {"own", "local", "pooled", "avg", "worst"}  # U_<name> readings and metric names


@dataclass(frozen=True)
class DatasetIndex:
    """What a dataset folder holds, before any image is decoded.

    Attributes:
        root: the folder.
        domains: domain names (the sorted folders' names, :func:`domain_id`).
        classes: class names, the label of class ``classes[c]`` is ``c``.
        files: ``{domain: {split: [(path, label), ...]}}``.
        split_rule: how the split was made (``"split file <path>"``, ``"folders"``,
            ``"seeded, test_fraction=0.2, seed=0"``).
        folders: domain -> the folder it was read from.
    """

    root: Path
    domains: tuple[str, ...]
    classes: tuple[str, ...]
    files: Mapping[str, Mapping[str, list[tuple[Path, int]]]]
    split_rule: str
    folders: Mapping[str, Path] = field(default_factory=dict)

    def count(self, domain: str, split: str) -> int:
        """Images of one (domain, split)."""
        return len(self.files[domain][split])


def _hidden(p: Path, top: Path) -> bool:
    """Dot files and macOS archive metadata (``._x.png``, ``__MACOSX/``) are not images."""
    return any(part.startswith(".") or part == "__MACOSX" for part in p.relative_to(top).parts)


def _images(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and not _hidden(p, folder)
    )


def _class_folders(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name != "__MACOSX"
    )


def domain_id(folder_name: str) -> str:
    """The domain name a folder gives: runs of characters other than letters, digits, ``_``,
    ``.``, ``-`` become ``_`` (Office-Home's ``Real World`` is ``Real_World``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", folder_name.strip()).strip("_.-")


def _check_domain(name: str, folder: Path) -> str:
    did = domain_id(name)
    if not did or not _NAME.match(did) or did.lower() in _RESERVED:
        why = "a reserved name" if did.lower() in _RESERVED else "no letter or digit"
        raise DataError(f"{folder}: domain folder name {name!r} is not usable ({why}); rename it")
    return did


def _read_split_file(path: Path, root: Path) -> dict[Path, str]:
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise DataError(f"split file {path}: {exc.strerror or exc}") from None
    if not rows or not {"path", "split"} <= set(rows[0]):
        raise DataError(f"split file {path}: expected a CSV with header 'path,split'")
    out: dict[Path, str] = {}
    line: dict[Path, int] = {}
    top = root.resolve()
    for i, row in enumerate(rows, start=2):
        split = (row["split"] or "").strip()
        if split not in ("train", "test"):
            raise DataError(f"split file {path}, line {i}: split {split!r} is not train or test")
        name = (row["path"] or "").strip()
        f = (root / name).resolve()
        if not f.is_relative_to(top):
            raise DataError(f"split file {path}, line {i}: {name!r} lies outside {root}")
        if f in out:
            raise DataError(
                f"split file {path}, line {i}: {name!r} is listed again (line {line[f]})"
            )
        out[f], line[f] = split, i
    return out


def scan_dataset(
    root: str | Path,
    *,
    split_file: str | Path | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> DatasetIndex:
    """Index the dataset folder ``root`` (DataError in one line when it is not usable)."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"dataset folder {root} does not exist")
    if not 0.0 < test_fraction < 1.0:
        raise DataError(f"test_fraction={test_fraction!r} must lie in (0, 1)")
    listed = _read_split_file(Path(split_file), root) if split_file is not None else None
    domain_dirs = _class_folders(root)
    if not domain_dirs:
        raise DataError(
            f"dataset folder {root} has no domain folders (expected DIR/<domain>/<class>/)"
        )
    raw: dict[str, dict[str, list[tuple[Path, str]]]] = {}
    rules: set[str] = set()
    folder_of: dict[str, Path] = {}
    for ddir in domain_dirs:
        did = _check_domain(ddir.name, root)
        if did in folder_of:
            raise DataError(
                f"{root}: domain folders {folder_of[did].name!r} and {ddir.name!r} both give "
                f"the domain name {did!r}; rename one"
            )
        folder_of[did] = ddir
        subs = {p.name for p in _class_folders(ddir)}
        split_folders = {"train", "test"} <= subs
        if not split_folders and subs & {"train", "test"}:
            has = sorted(subs & {"train", "test"})[0]
            other = "test" if has == "train" else "train"
            raise DataError(
                f"{ddir}: has {has}/ but no {other}/ (split folders need both; or name the "
                "classes otherwise)"
            )
        if split_folders:  # DIR/<domain>/{train,test}/<class>/: the classes are inside
            by_folder = {
                s: [(f, c.name) for c in _class_folders(ddir / s) for f in _images(c)]
                for s in ("train", "test")
            }
            if listed is None:
                raw[did] = by_folder
                rules.add("folders")
                continue
            items = sorted(by_folder["train"] + by_folder["test"])  # the split file decides
        else:
            items = [(f, c.name) for c in _class_folders(ddir) for f in _images(c)]
        if not items:
            raise DataError(f"{ddir}: no images under <class>/ sub-folders")
        if listed is not None:
            split: dict[str, list[tuple[Path, str]]] = {"train": [], "test": []}
            for f, c in items:
                s = listed.get(f.resolve())
                if s is None:
                    raise DataError(f"split file {split_file}: {f.relative_to(root)} is not listed")
                split[s].append((f, c))
            raw[did] = split
            rules.add(f"split file {split_file}")
            continue
        rng = np.random.default_rng([seed, 0xF01D])
        split = {"train": [], "test": []}
        for cname in sorted({c for _, c in items}):
            group = [it for it in items if it[1] == cname]
            perm = rng.permutation(len(group))
            n_test = math.ceil(test_fraction * len(group)) if len(group) > 1 else 0
            for j, k in enumerate(perm):
                split["test" if j < n_test else "train"].append(group[k])
        for s in split.values():
            s.sort()
        raw[did] = split
        rules.add(f"seeded, test_fraction={test_fraction:g}, seed={seed}")
    if listed is not None:  # every listed path must be one of the dataset's images
        seen = {f.resolve() for sp in raw.values() for part in sp.values() for f, _ in part}
        extra = sorted(set(listed) - seen)
        if extra:
            raise DataError(
                f"split file {split_file}: {extra[0].relative_to(root.resolve())} is not an "
                f"image of the dataset ({len(extra)} such path(s))"
            )
    classes = sorted({c for sp in raw.values() for part in sp.values() for _, c in part})
    label = {c: i for i, c in enumerate(classes)}
    files = {
        d: {s: [(f, label[c]) for f, c in part] for s, part in sp.items()} for d, sp in raw.items()
    }
    for d, sp in files.items():
        for s in ("train", "test"):
            if not sp[s]:
                raise DataError(f"{folder_of[d]}: its {s} split has no images")
    return DatasetIndex(
        root, tuple(files), tuple(classes), files, "; ".join(sorted(rules)), dict(folder_of)
    )


_GREY_MODES = ("1", "L", "I", "I;16", "I;16B", "I;16L", "F", "LA")


def _is_grey(path: Path) -> bool:
    """Whether an image file is grey-scale (its header only: cheap)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            return img.mode in _GREY_MODES
    except Image.DecompressionBombError as exc:
        raise DataError(f"{path}: {_first(exc)}") from None
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise DataError(f"{path}: not a readable image ({exc})") from None


def _first(exc: BaseException) -> str:
    """PIL's decompression-bomb message, one line: too many pixels to decode safely."""
    return f"too large to decode safely ({str(exc).splitlines()[0]})"


def _decode(path: Path, resolution: int) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            img.load()
            grey = img.mode in _GREY_MODES
            if img.mode in ("I", "I;16", "I;16B", "I;16L", "F"):  # 16/32-bit grey: rescale
                a = np.asarray(img, dtype=np.float64)
                lo, hi = float(a.min()), float(a.max())
                a = (a - lo) * (255.0 / (hi - lo)) if hi > lo else np.zeros_like(a)
                img = Image.fromarray(np.round(a).astype(np.uint8), mode="L")
            img = img.convert("L" if grey else "RGB")
            img = img.resize((resolution, resolution), Image.Resampling.BILINEAR)
            arr = np.asarray(img, dtype=np.uint8)
    except Image.DecompressionBombError as exc:
        raise DataError(f"{path}: {_first(exc)}") from None
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise DataError(f"{path}: not a readable image ({exc})") from None
    return arr


def load_dataset(
    index: DatasetIndex,
    *,
    resolution: int = 32,
    domains: tuple[str, ...] | None = None,
    standardize: bool = True,
    limit: Mapping[str, Mapping[str, int | None]] | None = None,
    seed: int = 0,
    progress=None,
) -> dict[str, dict[str, DomainData]]:
    """Decode the indexed images: ``{domain: {"train": DomainData, "test": DomainData}}``.

    Images become float32 (N, c, resolution, resolution), ``c`` 1 when every image of the
    dataset is grey-scale (16- and 32-bit grey rescaled to 0-255), else 3; standardized per image when ``standardize``. Each split's ``sha256`` is
    the content hash of its uint8 images and labels as decoded. ``limit[domain][split]``
    caps what is decoded (a seeded subset of the split, in file order): a DomainNet-sized
    folder is not decoded whole for a federation that uses a few thousand of its images.
    """
    from .provenance import content_hash

    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 4:
        raise DataError(f"resolution={resolution!r} must be an integer >= 4")
    domains = index.domains if domains is None else tuple(domains)
    unknown = [d for d in domains if d not in index.files]
    if unknown:
        raise DataError(
            f"dataset {index.root} has no domain {unknown[0]!r}; it has {', '.join(index.domains)}"
        )
    decoded: dict[tuple[str, str], tuple[list[np.ndarray], np.ndarray]] = {}
    done = 0
    parts = {}
    for d in domains:
        for si, s in enumerate(("train", "test")):
            part = index.files[d][s]
            cap = (limit or {}).get(d, {}).get(s)
            if cap is not None and cap < len(part):
                # seeded by the domain's place in the folder: the same images whatever
                # other domains are loaded beside it
                j = index.domains.index(d)
                keep = np.random.default_rng([seed, j, si, 0x5CA1]).choice(
                    len(part), cap, replace=False
                )
                part = [part[i] for i in np.sort(keep)]
            parts[d, s] = part
    total = sum(len(p) for p in parts.values())
    for d in domains:
        for s in ("train", "test"):
            part = parts[d, s]
            arrays = []
            for f, _ in part:
                arrays.append(_decode(f, resolution))
                done += 1
                if done % 64 == 0:
                    report(progress, done, total, f"decoding {index.root.name}")
            decoded[d, s] = arrays, np.array([lab for _, lab in part], dtype=np.int64)
    # one channel when every image of the dataset is grey (all domains, decoded or not: a
    # domain gets the same channels whatever else is loaded)
    grey = all(a.ndim == 2 for arrays, _ in decoded.values() for a in arrays) and all(
        _is_grey(f)
        for dd in index.domains
        for s in ("train", "test")
        for f, _ in index.files[dd][s]
        if (dd, s) not in decoded
    )
    out: dict[str, dict[str, DomainData]] = {}
    import torch

    for (d, s), (arrays, labels) in decoded.items():
        if grey:
            u8 = np.stack(arrays)[:, None]  # (N, 1, R, R)
        else:
            u8 = np.stack([np.repeat(a[..., None], 3, -1) if a.ndim == 2 else a for a in arrays])
            u8 = u8.transpose(0, 3, 1, 2)  # (N, 3, R, R)
        u8 = np.ascontiguousarray(u8)
        x = u8.astype(np.float32) / 255.0
        if standardize:
            x = standardize_per_image(x)
        out.setdefault(d, {})[s] = DomainData(
            name=d,
            split=s,
            images=torch.from_numpy(x),
            labels=torch.from_numpy(labels),
            source="real",
            path=str(index.folders.get(d, index.root / d)),
            version=f"image folders, {resolution}x{resolution}, {index.split_rule}",
            sha256=content_hash(u8, labels),
            n_classes=len(index.classes),
        )
    report(progress, total, total, f"decoding {index.root.name}")
    return out
