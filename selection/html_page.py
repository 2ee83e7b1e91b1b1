"""The one HTML page every report is written on, its tables and its colours.

Reports (``fedsel sweep/compare``, ``analyze``, ``demo``, ``study``) add only what is their own:
extra CSS rules, the body and how their cells read. :data:`BASE_CSS` holds the rules they share
(page width and font, tables with right-aligned numbers and a left-aligned first column, notes,
takeaways, client-id cells, horizontally scrolling blocks); :func:`html_table` is the one table
renderer (a report passes how a cell reads); :data:`PALETTE` and :func:`palette_colors` the one
categorical palette (the demo's plotly palette and the study's long one are named here too).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

__all__ = [
    "BASE_CSS",
    "PALETTE",
    "page",
    "html_table",
    "palette_colors",
    "long_palette",
    "plotly_palette",
]

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
        # no icon: a browser then asks no server for /favicon.ico (the page makes no request)
        "<link rel='icon' href='data:,'>"
        f"<title>{html.escape(title)}</title>{head}<style>{BASE_CSS}{css}</style></head>"
        f"<body>{top}{body}</body></html>"
    )


#: ``(column, value, record) -> (attributes, html)`` of one table cell: the attributes are
#: written inside ``<td...>`` as given (e.g. `` class='n'``), the html between the tags
Cell = Callable[[str, Any, dict], tuple[str, str]]


def _escaped(column: str, value: Any, record: dict) -> tuple[str, str]:
    return "", html.escape(str(value))


def _breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity after each underscore."""
    return html.escape(text).replace("_", "_<wbr>")


def html_table(
    df: pd.DataFrame, cell: Cell = _escaped, *, scroll: bool = False, sections: bool = False
) -> str:
    """``df`` as one HTML table: a header row of its columns, then one row per record.

    Args:
        df: the table (its columns are the header, escaped).
        cell: how one cell reads (:data:`Cell`); default: the value as text, escaped.
        scroll: inside ``<div class='scroll'>`` (a wide table scrolls, the page does not).
        sections: the header row in ``<thead>``, the rows in ``<tbody>``.
    """
    # a header may wrap after an underscore (pred_utility): a wide table then fits its box
    head = "<tr>" + "".join(f"<th>{_breakable(str(c))}</th>" for c in df.columns) + "</tr>"
    rows = []
    for record in df.to_dict("records"):  # Python scalars (a numpy float is a float)
        cells = (cell(str(c), v, record) for c, v in record.items())
        rows.append("<tr>" + "".join(f"<td{a}>{t}</td>" for a, t in cells) + "</tr>")
    body = "".join(rows)
    table = (
        f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"
        if sections
        else f"<table>{head}{body}</table>"
    )
    return f"<div class='scroll'>{table}</div>" if scroll else table


#: fedsel's categorical colours: the fronts and compare pages cycle through the first seven,
#: the study through all ten, then :func:`long_palette`'s
PALETTE: tuple[str, ...] = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
)  # fmt: skip


def palette_colors(names: Iterable[str], palette: Sequence[str] = PALETTE) -> dict[str, str]:
    """One colour per name, in order, cycling through ``palette``."""
    return {n: palette[i % len(palette)] for i, n in enumerate(names)}


def long_palette() -> list[str]:
    """:data:`PALETTE`, then plotly's Dark24 without those: 34 distinct colours (the study's
    formulation families)."""
    from plotly.colors import qualitative

    return [*PALETTE, *(c for c in qualitative.Dark24 if c.lower() not in PALETTE)]


def plotly_palette() -> list[str]:
    """plotly's D3 then Set2 colours (the demo's selectors)."""
    from plotly.colors import qualitative

    return qualitative.D3 + qualitative.Set2
