"""The one HTML page every report is written on: doctype, charset, title, shared style.

Reports (``fedsel sweep/compare``, ``analyze``, ``demo``, ``study``) add only what is their own:
extra CSS rules and the body. :data:`BASE_CSS` holds the rules they share (page width and
font, tables with right-aligned numbers and a left-aligned first column, notes, takeaways,
client-id cells, horizontally scrolling blocks).
"""

from __future__ import annotations

import html

__all__ = ["BASE_CSS", "page"]

BASE_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1200px;margin:1.5em auto;padding:0 1em;"
    "color:#222}table{border-collapse:collapse;margin:.6em 0;font-size:.9em}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;"
    "font-variant-numeric:tabular-nums}th{background:#f3f3f3}"
    "td:first-child,th:first-child{text-align:left}td.ids{text-align:left;white-space:nowrap}"
    ".note{color:#555;font-size:.9em}.takeaway{font-size:1.08em;font-weight:600}"
    ".scroll{overflow-x:auto}"
)


def page(
    title: str, body: str, *, css: str = "", head: str = "", heading: str | None = None
) -> str:
    """A whole HTML page.

    Args:
        title: the ``<title>``, and the ``<h1>`` unless ``heading`` is given.
        body: HTML of the page's content (after the heading).
        css: the report's own CSS rules, after :data:`BASE_CSS` (so they win).
        head: extra ``<head>`` content (e.g. a ``<script>`` with plotly.js).
        heading: the ``<h1>`` text when it differs from the title ("" for none).
    """
    h1 = title if heading is None else heading
    top = f"<h1>{html.escape(h1)}</h1>" if h1 else ""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>{head}<style>{BASE_CSS}{css}</style></head>"
        f"<body>{top}{body}</body></html>"
    )
