"""Every report kind opened in a real headless Chromium (DevTools protocol, tests/helpers/cdp.py).

Per page: no JavaScript error or failed load with the network blocked (self-contained,
offline), every plot drew an SVG with data points and titled both axes, and no two labels of a
plot (legend entries, axis and plot titles, subplot titles, text on points) overlap. Skips with
one line where no chromium or websockets client is installed (``make test`` installs chromium
as root).
"""

from __future__ import annotations

import pytest

from helpers import cdp

_WHY = cdp.unavailable()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=f"browser test skipped: {_WHY}")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    from helpers import reports

    return reports.build_all(tmp_path_factory.mktemp("reports"))


@pytest.fixture(scope="module")
def browser():
    with cdp.Browser(width=1280, height=900) as b:
        yield b


KINDS = ("sweep", "sweep-maxmin", "sweep-rounds", "compare", "analyze", "demo", "study", "map")
# plots each page must show
MIN_PLOTS = {"demo": 4, "study": 6, "analyze": 2, "map": 2}


@pytest.mark.parametrize("kind", KINDS)
def test_report_renders_in_a_browser(kind, pages, browser):
    browser.open(pages[kind])
    assert browser.errors() == [], f"{kind}: JavaScript errors: {browser.errors()}"
    rep = browser.page_report()
    plots = rep["plots"]
    assert len(plots) >= MIN_PLOTS.get(kind, 1), f"{kind}: {len(plots)} plots"
    assert len(rep["h1"]) == 1, f"{kind}: headings {rep['h1']}"
    for p in plots:
        where = f"{kind} plot {p['id']}"
        assert p["svg"] and p["points"] + p["lines"] > 0, f"{where} drew no data: {p}"
        # a categorical y axis (a forest plot's entries) is named by its tick labels
        assert p["xtitles"] and (p["ytitles"] or p["ycategory"]), f"{where} lacks an axis title"
        assert p["overlaps"] == [], f"{where}: overlapping labels {p['overlaps']}"
    # nothing widens the page beyond a 1280-px window (wide tables scroll in their own box)
    wide = browser.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert wide[0] <= wide[1], f"{kind}: the page is {wide[0]} px wide in a {wide[1]}-px window"
    # and no table is clipped in its box at this width: every column shows, headers included
    # (but a dump of every column of a CSV, marked data-wide, which scrolls by design)
    clipped = browser.evaluate(
        "Array.from(document.querySelectorAll('div.scroll:not([data-wide])')).filter("
        "d => d.scrollWidth > d.clientWidth + 1).map(d => d.querySelector('table').rows[0]"
        ".cells.length + ' columns: ' + d.scrollWidth + ' px in ' + d.clientWidth)"
    )
    assert clipped == [], f"{kind}: tables wider than their box: {clipped}"
    if kind.startswith("sweep") or kind == "compare":
        # the page's heading carries the title; the figure does not repeat it
        assert all(not p["title"] for p in plots), f"{kind}: title printed twice"
    if kind == "sweep-maxmin":
        assert any("worst" in t for p in plots for t in p["xtitles"]), "max-min not in (U, worst)"


def test_a_map_cell_opens_its_study(pages, browser):
    """Clicking a cell of the map (plotly's click event on it) opens that cell's report."""
    browser.open(pages["map"])
    link = browser.evaluate("document.getElementById('map_worst').data[0].customdata[0][0]")
    assert link.startswith("cells/") and (pages["map"].parent / link).is_file()
    browser.evaluate(
        "document.getElementById('map_worst').emit('plotly_click', "
        "{points: [{customdata: document.getElementById('map_worst').data[0].customdata[0][0]}]})"
    )
    import time

    heading = "(document.querySelector('h1') || {textContent: ''}).textContent"
    for _ in range(100):  # the cell's page loads
        try:
            if browser.evaluate("window.location.href").endswith(link) and browser.evaluate(
                heading
            ):
                break
        except RuntimeError:  # asked while the page was being replaced: ask again
            pass
        time.sleep(0.1)
    assert browser.evaluate("window.location.href").endswith(link)
    assert browser.evaluate(heading).startswith("fedsel study")


#: committed reports, one of each kind, opened from disk with the network blocked: each loads
#: the shared plotly.js of results/fedsel-assets by its relative path and draws its plots
COMMITTED = (
    "results/demo/report.html",
    "results/study/report.html",
    "results/map/map.html",
    "results/map/cells/k5-alpha0.5-sigma0-cpd5/confirm/report.html",
    "results/seed-statistics/analysis.html",
)


@pytest.mark.parametrize("rel", COMMITTED)
def test_a_committed_report_draws_offline(rel, browser):
    from selection.plotly_js import ASSETS, ensure_bundle

    from helpers import ROOT

    ensure_bundle(ROOT / "results" / ASSETS)  # a build product (make writes it)
    path = ROOT / rel
    if not path.is_file():
        pytest.skip(f"{rel} is not in this checkout")
    browser.open(path)
    assert browser.errors() == [], f"{rel}: {browser.errors()}"
    plots = browser.page_report()["plots"]
    assert plots and all(p["svg"] and p["points"] + p["lines"] > 0 for p in plots), rel
