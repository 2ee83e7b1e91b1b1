"""Small image helpers shared by the readers and the generators (numpy + Pillow, no torch)."""

from __future__ import annotations

import numpy as np
from PIL import Image

__all__ = ["to_rgb32", "standardize_per_image"]


def to_rgb32(images: np.ndarray) -> np.ndarray:
    """Bring a stack of images to uint8 (N, 32, 32, 3).

    Grey images are replicated over three channels; other sizes are resized to 32×32 with
    bilinear interpolation (28×28 MNIST and 16×16 USPS, as torchvision's ``Resize(32)``).

    Args:
        images: uint8 array of shape (N, H, W) or (N, H, W, 3).

    Returns:
        uint8 array of shape (N, 32, 32, 3).
    """
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise ValueError(f"to_rgb32 expects uint8 images, got {images.dtype}")
    if images.ndim == 4 and images.shape[-1] == 1:
        images = images[..., 0]
    if images.ndim not in (3, 4) or (images.ndim == 4 and images.shape[-1] != 3):
        raise ValueError(f"to_rgb32 expects (N, H, W) or (N, H, W, 3), got {images.shape}")
    if images.shape[1:3] != (32, 32):
        mode = "L" if images.ndim == 3 else "RGB"
        out = np.empty((images.shape[0], 32, 32) + images.shape[3:], np.uint8)
        for i, img in enumerate(images):
            pil = Image.fromarray(np.ascontiguousarray(img), mode=mode)
            out[i] = np.asarray(pil.resize((32, 32), Image.Resampling.BILINEAR))
        images = out
    if images.ndim == 3:
        images = np.repeat(images[..., None], 3, axis=-1)
    return np.ascontiguousarray(images)


def standardize_per_image(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Standardize each image by its own mean and standard deviation.

    Args:
        x: float array of shape (N, C, H, W) (any layout with the image on axis 0).
        eps: floor on the std so flat images map to zeros rather than NaN.

    Returns:
        float32 array of the same shape, each image with mean 0 and std 1 (or all zeros).
    """
    flat = x.reshape(x.shape[0], -1)
    mean = flat.mean(axis=1, keepdims=True)
    std = flat.std(axis=1, keepdims=True)
    return ((flat - mean) / np.maximum(std, eps)).reshape(x.shape).astype(np.float32)
