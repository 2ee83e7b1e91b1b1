"""Printed-digit stand-ins for SynthDigits (``syn``) and SVHN (``svhn``).

Both render a 1–3-digit number whose labelled digit sits at the centre of a 96×96 canvas
that is later reduced to 32×32.

- ``syn`` (after Ganin & Lempitsky's SynthDigits): any accepted font
  (:func:`fonts.digit_fonts`, regular, italic, serif, mono, bold), flat vivid background,
  text colour with a strong contrast, mostly short numbers with loose spacing, small rotation
  and jitter, light blur.
- ``svhn``: bold faces (:func:`fonts.bold_digit_fonts`, as on house-number plates), muted
  photographic colours, larger and tighter numbers so that neighbouring digits are cut by
  the crop, gradient or striped backgrounds, clutter lines and boxes, a drop shadow, a
  perspective-jittered crop, blur, a lighting ramp, sensor noise and a JPEG round trip.

Image ``i`` depends only on ``(seed, domain, split, i)`` through its own random stream.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageFilter

from .fonts import bold_digit_fonts, digit_fonts, load_font

__all__ = ["generate_printed"]

_C = 96  # working canvas (pixels); the labelled digit is centred on it
_OUT = 64  # crop size before the final reduction to 32x32


_LUMA = np.array([0.299, 0.587, 0.114], np.float32)
_YY, _XX = (g.astype(np.float32) / _C for g in np.mgrid[0:_C, 0:_C])
_Y32, _X32 = (g.astype(np.float32) / 31.0 - 0.5 for g in np.mgrid[0:32, 0:32])


def _rgb(c: np.ndarray) -> tuple[int, int, int]:
    return tuple(int(v) for v in np.clip(c, 0, 255))  # type: ignore[return-value]


def _colour_pair(rng: np.random.Generator, min_contrast: float) -> tuple[np.ndarray, np.ndarray]:
    """Background and text colours (RGB in 0..255) whose luminances differ enough."""
    for _ in range(50):
        bg, fg = rng.uniform(0, 255, size=(2, 3)).astype(np.float32)
        if abs(float(_LUMA @ bg) - float(_LUMA @ fg)) >= min_contrast:
            return bg, fg
    return np.zeros(3, np.float32), np.full(3, 255.0, np.float32)


def _text_mask(
    rng: np.random.Generator,
    label: int,
    *,
    size_range: tuple[int, int],
    digits_p: tuple[float, ...],
    spacing: tuple[float, float],
    fonts: tuple[str, ...],
) -> Image.Image:
    """An 'L' mask of a number with the labelled digit centred on the canvas.

    ``digits_p[k-1]`` is the probability of a k-digit number; ``spacing`` the range of the gap
    between glyphs as a fraction of the font size; ``fonts`` the faces to draw from.
    """
    font = load_font(fonts[int(rng.integers(len(fonts)))], int(rng.integers(*size_range)))
    k = 1 + int(rng.choice(len(digits_p), p=digits_p))
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
    mask = _text_mask(
        rng,
        label,
        size_range=(38, 56),
        digits_p=(0.4, 0.35, 0.25),
        spacing=(0.0, 0.2),
        fonts=digit_fonts(),
    )
    mask = mask.rotate(
        rng.uniform(-12, 12), resample=Image.Resampling.BILINEAR, center=(_C / 2, _C / 2)
    )
    bg, fg = _colour_pair(rng, 80.0)
    lo = (_C - _OUT) // 2
    box = (lo, lo, lo + _OUT, lo + _OUT)
    pil = Image.composite(
        Image.new("RGB", (_OUT, _OUT), _rgb(fg)),
        Image.new("RGB", (_OUT, _OUT), _rgb(bg)),
        mask.crop(box),
    )
    pil = pil.filter(ImageFilter.GaussianBlur(rng.uniform(0.0, 1.2)))
    return np.asarray(pil.resize((32, 32), Image.Resampling.BOX))


def _muted(rng: np.random.Generator) -> np.ndarray:
    """A photographic colour: a random RGB pulled 30-80 % of the way to its own grey."""
    c = rng.uniform(0, 255, size=3).astype(np.float32)
    grey = np.float32(_LUMA @ c)
    return grey + np.float32(rng.uniform(0.2, 0.7)) * (c - grey)


def _background(rng: np.random.Generator) -> Image.Image:
    """Gradient or striped background of the working canvas."""
    th = rng.uniform(0, 2 * np.pi)
    t = np.float32(np.cos(th)) * _XX + np.float32(np.sin(th)) * _YY
    a, b = _muted(rng), _muted(rng)
    if rng.random() < 0.5:
        w = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    else:  # stripes (brick rows, siding, tiles)
        w = np.sin(np.float32(2 * np.pi * rng.uniform(2, 7)) * t + np.float32(rng.uniform(0, 6.3)))
        w = np.float32(rng.uniform(0.15, 0.5)) * (w > 0) + np.float32(rng.uniform(0.0, 0.5))
    img = a + (b - a) * w[..., None]
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))


def _svhn_image(rng: np.random.Generator, label: int) -> np.ndarray:
    mask = _text_mask(
        rng,
        label,
        size_range=(46, 64),
        digits_p=(0.15, 0.45, 0.4),
        spacing=(-0.08, 0.05),
        fonts=bold_digit_fonts(),
    )
    mask = mask.rotate(
        rng.uniform(-8, 8), resample=Image.Resampling.BILINEAR, center=(_C / 2, _C / 2)
    )
    canvas = _background(rng)
    bgl = float(_LUMA @ np.asarray(canvas.resize((1, 1), Image.Resampling.BOX), np.float32)[0, 0])
    fg = _muted(rng)
    for _ in range(20):  # text must stand out from the mean background
        if abs(float(_LUMA @ fg) - bgl) >= 45:
            break
        fg = _muted(rng)
    draw = ImageDraw.Draw(canvas)
    for _ in range(int(rng.integers(1, 5))):  # clutter: lines and boxes
        col = tuple(int(v) for v in rng.integers(0, 256, size=3))
        p = rng.uniform(0, _C, size=4)
        if rng.random() < 0.5:
            draw.line(list(p), fill=col, width=int(rng.integers(1, 4)))
        else:
            x1, x2 = sorted(p[:2])
            y1, y2 = sorted(p[2:])
            draw.rectangle([x1, y1, x2, y2], outline=col, width=int(rng.integers(1, 4)))
    if rng.random() < 0.5:  # drop shadow
        dx, dy = (int(v) for v in rng.integers(-4, 5, size=2))
        alpha = rng.uniform(0.3, 0.7)
        sh = ImageChops.offset(mask.filter(ImageFilter.GaussianBlur(2.0)), dx, dy)
        sh = sh.point(lambda v: int(v * alpha))
        canvas = Image.composite(Image.new("RGB", canvas.size, 0), canvas, sh)
    canvas = Image.composite(Image.new("RGB", canvas.size, _rgb(fg)), canvas, mask)
    # perspective-jittered crop of the central region
    lo, hi = (_C - _OUT) / 2, (_C + _OUT) / 2
    quad = np.array([lo, lo, lo, hi, hi, hi, hi, lo]) + rng.normal(0, 5.0, size=8)
    pil = canvas.transform(
        (_OUT, _OUT), Image.Transform.QUAD, tuple(quad.tolist()), Image.Resampling.BILINEAR
    )
    pil = pil.filter(ImageFilter.GaussianBlur(rng.uniform(0.4, 1.8)))
    x = np.asarray(pil.resize((32, 32), Image.Resampling.BOX), np.float32)
    th = rng.uniform(0, 2 * np.pi)
    ramp = np.float32(np.cos(th)) * _X32 + np.float32(np.sin(th)) * _Y32
    gain = np.float32(rng.uniform(0.65, 1.1)) + np.float32(rng.uniform(0.0, 0.6)) * ramp
    x = x * gain[..., None]
    x += rng.normal(0, rng.uniform(1, 7), size=x.shape).astype(np.float32)
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
    from .base import DOMAINS, split_index

    make = _syn_image if domain == "syn" else _svhn_image
    di, si = DOMAINS.index(domain), split_index(split)  # the Digits-4 seed streams
    imgs = np.empty((n, 32, 32, 3), np.uint8)
    labels = np.empty(n, np.int64)
    for k in range(n):
        rng = np.random.default_rng([seed, di, si, start + k])
        y = int(rng.integers(10))
        labels[k] = y
        imgs[k] = make(rng, y)
    return imgs, labels
