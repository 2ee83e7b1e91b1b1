"""Printed-digit stand-ins for SynthDigits (``syn``) and SVHN (``svhn``).

Both render a 1–3-digit number whose labelled digit sits at the centre, in a font drawn from
:func:`fonts.digit_fonts`, on a 96×96 canvas that is later reduced to 32×32.

- ``syn`` (after Ganin & Lempitsky's SynthDigits): flat random background colour, random text
  colour with a minimum contrast, small rotation and jitter, blur.
- ``svhn``: SYN-style text, larger and tighter so that neighbouring digits are cut by the
  crop, plus gradient or striped backgrounds, clutter lines and boxes, a drop shadow, a
  perspective-jittered crop, a lighting ramp, sensor noise and a JPEG round trip.

Image ``i`` depends only on ``(seed, domain, split, i)`` through its own random stream.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from .fonts import digit_fonts, load_font

__all__ = ["generate_printed"]

_C = 96  # working canvas (pixels); the labelled digit is centred on it
_OUT = 64  # crop size before the final reduction to 32x32


def _colour_pair(rng: np.random.Generator, min_contrast: float) -> tuple[np.ndarray, np.ndarray]:
    """Background and text colours (RGB in 0..255) whose luminances differ enough."""
    w = np.array([0.299, 0.587, 0.114])
    for _ in range(50):
        bg, fg = rng.uniform(0, 255, size=(2, 3))
        if abs(float(w @ bg) - float(w @ fg)) >= min_contrast:
            return bg, fg
    return np.zeros(3), np.full(3, 255.0)


def _text_mask(
    rng: np.random.Generator,
    label: int,
    *,
    size_range: tuple[int, int],
    max_digits: int,
    spacing: tuple[float, float],
) -> Image.Image:
    """An 'L' mask of a 1..max_digits number with the labelled digit centred on the canvas."""
    fonts = digit_fonts()
    font = load_font(fonts[int(rng.integers(len(fonts)))], int(rng.integers(*size_range)))
    k = int(rng.integers(1, max_digits + 1))
    j = int(rng.integers(k))
    chars = [str(int(d)) for d in rng.integers(10, size=k)]
    chars[j] = str(label)
    gap = rng.uniform(*spacing) * font.size
    widths = [font.getlength(c) for c in chars]
    xs = np.concatenate([[0.0], np.cumsum(np.asarray(widths) + gap)[:-1]])
    left, top, right, bottom = font.getbbox(chars[j])
    # place the labelled glyph's bbox centre at the canvas centre (+ jitter)
    jx, jy = rng.normal(0, 0.025 * _C, size=2)
    x0 = _C / 2 + jx - (xs[j] + (left + right) / 2)
    y0 = _C / 2 + jy - (top + bottom) / 2
    mask = Image.new("L", (_C, _C), 0)
    draw = ImageDraw.Draw(mask)
    for c, x in zip(chars, xs, strict=True):
        draw.text((x0 + x, y0), c, font=font, fill=255)
    return mask


def _syn_image(rng: np.random.Generator, label: int) -> np.ndarray:
    mask = _text_mask(rng, label, size_range=(40, 58), max_digits=3, spacing=(0.0, 0.15))
    mask = mask.rotate(
        rng.uniform(-12, 12), resample=Image.Resampling.BILINEAR, center=(_C / 2, _C / 2)
    )
    bg, fg = _colour_pair(rng, 70.0)
    m = np.asarray(mask, np.float32)[..., None] / 255.0
    img = bg * (1 - m) + fg * m
    lo = (_C - _OUT) // 2
    pil = Image.fromarray(img.astype(np.uint8)).crop((lo, lo, lo + _OUT, lo + _OUT))
    pil = pil.filter(ImageFilter.GaussianBlur(rng.uniform(0.0, 1.6)))
    return np.asarray(pil.resize((32, 32), Image.Resampling.BOX))


def _background(rng: np.random.Generator) -> np.ndarray:
    """Gradient or striped background, float (C, C, 3)."""
    yy, xx = np.mgrid[0:_C, 0:_C].astype(np.float32) / _C
    th = rng.uniform(0, 2 * np.pi)
    t = np.cos(th) * xx + np.sin(th) * yy
    a, b = rng.uniform(0, 255, size=(2, 3))
    if rng.random() < 0.5:
        w = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    else:  # stripes (brick rows, siding, tiles)
        w = 0.5 + 0.5 * np.sign(np.sin(2 * np.pi * rng.uniform(2, 7) * t + rng.uniform(0, 6.3)))
        w = rng.uniform(0.15, 0.5) * w + rng.uniform(0.0, 0.5)
    return a * (1 - w[..., None]) + b * w[..., None]


def _svhn_image(rng: np.random.Generator, label: int) -> np.ndarray:
    mask = _text_mask(rng, label, size_range=(46, 64), max_digits=3, spacing=(-0.05, 0.08))
    mask = mask.rotate(
        rng.uniform(-8, 8), resample=Image.Resampling.BILINEAR, center=(_C / 2, _C / 2)
    )
    bg = _background(rng)
    _, fg = _colour_pair(rng, 0.0)
    bgl = float(np.array([0.299, 0.587, 0.114]) @ bg.reshape(-1, 3).mean(0))
    for _ in range(20):  # text must stand out from the mean background
        if abs(float(np.array([0.299, 0.587, 0.114]) @ fg) - bgl) >= 60:
            break
        fg = rng.uniform(0, 255, size=3)
    canvas = Image.fromarray(np.clip(bg, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(canvas)
    for _ in range(int(rng.integers(0, 4))):  # clutter: lines and boxes
        col = tuple(int(v) for v in rng.integers(0, 256, size=3))
        p = rng.uniform(0, _C, size=4)
        if rng.random() < 0.5:
            draw.line(list(p), fill=col, width=int(rng.integers(1, 4)))
        else:
            x1, x2 = sorted(p[:2])
            y1, y2 = sorted(p[2:])
            draw.rectangle([x1, y1, x2, y2], outline=col, width=int(rng.integers(1, 4)))
    img = np.asarray(canvas, np.float32)
    m = np.asarray(mask, np.float32)[..., None] / 255.0
    if rng.random() < 0.5:  # drop shadow
        dx, dy = rng.integers(-4, 5, size=2)
        sh = np.asarray(mask.filter(ImageFilter.GaussianBlur(2.0)), np.float32) / 255.0
        sh = np.roll(sh, (int(dy), int(dx)), axis=(0, 1))[..., None] * rng.uniform(0.3, 0.7)
        img = img * (1 - sh)
    img = img * (1 - m) + fg * m
    # perspective-jittered crop of the central region
    lo, hi = (_C - _OUT) / 2, (_C + _OUT) / 2
    quad = np.array([lo, lo, lo, hi, hi, hi, hi, lo]) + rng.normal(0, 4.0, size=8)
    pil = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).transform(
        (_OUT, _OUT), Image.Transform.QUAD, tuple(quad.tolist()), Image.Resampling.BILINEAR
    )
    pil = pil.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.5)))
    x = np.asarray(pil.resize((32, 32), Image.Resampling.BOX), np.float32)
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float32) / 31.0
    th = rng.uniform(0, 2 * np.pi)
    ramp = np.cos(th) * (xx - 0.5) + np.sin(th) * (yy - 0.5)
    x = x * (rng.uniform(0.65, 1.1) + rng.uniform(0.0, 0.6) * ramp)[..., None]
    x = x + rng.normal(0, rng.uniform(1, 7), size=x.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(x, 0, 255).astype(np.uint8)).save(
        buf, format="JPEG", quality=int(rng.integers(30, 90))
    )
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("RGB"))


def generate_printed(
    domain: str, split: str, n: int, seed: int, start: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Generate images ``start .. start+n-1`` of a printed domain.

    Args:
        domain: ``"syn"`` or ``"svhn"``.
        split: ``"train"`` or ``"test"``.
        n: number of images.
        seed: the user's seed.
        start: index of the first image.

    Returns:
        images uint8 (n, 32, 32, 3), labels int64 (n,).
    """
    from .base import domain_index, split_index

    make = _syn_image if domain == "syn" else _svhn_image
    di, si = domain_index(domain), split_index(split)
    imgs = np.empty((n, 32, 32, 3), np.uint8)
    labels = np.empty(n, np.int64)
    for k in range(n):
        rng = np.random.default_rng([seed, di, si, start + k])
        y = int(rng.integers(10))
        labels[k] = y
        imgs[k] = make(rng, y)
    return imgs, labels
