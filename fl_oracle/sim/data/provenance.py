"""Where each domain's data came from: one record per (domain, split).

A record holds the source kind (``user files`` / ``bundled package`` / ``generated
stand-in``), the path (file or folder read, the package entry point, or empty), what produced
it (package and version, generator version and seed), the number of images and a content
hash (SHA-256 over the uint8 32×32×3 images and int64 labels as served, before
standardization; first 16 hex digits). Runs print one line per domain on stderr at start and
keep the records in ``config.toml`` under ``[sources.<domain>.<split>]``.

Torch-free at import time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from selection.toml_text import toml_value

__all__ = [
    "KINDS",
    "content_hash",
    "data_provenance",
    "provenance_lines",
    "provenance_toml",
    "read_provenance",
    "short_source",
]

KINDS = {"real": "user files", "bundled": "bundled package", "generated": "generated stand-in"}


def content_hash(images: Any, labels: Any) -> str:
    """First 16 hex digits of SHA-256 over the images' and labels' bytes (C order)."""
    h = hashlib.sha256()
    for a in (images, labels):
        arr = np.ascontiguousarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a)
        h.update(str(arr.dtype).encode() + str(arr.shape).encode())
        h.update(memoryview(arr).cast("B"))  # the bytes in place: no copy of a large split
    return h.hexdigest()[:16]


def _record(split: Any) -> dict[str, Any]:
    source = str(getattr(split, "source", "unknown"))
    digest = getattr(split, "sha256", "") or content_hash(split.images, split.labels)
    return {
        "kind": KINDS.get(source, source),
        "path": str(getattr(split, "path", "") or ""),
        "version": str(getattr(split, "version", "") or ""),
        "n_images": int(len(split.labels)),
        "sha256": digest,
    }


def data_provenance(data: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, dict]]:
    """``{domain: {split: record}}`` of a loaded ``{domain: {"train", "test"}}`` data dict."""
    return {d: {s: _record(v) for s, v in splits.items()} for d, splits in data.items()}


def short_source(records: Mapping[str, Mapping[str, Any]]) -> str:
    """One phrase for a domain's splits: kind, path/version, and per split n and hash."""
    first = next(iter(records.values()))
    kinds = sorted({r["kind"] for r in records.values()})
    where = ", ".join(x for x in (first["path"], first["version"]) if x)
    head = " + ".join(kinds) + (f" ({where})" if where and len(kinds) == 1 else "")
    if len(kinds) > 1:
        head += (
            " (" + "; ".join(f"{s}: {r['path'] or r['version']}" for s, r in records.items()) + ")"
        )
    parts = ", ".join(
        f"{s} {r['n_images']} images sha256:{r['sha256']}" for s, r in records.items()
    )
    shared = "".join(f"; {r['shared']}" for r in records.values() if r.get("shared"))
    return f"{head}: {parts}{shared}"


def provenance_lines(prov: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """One line per domain, ``data <domain>: <short_source>``."""
    return [f"data {d}: {short_source(rec)}" for d, rec in prov.items()]


def _toml_str(v: str) -> str:
    return toml_value(str(v))


def provenance_toml(prov: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The records as TOML tables ``[sources.<domain>.<split>]``."""
    out = []
    for d, splits in prov.items():
        for s, r in splits.items():
            body = "\n".join(
                f"{k} = {v}" if isinstance(v, int) else f"{k} = {_toml_str(str(v))}"
                for k, v in r.items()
            )
            out.append(f"[sources.{d}.{s}]\n{body}\n")
    return "\n".join(out)


def read_provenance(toml_text: str) -> dict[str, dict[str, dict]]:
    """The ``[sources]`` tables of a ``config.toml`` ({} when it has none)."""
    import tomllib

    try:
        return dict(tomllib.loads(toml_text).get("sources", {}))
    except tomllib.TOMLDecodeError:
        return {}
