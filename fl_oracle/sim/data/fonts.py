"""Fonts for the printed-digit stand-ins, taken only from installed packages.

Candidates are matplotlib's bundled TrueType files (``matplotlib/mpl-data/fonts/ttf``) and
Pillow's built-in default font; the machine's own font folders are never scanned, so every
machine generates the same images. A candidate must render '0'..'9' as ten distinct,
non-empty glyphs that look like digits: each glyph, fitted into a 16×16 box, must correlate
best with the same digit of a reference font (Pillow's default and DejaVu Sans). This rejects
symbol and math-extension fonts (``cmsy10``, ``cmex10``, STIX size variants, LastResort) that
map the digit code points to other symbols or to one placeholder.
"""

from __future__ import annotations

import functools
from pathlib import Path

import matplotlib
import numpy as np
from PIL import Image, ImageDraw, ImageFont

__all__ = [
    "PILLOW_DEFAULT",
    "bold_digit_fonts",
    "candidate_fonts",
    "digit_fonts",
    "font_renders_digits",
    "load_font",
]

PILLOW_DEFAULT = "pillow:default"
_DIGITS = "0123456789"
_MIN_CORRECT = 9  # of ten digits must be nearest to their own reference template


def _mpl_font_dir() -> Path:
    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def candidate_fonts() -> list[str]:
    """Every font the generator may consider: Pillow's default plus matplotlib's TTFs."""
    return [PILLOW_DEFAULT] + [str(p) for p in sorted(_mpl_font_dir().glob("*.ttf"))]


@functools.lru_cache(maxsize=256)
def load_font(font: str, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Open ``font`` (a path or :data:`PILLOW_DEFAULT`) at ``size`` pixels (cached)."""
    if font == PILLOW_DEFAULT:
        return ImageFont.load_default(size=size)
    return ImageFont.truetype(font, size)


def _glyph(font: str, ch: str, size: int = 48) -> np.ndarray:
    """A glyph fitted, aspect kept, into a blurred 16×16 float box (all zeros if empty)."""
    f = load_font(font, size)
    im = Image.new("L", (3 * size, 3 * size), 0)
    ImageDraw.Draw(im).text((size, size // 2), ch, font=f, fill=255)
    box = im.getbbox()
    if box is None:
        return np.zeros((16, 16), np.float32)
    crop = im.crop(box)
    w, h = crop.size
    s = 14 / max(w, h)
    crop = crop.resize((max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.BILINEAR)
    out = Image.new("L", (16, 16), 0)
    out.paste(crop, ((16 - crop.size[0]) // 2, (16 - crop.size[1]) // 2))
    arr = np.asarray(out, np.float32) / 255.0
    return arr


def _normalized(g: np.ndarray) -> np.ndarray:
    v = g.ravel() - g.mean()
    n = np.linalg.norm(v)
    return v / n if n > 0 else v


@functools.lru_cache(maxsize=1)
def _reference() -> np.ndarray:
    refs = [PILLOW_DEFAULT, str(_mpl_font_dir() / "DejaVuSans.ttf")]
    tmpl = np.stack([np.mean([_glyph(r, c) for r in refs], axis=0) for c in _DIGITS])
    return np.stack([_normalized(t) for t in tmpl])


def font_renders_digits(font: str) -> bool:
    """True if ``font`` draws '0'..'9' as ten distinct, non-empty, digit-like glyphs."""
    try:
        glyphs = [_glyph(font, c) for c in _DIGITS]
    except OSError:
        return False
    if any(g.max() < 0.5 for g in glyphs):
        return False
    masks = {(g > 0.5).tobytes() for g in glyphs}
    if len(masks) < 10:
        return False
    sims = np.stack([_normalized(g) for g in glyphs]) @ _reference().T
    return int((sims.argmax(axis=1) == np.arange(10)).sum()) >= _MIN_CORRECT


@functools.lru_cache(maxsize=1)
def digit_fonts() -> tuple[str, ...]:
    """The accepted fonts, in a fixed order (Pillow's default first)."""
    fonts = tuple(f for f in candidate_fonts() if font_renders_digits(f))
    if not fonts:
        raise RuntimeError("no installed font renders the digits 0-9")
    return fonts


@functools.lru_cache(maxsize=1)
def bold_digit_fonts() -> tuple[str, ...]:
    """The accepted bold (and plain sans) fonts: the heavy faces of house-number plates.

    Pillow's default and DejaVu Sans plus every accepted face whose file name says bold
    (``Bold``, ``Bol``, ``cmb``); falls back to all accepted fonts if none qualifies.
    """
    fonts = digit_fonts()
    heavy = tuple(
        f
        for f in fonts
        if f == PILLOW_DEFAULT
        or Path(f).name in ("DejaVuSans.ttf",)
        or any(k in Path(f).name for k in ("Bold", "Bol", "cmb"))
    )
    return heavy or fonts
