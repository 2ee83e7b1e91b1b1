"""The documentation site: built strictly, every page seen in a headless Chromium.

``mkdocs build --strict`` fails on a broken link, a missing page, a snippet that names no file
or a docstring that does not parse; here it must succeed on the repository and fail on a copy
with one broken link. Then, per built page served from a local HTTP server (as ``make docs-serve`` or any static
host serves it): no JavaScript error, no request outside the site, every internal link and image
resolves (anchors included), and search finds what a user would look for. Skips the browser part with one line where no chromium is
installed (``make test`` installs it as root).
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from mkdocs.utils import yaml_load

from helpers import ROOT, cdp
from helpers import docs_site as site_build


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = site_build.build(out)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-3000:]}"
    return out


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])


def _refs(page: Path) -> _Refs:
    r = _Refs()
    r.feed(page.read_text(encoding="utf-8"))
    return r


def test_the_site_builds_strictly_with_every_section(site):
    pages = {p.relative_to(site).as_posix() for p in _pages(site)}
    for must in (
        "index.html",
        "get-started.html",
        "contract.html",
        "concepts/formulations.html",
        "tutorials/python-api.html",
        "how-to/backend.html",
        "reference/cli.html",
        "reference/api/selection.html",
        "results/index.html",
        "results/benchmarks/exact_peers.html",
        "results/studies/study.html",
        "architecture.html",
        "changelog.html",
    ):
        assert must in pages, f"{must} not built"
    # one results page per committed benchmark table and per study verdict
    for md in (ROOT / "results/benchmarks").glob("*.md"):
        assert f"results/benchmarks/{md.stem}.html" in pages
    for verdict in (ROOT / "results").glob("*/verdict.md"):
        assert f"results/studies/{verdict.parent.name}.html" in pages


def test_a_broken_link_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    (docs / "index.md").write_text(
        (docs / "index.md").read_text() + "\n[gone](no-such-page.md)\n", encoding="utf-8"
    )
    cfg = yaml_load((ROOT / "mkdocs.yml").read_text())  # mkdocs' loader: !ENV
    cfg["docs_dir"] = str(docs)
    cfg["hooks"] = [str(ROOT / "docs/hooks.py")]
    config = tmp_path / "mkdocs.yml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    done = site_build.build(tmp_path / "site", config)
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


def test_every_internal_link_and_image_resolves(site):
    refs = {p: _refs(p) for p in _pages(site)}
    bad = []
    for page, r in refs.items():
        for url in r.links + r.images:
            parts = urlsplit(url)
            if parts.scheme or url.startswith(("mailto:", "//")):
                continue  # external (none should be needed; checked offline below)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                bad.append(f"{page.relative_to(site)} -> {url}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = refs[target].ids if target in refs else _refs(target).ids
                if unquote(parts.fragment) not in ids:
                    bad.append(f"{page.relative_to(site)} -> {url} (no such anchor)")
    assert bad == [], "broken links:\n" + "\n".join(bad[:30])


def test_the_cli_reference_is_the_app(site):
    """Every command of the app has its section, every option of `solve` its row."""
    from typer.main import get_command

    from fl_oracle.cli import build_app

    text = (site / "reference/cli.html").read_text(encoding="utf-8")
    root = get_command(build_app())
    for name in root.commands:
        assert f"fedsel {name}" in text, f"fedsel {name} missing from the CLI reference"
    for param in root.commands["solve"].params:
        for opt in param.opts:
            assert f"<code>{opt}</code>" in text, f"solve {opt} missing"
    # the options --help marks required are marked so here (solve's --stats, --k, --method)
    required = [p for p in root.commands["solve"].params if p.required]
    assert required
    section = text.split('id="fedsel-solve"', 1)[1].split("<h2", 1)[0]
    for param in required:
        row = section.split(f"<code>{param.opts[0]}</code>", 1)[1].split("</tr>", 1)[0]
        assert "<strong>required</strong>" in row, (param.opts[0], row[:200])


# ---------------------------------------------------------------- in a browser
_WHY = cdp.unavailable()
browser_only = pytest.mark.skipif(_WHY is not None, reason=f"browser test skipped: {_WHY}")


@pytest.fixture(scope="module")
def browser():
    with cdp.Browser(width=1280, height=900, offline=False) as b:
        yield b


@pytest.fixture(scope="module")
def served(site):
    """The site on an HTTP server at 127.0.0.1 (search needs a worker, which file:// refuses)."""
    with site_build.serve(site) as url:
        yield url


def test_the_api_examples_render_as_code(site):
    """A docstring's ``Examples:`` section is griffe's examples section: its ``>>>`` lines are
    highlighted code (``Example:`` was an admonition whose brackets became broken links)."""
    for page in sorted((site / "reference" / "api").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        prompts = text.count("&gt;&gt;&gt;")
        as_code = text.count('class="gp">&gt;&gt;&gt;')
        assert as_code > 0 and as_code == prompts, (page.name, as_code, prompts)


@browser_only
def test_every_page_loads_without_errors_or_outside_requests(site, served, browser):
    failures = {}
    for page in _pages(site):
        browser.open(served + page.relative_to(site).as_posix())
        errors = browser.errors()
        broken = browser.evaluate(
            "[...document.images].filter(i => !(i.complete && i.naturalWidth > 0))"
            ".map(i => i.getAttribute('src'))"
        )
        outside = [u for u in browser.requested() if not u.startswith((served, "data:", "blob:"))]
        if errors or broken or outside:
            failures[page.relative_to(site).as_posix()] = (errors, broken, outside)
    assert failures == {}, failures


_SEARCH_JS = """
new Promise((resolve) => {
  const input = document.querySelector('.md-search__input');
  input.focus();
  input.value = %r;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true, key: 'n'}));
  let tries = 0;
  const poll = () => {
    const items = document.querySelectorAll('.md-search-result__item');
    if (items.length || tries++ > 100) {
      resolve([...items].slice(0, 5).map(i => i.querySelector('a').getAttribute('href')));
    } else { setTimeout(poll, 100); }
  };
  poll();
})
"""


@browser_only
@pytest.mark.parametrize("term", ["epsilon", "Flower", "surrogate", "SelectionProblem"])
def test_search_finds(term, served, browser):
    browser.open(served + "index.html")
    hits = browser.evaluate(_SEARCH_JS % term, timeout=30)
    assert hits, f"search found nothing for {term!r}"
    assert browser.errors() == []


@browser_only
def test_the_api_page_shows_selection_problem_with_its_signature(served, browser):
    browser.open(served + "reference/api/selection.html")
    sig = browser.evaluate(
        "(() => { const h = document.getElementById('selection.problem.SelectionProblem');"
        " if (!h) return null; const box = h.closest('.doc-object') || h.parentElement;"
        " return box.innerText; })()"
    )
    assert sig is not None, "no SelectionProblem section"
    assert re.search(r"SelectionProblem\(", sig), sig[:500]
    assert "from_stats" in sig and "surrogate" in sig


@browser_only
@pytest.mark.parametrize("term", ["glossary", "hypervolume"])
def test_search_works_with_the_site_opened_from_disk(term, site, browser):
    """Opened as files (file://, no server), the site still searches: the offline plugin
    inlines the index and our worker shim (docs/assets/javascripts/iframe-worker-shim.js)
    runs the search worker in an iframe; from disk the theme starts search when its dialog
    opens, so the test opens it as a click would."""
    browser.open(site / "concepts" / "routes.html")
    browser.evaluate(
        "(() => { const t = document.getElementById('__search'); t.checked = true;"
        " t.dispatchEvent(new Event('change', {bubbles: true})); return 1; })()"
    )
    hits = browser.evaluate(_SEARCH_JS % term, timeout=30)
    assert hits, f"search from disk found nothing for {term!r}"
    assert browser.errors() == []
