"""Preview grid of the four domains (matplotlib, Agg backend), written atomically."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from selection.atomic import atomic_path

from .base import DomainData

__all__ = ["preview_grid", "render_preview"]


def preview_grid(rows: Sequence[DomainData]) -> tuple[list[np.ndarray], list[str]]:
    """The image strip and title of each row.

    Args:
        rows: one DomainData per row, images in [0, 1] (not standardized).

    Returns:
        (strips, titles): each strip a float array (32, 32·n, 3) in [0, 1]; titles mark
        generated stand-ins as such.
    """
    strips, titles = [], []
    for d in rows:
        x = d.images.detach().cpu().numpy().transpose(0, 2, 3, 1)
        lo, hi = float(x.min(initial=0.0)), float(x.max(initial=1.0))
        if lo < 0.0 or hi > 1.0:  # standardized input: rescale for display
            x = (x - lo) / max(hi - lo, 1e-6)
        strips.append(np.concatenate(list(x), axis=1) if len(x) else np.zeros((32, 32, 3)))
        what = {"generated": "generated stand-in", "bundled": f"genuine, bundled: {d.version}"}.get(
            d.source, f"real: {d.path}"
        )
        labels = " ".join(str(int(v)) for v in d.labels[:20])
        titles.append(f"{d.name} ({d.split}, {what}) — labels {labels}")
    return strips, titles


def render_preview(rows: Sequence[DomainData], out: str | Path) -> Path:
    """Draw the grid to a PNG through a temp file and an atomic rename."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    strips, titles = preview_grid(rows)
    width = max(s.shape[1] for s in strips)
    fig = Figure(figsize=(max(4.0, width / 32 * 0.8), 1.3 * len(strips)), dpi=100)
    for i, (s, t) in enumerate(zip(strips, titles, strict=True)):
        ax = fig.add_subplot(len(strips), 1, i + 1)
        ax.imshow(s, interpolation="nearest", extent=(0, s.shape[1], s.shape[0], 0))
        ax.set_xlim(0, width)
        ax.set_title(t, fontsize=8, loc="left")
        ax.axis("off")
    fig.tight_layout()
    out = Path(out)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png")
    return out
