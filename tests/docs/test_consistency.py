"""The site says what the registries hold: counts and lists on the pages checked against them,
one nav title per page, no path of the machine that made a result, both family-wise tests
named on the results page (issue 50). Reads the pages' sources and the hooks' generated
pages; no build needed."""

from __future__ import annotations

import re
import sys

import pytest
from mkdocs.utils import yaml_load

from helpers import ROOT

DOCS = ROOT / "docs"
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


@pytest.fixture(scope="module")
def hooks():
    sys.path.insert(0, str(DOCS))
    try:
        import hooks as h
    finally:
        sys.path.remove(str(DOCS))
    return h


def _registries() -> dict[str, set[str]]:
    from selection.baselines import baselines
    from selection.information import information_models
    from selection.solvers.milp.registry import milp_backends
    from selection.solvers.registry import solvers
    from selection.surrogates import surrogates

    return {
        "formulations": set(solvers()),
        "baselines": set(baselines()),
        "information": set(information_models()),
        "surrogates": set(surrogates()),
        "backends": set(milp_backends()),
    }


def _pages() -> list:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_counts_of_backends_match_the_registry():
    n = len(_registries()["backends"])
    for page in _pages():
        for m in re.finditer(r"\b(\w+) (?:registered )?MILP\s+backends", page.read_text()):
            word = m[1].lower()
            if word in NUMBERS:
                assert NUMBERS[word] == n, f"{page.name}: '{m[0]}' but {n} are registered"


def _glossary_names(term: str) -> set[str]:
    text = (DOCS / "glossary.md").read_text()
    block = re.split(rf"^\*\*{re.escape(term)}\*\*$", text, maxsplit=1, flags=re.M)[1]
    block = block.split("\n\n", 1)[0]
    return {re.sub(r"[:@].*", "", t) for t in re.findall(r"`([a-z][\w:@-]*)`", block)}


@pytest.mark.parametrize(
    ("term", "registry", "besides"),
    [
        ("formulation", "formulations", set()),
        ("baseline (rule)", "baselines", set()),
        ("surrogate", "surrogates", set()),
        ("information model", "information", set()),
        ("route, backend, portfolio", "backends", {"enum", "auto", "bb", "search"}),
    ],
)
def test_the_glossary_lists_what_is_registered(term, registry, besides):
    got = _glossary_names(term) - besides
    assert got == _registries()[registry], (term, got ^ _registries()[registry])


def test_every_backend_is_a_row_of_the_routes_table():
    text = (DOCS / "concepts" / "routes.md").read_text()
    table = text.split("| `--backend` |", 1)[1].split("\n\n", 1)[0]
    rows = set(re.findall(r"^\| `([\w-]+)` \|", table, re.M))
    assert rows == _registries()["backends"] | {"auto", "enum"}


def test_every_surrogate_is_a_row_of_the_contract():
    text = (DOCS / "contract.md").read_text()
    table = text.split("| surrogate | U_d(S) |", 1)[1].split("\n\n", 1)[0]
    rows = set(re.findall(r"^\| `([\w-]+)` \|", table, re.M))
    assert rows == _registries()["surrogates"]


def test_every_information_model_is_on_its_page():
    text = (DOCS / "concepts" / "information.md").read_text()
    missing = [m for m in _registries()["information"] if f"`{m}" not in text]
    assert missing == []


def _nav_titles(nav) -> list[str]:
    out = []
    for item in nav:
        if isinstance(item, dict):
            for title, value in item.items():
                out.append(title)
                if isinstance(value, list):
                    out += _nav_titles(value)
    return out


def test_nav_titles_are_unique(hooks):
    config = yaml_load((ROOT / "mkdocs.yml").read_text())  # mkdocs' loader: !ENV
    titles = _nav_titles(config["nav"])
    titles += list(hooks.benchmark_titles().values())
    titles += [p.split("/")[-1] for p in hooks.study_pages()]
    dup = {t for t in titles if titles.count(t) > 1}
    assert dup == set()


def test_no_generated_page_shows_a_machine_path(hooks):
    pages = {uri: hooks.study_markdown(folder) for uri, folder in hooks.study_pages().items()}
    pages |= {uri: hooks.benchmark_markdown(p) for uri, p in hooks.benchmark_pages().items()}
    pages["results/map.md"] = hooks.map_markdown()
    for uri, text in pages.items():
        # the checkout's folders (a command's own scratch folder, e.g. /tmp/out, is its text)
        found = re.findall(r"(?<![\w.])/(?:work|home|root|Users)/\S+", text)
        assert found == [], f"{uri}: {found[:3]}"
    assert hooks.portable("/x/y/.venv/bin/fedsel study --out /x/y/results/s") == (
        ".venv/bin/fedsel study --out results/s"
    )


def test_the_results_pages_name_both_family_wise_tests_and_link_their_citations(hooks):
    landing = (DOCS / "results" / "index.md").read_text()
    assert "**per-entry**" in landing and "**study-wide**" in landing
    pages = sorted((DOCS / "results").glob("*.md"))
    assert len(pages) >= 7
    for page in pages:
        text = page.read_text()
        # the landing page links every page of its section
        assert page.name == "index.md" or f"]({page.name})" in landing, page.name
        linked = hooks.link_citations(text, f"results/{page.name}")
        for study in hooks.study_pages():
            name = study.split("/")[-1].removesuffix(".md")
            if f"`results/{name}/" in text or f"`results/{name}`" in text:
                assert f"](studies/{name}.md)" in linked, (page.name, name)
        for bench in re.findall(r"`results/benchmarks/([\w.-]+\.md)`", text):
            assert f"](benchmarks/{bench})" in linked, (page.name, bench)
    assert len(landing.split()) < 1500, "the landing page is a summary; details go to its pages"


_SOURCE_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)|<img [^>]*src=\"([^\"]+)\"")


def test_every_link_in_the_sources_resolves_in_the_repository():
    """Every relative link and image of the README and the docs' sources names a file of the
    repository, as the repository host resolves them (77 of 192 named pages that exist only
    after make docs); the build maps those under results/ to their pages (source_links)."""
    bad = []
    for page in _pages():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for m in _SOURCE_LINK.finditer(text):
            link = (m[1] or m[2]).split("#", 1)[0]
            if not link or re.match(r"[a-z][a-z0-9+.-]*:", link):
                continue
            if not (page.parent / link).resolve().exists():
                bad.append(f"{page.relative_to(ROOT)} -> {link}")
    assert bad == [], "links to no file:\n" + "\n".join(bad)


def test_the_committed_cli_reference_and_renderings_are_current(hooks):
    """docs/reference/cli.md is the app's (python docs/hooks.py rewrites it), and every
    fedsel:table and fedsel:output block a page commits is what the build renders now (the
    outputs' seconds aside: they differ run to run)."""
    assert (DOCS / "reference" / "cli.md").read_text(encoding="utf-8") == hooks.cli_markdown()
    seconds = hooks._SECONDS
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        if "<!-- fedsel:" not in text:
            continue
        assert text.count("<!-- fedsel:") == text.count("<!-- /fedsel:"), page
        assert seconds.sub("S", hooks.rendered(text)) == seconds.sub("S", text), page


def test_source_links_point_the_build_at_the_pages_it_makes(hooks):
    """A link to a committed result file becomes a link to the page the build makes of it."""
    md = (
        "[a](../../results/benchmarks/scale.md#top) ![s](../../results/screenshots/sweep.png) "
        "[m](../../results/map/grid.md) [v](../../results/study/verdict.md) [x](other.md)"
    )
    out = hooks.source_links(md, "tutorials/page.md")
    assert "(../results/benchmarks/scale.md#top)" in out
    assert "(../assets/results/screenshots/sweep.png)" in out
    assert "(../results/map.md)" in out and "(../results/studies/study.md)" in out
    assert "(other.md)" in out


def test_the_wheels_description_is_the_readme_without_unresolvable_links(hooks):
    """DESCRIPTION.md (the wheel's long description) is what python docs/hooks.py writes from
    the README: a package index shows no relative link, image or screenshot caption there."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    described = (ROOT / "DESCRIPTION.md").read_text(encoding="utf-8")
    assert described == hooks.wheel_description(readme)
    assert not re.search(r"\]\((?![a-z][a-z0-9+.-]*:|#)", described)
    assert "results/screenshots" not in described and "*Top:" not in described
    out = hooks.wheel_description(
        "# t\nSee [the contract](docs/contract.md#x), [w](https://a.b).\n"
    )
    assert "See the contract (`docs/contract.md` in the source), [w](https://a.b)." in out
