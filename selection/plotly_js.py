"""How a report gets plotly.js: decided here, once, for every report fedsel writes.

Every report draws its plots with plotly.js and must open offline, from disk, with no network
(here, and for many users). Two ways, chosen by where the report is written:

* **inlined** (the default): the page carries its own copy of plotly.js (~4.6 MB), so one
  file opened anywhere draws its plots;
* **shared**: when a folder above the report (or the report's own) holds a folder named
  :data:`ASSETS` (``fedsel-assets/``), the report loads ``fedsel-assets/plotly.min.js`` by a
  relative path, and that bundle is written there from the installed plotly if it is not
  already (:func:`ensure_bundle`). A results tree of many reports (the project's ``results/``)
  then holds one copy of the library, and every report still opens from disk (a relative
  ``<script src>`` loads over ``file://``). The bundle is a build product, not committed:
  ``make`` writes it (``python -m selection.plotly_js results``) before the tests, the demo
  and the docs.

Renderers put plotly.js in a page with :func:`plotly_head` (inlined, between two markers);
writers call :func:`write_report`, which keeps the page inlined or swaps the marked region
for the shared bundle's ``<script src>``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from selection.atomic import write_text_atomic

__all__ = [
    "ASSETS",
    "BUNDLE",
    "ensure_bundle",
    "plotly_head",
    "shared_bundle",
    "share_plotly",
    "write_report",
]

#: the folder whose presence above a report makes it load a shared plotly.js
ASSETS = "fedsel-assets"
#: the shared bundle's file name in it
BUNDLE = "plotly.min.js"
_OPEN, _CLOSE = "<!--fedsel:plotly.js-->", "<!--/fedsel:plotly.js-->"
_REGION = re.compile(re.escape(_OPEN) + r".*?" + re.escape(_CLOSE), re.S)


def plotly_head() -> str:
    """plotly.js inlined in a ``<script>``, between the markers :func:`write_report` reads.

    Examples:
        >>> h = plotly_head()
        >>> h.startswith("<!--fedsel:plotly.js--><script") and len(h) > 1_000_000
        True
    """
    from plotly.offline import get_plotlyjs

    return f"{_OPEN}<script type='text/javascript'>{get_plotlyjs()}</script>{_CLOSE}"


def shared_bundle(path: str | os.PathLike) -> Path | None:
    """The ``fedsel-assets`` folder a report written at ``path`` shares, or None (inline).

    Examples:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> shared_bundle(root / "study" / "report.html") is None
        True
        >>> (root / "fedsel-assets").mkdir()
        >>> shared_bundle(root / "study" / "report.html") == root / "fedsel-assets"
        True
    """
    here = Path(os.path.abspath(path)).parent
    for folder in (here, *here.parents):
        if (folder / ASSETS).is_dir():
            return folder / ASSETS
    return None


def ensure_bundle(assets: str | os.PathLike) -> Path:
    """``assets/plotly.min.js``, written from the installed plotly where it is missing.

    Examples:
        >>> import tempfile
        >>> p = ensure_bundle(Path(tempfile.mkdtemp()) / "fedsel-assets")
        >>> p.name, p.stat().st_size > 1_000_000
        ('plotly.min.js', True)
    """
    bundle = Path(assets) / BUNDLE
    if not bundle.is_file():
        from plotly.offline import get_plotlyjs

        write_text_atomic(get_plotlyjs(), bundle)
    return bundle


def share_plotly(html: str, path: str | os.PathLike) -> str:
    """``html`` as written at ``path``: its inlined plotly.js replaced by the shared bundle's
    ``<script src>`` when a ``fedsel-assets`` folder lies above ``path`` (the bundle written
    there if absent); unchanged otherwise, or when the page inlines no plotly.js.

    Examples:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "fedsel-assets").mkdir()
        >>> page = "<head>" + plotly_head() + "</head>"
        >>> out = share_plotly(page, root / "a" / "b" / "report.html")
        >>> out.startswith("<head><script src='../../fedsel-assets/plotly.min.js'") and len(out) < 200
        True
        >>> [p.name for p in (root / "fedsel-assets").iterdir()]
        ['plotly.min.js']
    """
    assets = shared_bundle(path)
    if assets is None or not _REGION.search(html):
        return html
    bundle = ensure_bundle(assets)
    src = Path(os.path.relpath(bundle, Path(os.path.abspath(path)).parent)).as_posix()
    tag = f"<script src='{src}' charset='utf-8'></script>"
    return _REGION.sub(lambda _m: tag, html, count=1)


def write_report(html: str, path: str | os.PathLike) -> Path:
    """Write a report page atomically, plotly.js inlined or shared (:func:`share_plotly`)."""
    return write_text_atomic(share_plotly(html, path), path)


if __name__ == "__main__":  # python -m selection.plotly_js results: the tree's shared bundle
    import sys

    for root in sys.argv[1:] or ["results"]:
        print(ensure_bundle(Path(root) / ASSETS))
