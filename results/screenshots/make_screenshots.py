"""Screenshots of every report kind in headless Chromium -> results/screenshots/*.png.

    .venv/bin/python results/screenshots/make_screenshots.py [--keep DIR]

Builds the pages with ``tests/helpers/reports.py`` (sweep, compare and analyze on the shipped example
round ``results/examples/stats.csv`` and a 3-round table), takes the demo and study pages from
the committed runs (``results/demo/report.html``, ``results/study/report.html``; the test
suite's fake oracle's only when one is missing, and then it says so), opens each in Chromium at
a 1280-px width through the DevTools protocol (``tests/helpers/cdp.py``) and saves the top of the page
as a PNG.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# kind -> (page in build_all's output, pixels from the top to keep)
SHOTS = {
    "sweep": ("sweep", 1000),
    "sweep-rounds": ("sweep-rounds", 900),
    "compare": ("compare", 1200),
    "analyze": ("analyze", 1500),
    "demo": ("demo", 2300),
    "study": ("study", 2000),
}


def _helpers():
    """``helpers.cdp`` and ``helpers.reports`` (tests/helpers), with ``tests/`` on the path only
    while they are imported: tests/fl_oracle and tests/selection must not be taken for the
    packages, which are therefore imported first."""
    import fl_oracle  # noqa: F401
    import selection  # noqa: F401

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from helpers import cdp, reports
    finally:
        sys.path.remove(str(ROOT / "tests"))
    return cdp, reports


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="Build the pages here (default: a temp folder).")
    args = ap.parse_args()
    cdp, reports = _helpers()
    why = cdp.unavailable()
    if why:
        sys.exit(f"no screenshots: {why}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="fedsel-shots-"))
    pages = reports.build_all(work)
    for kind in ("demo", "study"):
        committed = ROOT / "results" / kind / "report.html"
        if committed.is_file():
            pages[kind] = committed
        else:
            print(f"{kind}: no committed {committed.relative_to(ROOT)}, the fake oracle's page")
    with cdp.Browser(width=1280, height=900) as b:
        for kind, (page, height) in SHOTS.items():
            b.open(pages[page])
            if b.errors():
                sys.exit(f"{kind}: page errors: {b.errors()}")
            path = b.screenshot(HERE / f"{kind}.png", max_height=height)
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
