"""Screenshots of every report kind in headless Chromium -> results/screenshots/*.png.

    .venv/bin/python results/screenshots/make_screenshots.py [--keep DIR]

Builds the pages with ``tests/_reports.py`` (sweep, compare and analyze on the shipped example
round ``results/examples/stats.csv`` and a 3-round table), takes the demo and study pages from
the committed runs (``results/demo/report.html``, ``results/study/report.html``; the test
suite's fake oracle's only when one is missing, and then it says so), opens each in Chromium at
a 1280-px width through the DevTools protocol (``tests/_cdp.py``) and saves the top of the page
as a PNG.
"""

from __future__ import annotations

import argparse
import importlib.util
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


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_{name}", ROOT / "tests" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="Build the pages here (default: a temp folder).")
    args = ap.parse_args()
    cdp, reports = _load("_cdp"), _load("_reports")
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
