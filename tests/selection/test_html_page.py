"""selection.html_page: the one table renderer and the palettes, on hand-written expectations."""

from __future__ import annotations

import numpy as np
import pandas as pd

from selection.html_page import (
    PALETTE,
    html_table,
    long_palette,
    page,
    palette_colors,
    plotly_palette,
)


def test_a_table_escapes_its_header_and_cells_by_default():
    df = pd.DataFrame({"a<b": ["x&y", "z"], "n": [1, 2]})
    assert html_table(df) == (
        "<table><tr><th>a&lt;b</th><th>n</th></tr>"
        "<tr><td>x&amp;y</td><td>1</td></tr><tr><td>z</td><td>2</td></tr></table>"
    )


def test_a_cell_function_writes_attributes_and_text_and_sees_the_record():
    df = pd.DataFrame({"who": ["p", "q"], "v": [1.23456, np.float64(2.0)]})

    def cell(column, value, record):
        if column == "v":
            mark = " class='best'" if record["who"] == "q" else ""
            return mark, f"{value:.2f}"
        return "", str(value).upper()

    assert html_table(df, cell, scroll=True, sections=True) == (
        "<div class='scroll'><table><thead><tr><th>who</th><th>v</th></tr></thead><tbody>"
        "<tr><td>P</td><td>1.23</td></tr><tr><td>Q</td><td class='best'>2.00</td></tr>"
        "</tbody></table></div>"
    )


def test_cells_get_python_scalars():
    seen = []
    df = pd.DataFrame({"f": np.array([0.5], dtype=np.float32), "i": np.array([3], dtype=np.int64)})
    html_table(df, lambda c, v, r: seen.append(type(v)) or ("", ""))
    assert seen == [float, int]


def test_an_empty_table_keeps_its_header():
    assert html_table(pd.DataFrame({"entry": []})) == "<table><tr><th>entry</th></tr></table>"


def test_palettes_cycle_and_the_long_one_has_34_distinct_colours():
    assert palette_colors(["a", "b", "c"], PALETTE[:2]) == {
        "a": PALETTE[0],
        "b": PALETTE[1],
        "c": PALETTE[0],
    }
    long = long_palette()
    assert long[:10] == list(PALETTE) and len(long) == len({c.lower() for c in long}) == 34
    assert plotly_palette()[0] == "#1F77B4"  # plotly's D3, as the demo has drawn it


def test_a_page_has_one_title_and_the_shared_style_first():
    text = page("t<1>", "<p>b</p>", css="p{x:y}")
    assert text.startswith(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='icon' href='data:,'><title>t&lt;1&gt;"
    )
    assert "<h1>t&lt;1&gt;</h1><p>b</p>" in text and text.index("p{x:y}") > text.index("body{")
