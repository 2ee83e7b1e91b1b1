"""Labels beside plotted points that overlap neither each other nor the markers.

Shared by every report that names its points (sweep fronts by ε/δ, the study's plane by
parameter): a greedy placement in pixel space of a fixed-size figure, as plotly annotations.
"""

from __future__ import annotations

import numpy as np

__all__ = ["place_labels"]


def place_labels(
    points: list[tuple[float, float, str, str]],
    xr: tuple[float, float],
    yr: tuple[float, float],
    plot_w: float,
    plot_h: float,
    obstacles: list[tuple[float, float, float, float]] = (),
) -> list[dict]:
    """Plotly annotations for labelled points, placed greedily where no label box overlaps
    another label or a marker (offsets grow from beside the point outwards, with a leader line
    once away from it). ``points``: (x, y, text, color) in data units; axes ranges xr, yr;
    the plotting area (inside the margins) is ``plot_w`` × ``plot_h`` pixels: the figure must
    have that fixed size for the placement to hold. ``obstacles``: further data-space
    rectangles (x0, y0, x1, y1) no label may cover, e.g. error bars."""
    pw, ph = plot_w, plot_h

    def px(x: float, y: float) -> tuple[float, float]:
        return ((x - xr[0]) / (xr[1] - xr[0]) * pw, (yr[1] - y) / (yr[1] - yr[0]) * ph)

    markers = [px(x, y) for x, y, _, _ in points]
    boxes: list[tuple[float, float, float, float]] = [
        (mx - 6, my - 6, 12, 12) for mx, my in markers
    ]
    for x0, y0, x1, y1 in obstacles:
        (ax, ay), (bx, by) = px(x0, y1), px(x1, y0)
        boxes.append((ax - 1, ay - 1, bx - ax + 2, by - ay + 2))
    offsets = [(0.0, -14.0), (0.0, 14.0), (22.0, 0.0), (-22.0, 0.0)]
    for radius in (30, 42, 56, 72, 90, 110, 135):
        offsets += [(radius * np.cos(t), radius * np.sin(t)) for t in np.linspace(0, 2 * np.pi, 16, endpoint=False)]  # fmt: skip

    def free(box) -> bool:
        x, y, w, h = box
        if x < 0 or y < 0 or x + w > pw or y + h > ph:
            return False
        return all(
            x + w <= bx or bx + bw <= x or y + h <= by or by + bh <= y for bx, by, bw, bh in boxes
        )

    notes = []
    for (x, y, text, color), (mx, my) in zip(points, markers, strict=True):
        w, h = 6.2 * len(text) + 4, 14.0
        chosen = offsets[0]
        for dx, dy in offsets:
            box = (mx + dx - w / 2, my + dy - h / 2, w, h)
            if free(box):
                chosen = (dx, dy)
                break
        dx, dy = chosen
        boxes.append((mx + dx - w / 2, my + dy - h / 2, w, h))
        near = abs(dx) < 25 and abs(dy) < 16
        notes.append(
            {"x": x, "y": y, "text": text, "ax": dx, "ay": dy, "showarrow": True,
             "arrowwidth": 0.8, "arrowcolor": color if not near else "rgba(0,0,0,0)",
             "arrowhead": 0, "standoff": 4, "font": {"size": 10, "color": color}}
        )  # fmt: skip
    return notes
