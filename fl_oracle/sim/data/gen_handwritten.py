"""Handwritten stand-ins for MNIST and USPS, grown from scikit-learn's bundled digits.

scikit-learn ships 1,797 real handwritten digits (8×8, 16 grey levels). They are split once,
by a fixed permutation, into two disjoint halves: one feeds ``mnist``, the other ``usps``;
inside each half, three quarters feed the train split and one quarter the test split, so a
test image never shares its source digit with a training image.

Every image ``i`` depends only on ``(seed, domain, split, i)``: its own random stream
``np.random.default_rng([seed, domain, split, i])`` picks the label, the source digit and the
distortion, so a request for 500 images returns the prefix of a request for 1,000.

- ``mnist``: source upsampled ×4 (cubic), elastic warp, rotation, slant and anisotropic
  scale, a stroke-width threshold, then MNIST's recipe: fit into a 20×20 box (aspect kept),
  centre of mass at the centre of 28×28, white on black; finally 32×32.
- ``usps``: the other half, milder warp, thick strokes, the digit stretched to fill a 16×16
  frame (USPS normalization), then 32×32 (blocky, as USPS upsampled).
"""

from __future__ import annotations

import functools

import numpy as np
from PIL import Image
from scipy import ndimage

from .imageops import to_rgb32

__all__ = ["generate_handwritten", "source_pools"]

_UP = 4  # upsampling factor of the 8x8 sources (padded to 10x10 -> 40x40)
_POOL_SEED = 20_240_531  # fixed: the halves and pools never depend on the user's seed


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.pad(d.images.astype(np.float32) / 16.0, ((0, 0), (1, 1), (1, 1)))
    up = ndimage.zoom(x, (1, _UP, _UP), order=3, grid_mode=True, mode="grid-constant")
    return np.clip(up, 0.0, 1.0), d.target.astype(np.int64)


@functools.lru_cache(maxsize=8)
def source_pools(domain: str, split: str) -> tuple[np.ndarray, ...]:
    """Indices into scikit-learn's digits that feed (domain, split), one array per label.

    The two domains get disjoint halves; train and test get disjoint 3/4 and 1/4 of a half.
    """
    _, y = _sources()
    perm = np.random.default_rng(_POOL_SEED).permutation(len(y))
    half = perm[: len(y) // 2] if domain == "mnist" else perm[len(y) // 2 :]
    cut = (3 * len(half)) // 4
    part = half[:cut] if split == "train" else half[cut:]
    return tuple(np.sort(part[y[part] == c]) for c in range(10))


def _warp(
    src: np.ndarray,
    rng: np.random.Generator,
    *,
    rot: float,
    slant: float,
    scale: float,
    alpha: float,
) -> np.ndarray:
    """Affine (rotation, slant, anisotropic scale) plus smooth elastic displacement."""
    h, w = src.shape
    th = np.deg2rad(rng.uniform(-rot, rot))
    sh = rng.uniform(-slant, slant)
    sx, sy = rng.uniform(1 - scale, 1 + scale, size=2)
    c, s = np.cos(th), np.sin(th)
    # inverse map: output (y, x) -> input coordinates, about the centre
    m = np.array([[c, -s], [s, c]]) @ np.array([[1.0, 0.0], [sh, 1.0]]) @ np.diag([1 / sy, 1 / sx])
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    cy, cx = (h - 1) / 2, (w - 1) / 2
    dy, dx = yy - cy, xx - cx
    iy = m[0, 0] * dy + m[0, 1] * dx + cy
    ix = m[1, 0] * dy + m[1, 1] * dx + cx
    if alpha > 0:  # smooth elastic field: a few random low-frequency plane waves per axis
        k = rng.uniform(-1.0, 1.0, size=(2, 3, 2)) * (2 * np.pi / 28.0)
        ph = rng.uniform(0, 2 * np.pi, size=(2, 3, 1, 1))
        amp = rng.normal(0, alpha / np.sqrt(3), size=(2, 3, 1, 1))
        waves = amp * np.sin(k[..., 0, None, None] * yy + k[..., 1, None, None] * xx + ph)
        iy = iy + waves[0].sum(axis=0)
        ix = ix + waves[1].sum(axis=0)
    return ndimage.map_coordinates(src, [iy, ix], order=1, mode="constant", cval=0.0)


def _stroke(
    x: np.ndarray, rng: np.random.Generator, lo: float, hi: float, dilate_p: float
) -> np.ndarray:
    """Soft threshold: a low threshold thickens the strokes, a high one thins them."""
    t = rng.uniform(lo, hi)
    y = np.clip((x - t) / 0.2 + 0.5, 0.0, 1.0)
    if rng.random() < dilate_p:
        y = ndimage.grey_dilation(y, size=(3, 3))
    return ndimage.gaussian_filter(y, rng.uniform(0.4, 0.9))


def _fit(img: np.ndarray, box: tuple[int, int]) -> Image.Image:
    pil = Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8))
    return pil.resize(box, Image.Resampling.LANCZOS)


def _bbox(x: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(x > 0.1)
    if ys.size == 0:
        return x
    return x[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]


def _mnist_image(src: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    x = _warp(src, rng, rot=12.0, slant=0.3, scale=0.1, alpha=1.8)
    x = _bbox(_stroke(x, rng, 0.35, 0.7, dilate_p=0.1))
    h, w = x.shape
    s = 20.0 / max(h, w)
    digit = np.asarray(_fit(x, (max(1, round(w * s)), max(1, round(h * s)))), np.float32)
    cy, cx = ndimage.center_of_mass(digit)
    oy = int(np.clip(round(14 - cy), 0, 28 - digit.shape[0]))
    ox = int(np.clip(round(14 - cx), 0, 28 - digit.shape[1]))
    out = np.zeros((28, 28), np.float32)
    out[oy : oy + digit.shape[0], ox : ox + digit.shape[1]] = digit
    return out.astype(np.uint8)


def _usps_image(src: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    x = _warp(src, rng, rot=8.0, slant=0.15, scale=0.08, alpha=1.5)
    x = _bbox(_stroke(x, rng, 0.25, 0.5, dilate_p=0.3))
    h, w = x.shape
    s = 16.0 / max(h, w)
    bw, bh = w * s, h * s
    bw, bh = min(16.0, bw * rng.uniform(1.3, 1.8)), min(16.0, bh * rng.uniform(1.3, 1.8))
    digit = np.asarray(_fit(x, (max(1, round(bw)), max(1, round(bh)))), np.uint8)
    out = np.zeros((16, 16), np.uint8)
    oy, ox = (16 - digit.shape[0]) // 2, (16 - digit.shape[1]) // 2
    out[oy : oy + digit.shape[0], ox : ox + digit.shape[1]] = digit
    return out


def generate_handwritten(
    domain: str, split: str, n: int, seed: int, start: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Generate images ``start .. start+n-1`` of a handwritten domain.

    Args:
        domain: ``"mnist"`` or ``"usps"``.
        split: ``"train"`` or ``"test"``.
        n: number of images.
        seed: the user's seed.
        start: index of the first image (image i depends only on seed, domain, split, i).

    Returns:
        images uint8 (n, 32, 32, 3), labels int64 (n,).
    """
    from .base import DOMAINS, split_index

    src, _ = _sources()
    pools = source_pools(domain, split)
    make = _mnist_image if domain == "mnist" else _usps_image
    side = 28 if domain == "mnist" else 16
    di, si = DOMAINS.index(domain), split_index(split)  # the Digits-4 seed streams
    imgs = np.empty((n, side, side), np.uint8)
    labels = np.empty(n, np.int64)
    for k in range(n):
        rng = np.random.default_rng([seed, di, si, start + k])
        y = int(rng.integers(10))
        labels[k] = y
        imgs[k] = make(src[rng.choice(pools[y])], rng)
    return to_rgb32(imgs), labels
