"""A generated domain-structured image dataset, written as ``DIR/<domain>/<class>/*.png``.

A stand-in for PACS / Office-Caltech-shaped data that needs no download: seven shape classes
drawn in three domains that differ in style the way those benchmarks' domains do —

- ``sketch``: thin dark outlines on a light, slightly uneven paper background;
- ``cartoon``: flat, saturated fills with a dark contour on a plain coloured background;
- ``photo``: shaded, textured shapes on a cluttered, noisy background.

Each image places one shape at a random position, size and rotation. Deterministic in
``seed``; the folder it writes is read by :mod:`.folders` like any user's dataset.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

__all__ = ["CLASSES", "DOMAINS", "write_shapes"]

CLASSES: tuple[str, ...] = ("circle", "square", "triangle", "cross", "star", "ring", "bar")
DOMAINS: tuple[str, ...] = ("cartoon", "photo", "sketch")


def _polygon(cls: str, cx: float, cy: float, r: float, rot: float) -> list[tuple[float, float]]:
    def pts(n: int, radii: list[float]) -> list[tuple[float, float]]:
        out = []
        for i in range(n):
            a = rot + 2 * math.pi * i / n
            rr = radii[i % len(radii)]
            out.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
        return out

    if cls == "square":
        return pts(4, [r])
    if cls == "triangle":
        return pts(3, [r])
    if cls == "star":
        return pts(10, [r, 0.45 * r])
    if cls == "cross":
        w = 0.35 * r
        base = [
            (-w, -r),
            (w, -r),
            (w, -w),
            (r, -w),
            (r, w),
            (w, w),
            (w, r),
            (-w, r),
            (-w, w),
            (-r, w),
            (-r, -w),
            (-w, -w),
        ]
    else:  # bar
        base = [(-r, -0.3 * r), (r, -0.3 * r), (r, 0.3 * r), (-r, 0.3 * r)]
    c, s = math.cos(rot), math.sin(rot)
    return [(cx + x * c - y * s, cy + x * s + y * c) for x, y in base]


def _draw(cls: str, domain: str, size: int, rng: np.random.Generator) -> Image.Image:
    S = size * 2  # drawn at twice the size, then downsampled (anti-aliasing)
    r = rng.uniform(0.22, 0.34) * S
    cx, cy = rng.uniform(r + 2, S - r - 2, size=2)
    rot = rng.uniform(0, 2 * math.pi)
    if domain == "sketch":
        bg = tuple(int(v) for v in rng.integers(215, 250, size=3))
        fill, outline, width = None, tuple(int(v) for v in rng.integers(20, 90, size=3)), 3
    elif domain == "cartoon":
        bg = tuple(int(v) for v in rng.integers(120, 255, size=3))
        fill = tuple(int(v) for v in rng.integers(0, 256, size=3))
        outline, width = (20, 20, 20), 5
    else:
        bg = tuple(int(v) for v in rng.integers(40, 200, size=3))
        fill = tuple(int(v) for v in rng.integers(30, 230, size=3))
        outline, width = None, 1
    img = Image.new("RGB", (S, S), bg)
    d = ImageDraw.Draw(img)
    if domain == "photo":  # clutter: random translucent blobs behind the object
        for _ in range(6):
            x0, y0 = rng.uniform(0, S, size=2)
            rr = rng.uniform(0.05, 0.2) * S
            col = tuple(int(v) for v in rng.integers(0, 256, size=3))
            d.ellipse((x0 - rr, y0 - rr, x0 + rr, y0 + rr), fill=col)
    box = (cx - r, cy - r, cx + r, cy + r)
    if cls == "circle":
        d.ellipse(box, fill=fill, outline=outline, width=width)
    elif cls == "ring":
        d.ellipse(box, fill=fill, outline=outline, width=width)
        inner = (cx - 0.55 * r, cy - 0.55 * r, cx + 0.55 * r, cy + 0.55 * r)
        d.ellipse(inner, fill=bg, outline=outline, width=width)
    else:
        d.polygon(_polygon(cls, cx, cy, r, rot), fill=fill, outline=outline, width=width)
    img = img.resize((size, size), Image.Resampling.LANCZOS)
    arr = np.asarray(img, dtype=np.float32)
    if domain == "photo":
        img = img.filter(ImageFilter.GaussianBlur(0.6))
        arr = np.asarray(img, dtype=np.float32) + rng.normal(0, 14, size=arr.shape)
        shade = np.linspace(0.75, 1.15, size)[None, :, None] * np.ones((size, 1, 1))
        arr = arr * (shade if rng.random() < 0.5 else shade.transpose(1, 0, 2))
    elif domain == "sketch":
        arr = arr + rng.normal(0, 6, size=arr.shape)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def write_shapes(
    out: str | Path,
    *,
    per_class: int | dict[str, int] = 40,
    size: int = 64,
    seed: int = 0,
    domains: tuple[str, ...] = DOMAINS,
    classes: tuple[str, ...] = CLASSES,
) -> Path:
    """Write ``per_class`` PNGs per (domain, class) under ``out/<domain>/<class>/``.

    Args:
        out: folder to write (created; existing files of the same names are replaced).
        per_class: images per class, for every domain or per domain.
        size: side of the square images.
        seed: the generator's seed.
        domains, classes: which of :data:`DOMAINS` / :data:`CLASSES` to draw.

    Returns:
        ``out`` as a Path.
    """
    out = Path(out)
    for j, dom in enumerate(domains):
        if dom not in DOMAINS:
            raise ValueError(f"unknown domain {dom!r}; expected some of {', '.join(DOMAINS)}")
        n = per_class[dom] if isinstance(per_class, dict) else int(per_class)
        for k, cls in enumerate(classes):
            if cls not in CLASSES:
                raise ValueError(f"unknown class {cls!r}; expected some of {', '.join(CLASSES)}")
            folder = out / dom / cls
            folder.mkdir(parents=True, exist_ok=True)
            rng = np.random.default_rng([seed, j, k, 0x5A4E])
            for i in range(n):
                _draw(cls, dom, size, rng).save(folder / f"{cls}_{i:04d}.png")
    return out
