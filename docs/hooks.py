"""What the documentation build makes from the code and the committed results (mkdocs hooks).

Named in ``mkdocs.yml`` (``hooks:``); nothing here is copied by hand:

* ``reference/cli.md`` (committed, so the repository host shows it; a test keeps it current,
  ``python docs/hooks.py`` rewrites it): every command, argument and option of the ``fedsel``
  app with its help and default, read from the typer app itself;
* ``results/benchmarks/<name>.md``: each committed benchmark table (``results/benchmarks/*.md``),
  its headings moved one level down under a title, images pointed at the copies below;
* ``results/studies/<name>.md``: each committed study's ``verdict.md`` under the commands that
  made it (``sources.toml``: the run and every addition) and its settings;
* ``results/seed-statistics.md``: ``results/seed-statistics/summary.md``;
* ``results/map.md``: the committed grid study (``results/map/``): its verdict, its table and
  the map itself (``map.html`` and the cells' reports copied under ``assets/results/map/``, so
  a click on a cell opens its report);
* the images under ``results/screenshots/`` and ``results/benchmarks/`` at
  ``assets/results/...``;
* in any page, ``<!-- fedsel:table PATH -->`` renders a committed CSV as a table, so a page's
  table changes when its CSV does;
* in any page, ``<!-- fedsel:output fedsel ARGS -->`` shows what that command prints, run at
  build time in a scratch folder holding the shipped example round as ``stats.csv`` (so a
  page's expected output is the code's). The committed page holds the last rendering of
  both up to a closing marker (``python docs/hooks.py`` writes it), so the repository host
  shows them too;
* links from a page's source to committed files under ``results/`` (which resolve on the
  repository host) become links to the pages and assets built from them
  (:func:`source_links`).

A missing file a page names fails the build (``mkdocs build --strict`` in the tests).
"""

from __future__ import annotations

import html
import os
import re
import tomllib
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
IMAGE_DIRS = ("screenshots", "benchmarks")


# ------------------------------------------------------------------ what is generated
def benchmark_pages() -> dict[str, Path]:
    """Site path -> committed benchmark table, in name order."""
    return {
        f"results/benchmarks/{p.stem}.md": p for p in sorted((RESULTS / "benchmarks").glob("*.md"))
    }


def study_pages() -> dict[str, Path]:
    """Site path -> committed study folder (one with a verdict), in name order."""
    return {
        f"results/studies/{p.parent.name}.md": p.parent
        for p in sorted(RESULTS.glob("*/verdict.md"))
    }


def benchmark_titles() -> dict[str, str]:
    """Site path -> the benchmark's nav title: its heading, with the file's name where two
    benchmarks share a heading (the nav never shows one title twice)."""
    from collections import Counter

    pages = benchmark_pages()
    heads = {p: _title(src.read_text(encoding="utf-8"), src.stem) for p, src in pages.items()}
    count = Counter(heads.values())
    return {p: t if count[t] == 1 else f"{t} ({pages[p].stem})" for p, t in heads.items()}


def _title(text: str, fallback: str) -> str:
    m = re.search(r"^# (.+)$", text, re.M)
    return m[1].strip() if m else fallback


def _shift_headings(text: str) -> str:
    """Every markdown heading one level down (outside fenced code)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def _images(text: str) -> str:
    """``scale.png`` mentioned in a benchmark table: shown from the site's copy."""
    return re.sub(
        r"`([\w.-]+\.png)`",
        lambda m: (
            f"`{m[1]}`\n\n![{m[1]}](../../assets/results/benchmarks/{m[1]})\n"
            if (RESULTS / "benchmarks" / m[1]).exists()
            else m[0]
        ),
        text,
    )


def benchmark_markdown(path: Path) -> str:
    text = portable(path.read_text(encoding="utf-8"))
    title = _title(text, path.stem)
    body = re.sub(r"^# .+\n", "", text, count=1, flags=re.M)
    scripts = [
        p.stem
        for p in (ROOT / "benchmarks").glob("*.py")
        if path.stem == p.stem or path.stem.startswith(p.stem + "_")
    ]
    made = (
        f"Made by `benchmarks/{max(scripts, key=len)}.py` (the command and sizes of this run "
        "are in the table's own text), "
        if scripts
        else ""
    )
    return (
        f"# {title}\n\n"
        f'!!! info "From the committed file"\n'
        f"    {made}rendered from `results/benchmarks/{path.name}` at build time"
        f"{'; the raw rows are in `' + path.stem + '.csv`' if path.with_suffix('.csv').exists() else ''}.\n\n"
        f"{_images(_shift_headings(body))}\n"
    )


def study_markdown(folder: Path) -> str:
    sources = tomllib.loads((folder / "sources.toml").read_text(encoding="utf-8"))
    run = sources.get("run", {})
    settings = tomllib.loads((folder / "study.toml").read_text(encoding="utf-8"))
    lines = [f"# Study `{folder.name}`", ""]
    lines += [
        f"Rendered at build time from the committed `results/{folder.name}/` "
        "(`verdict.md`, `sources.toml`, `study.toml`); its full report is "
        f"`results/{folder.name}/report.html`.",
        "",
        "## How it was made",
        "",
        "```bash",
        portable(str(run.get("command", "(command not recorded)"))),
    ]
    for add in sources.get("additions", []):
        lines.append(portable(str(add.get("command", ""))))
    lines += ["```", ""]
    lines.append(
        f"fedsel {run.get('fedsel_version', '?')}, commit `{str(run.get('git_commit', '?'))[:7]}`, "
        f"torch {run.get('torch_version', '?')}, {run.get('threads', '?')} threads, "
        f"started {run.get('started', '?')}."
    )
    lines += ["", "## Settings", "", "| setting | value |", "|---|---|"]
    for key, value in _flatten(settings):
        cell = html.escape(str(value)).replace("|", "\\|")
        lines.append(f"| `{key}` | {cell} |")
    lines += ["", "## Verdict", "", portable((folder / "verdict.md").read_text(encoding="utf-8"))]
    return "\n".join(lines) + "\n"


def portable(command: str) -> str:
    """A recorded command (or page) without the paths of the machine that ran it: the
    checkout's folder dropped (``/work/x/.venv/bin/fedsel`` -> ``.venv/bin/fedsel``,
    ``/work/x/results/s`` -> ``results/s``)."""
    command = re.sub(
        r"(?<![\w.])/[^\s`'\"]*?/(\.venv/bin/|results/|runs/|benchmarks/)", r"\1", command
    )
    return command.replace(str(ROOT) + "/", "")


def _flatten(table: dict, prefix: str = ""):
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            if isinstance(value, list):
                value = ", ".join(str(v) for v in value)
            yield f"{prefix}{key}", value


def seed_statistics_markdown() -> str:
    text = (RESULTS / "seed-statistics" / "summary.md").read_text(encoding="utf-8")
    return (
        '!!! info "From the committed file"\n'
        "    Rendered from `results/seed-statistics/summary.md` at build time.\n\n" + text
    )


# ------------------------------------------------------------------ the CLI reference
def cli_markdown() -> str:
    import click
    import typer

    from fl_oracle.cli import _COMMAND_MODULES, build_app

    root = typer.main.get_command(build_app())
    names = [name for commands in _COMMAND_MODULES.values() for name in commands]
    declared = {name: i for i, name in enumerate(names)}
    lines = [
        "# Command line",
        "",
        "Generated at build time from the `fedsel` app itself (every command, argument and "
        "option with its help and default), so it cannot drift from `fedsel COMMAND --help`. "
        "Conventions and exit codes: [Conventions](conventions.md).",
        "",
    ]

    def walk(cmd: click.Command, path: list[str], depth: int) -> None:
        ctx = click.Context(cmd, info_name=" ".join(path))
        name = " ".join(path)
        if depth:
            lines.extend([f"{'#' * min(depth + 1, 4)} `{name}`", ""])
        text = (cmd.help or "").strip()
        if text:
            lines.extend([_help_text(text), ""])
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        lines.extend(["```text", f"{name} {usage}".rstrip(), "```", ""])
        rows = []
        for param in cmd.get_params(ctx):
            if getattr(param, "hidden", False) or "--help" in getattr(param, "opts", ()):
                continue
            rows.append(_param_row(param, ctx))
        if rows:
            lines.extend(["| argument / option | default | description |", "|---|---|---|"])
            lines.extend(rows)
            lines.append("")
        if isinstance(cmd, click.Group):
            # the commands in the app's declared order, not the order a process happened to
            # register their modules in (a test that ran `fedsel train` first moved it up)
            for sub in sorted(cmd.list_commands(ctx), key=lambda c: declared.get(c, len(declared))):
                child = cmd.get_command(ctx, sub)
                if child is not None and not child.hidden:
                    walk(child, [*path, sub], depth + 1)

    walk(root, ["fedsel"], 0)
    return "\n".join(lines) + "\n"


def _help_text(text: str) -> str:
    # typer help keeps click's \b paragraphs; show them as plain paragraphs
    return html.escape(text.replace("\b\n", "").replace("\b", ""), quote=False)


def _cell(text: str) -> str:
    return html.escape(" ".join(str(text).split()), quote=False).replace("|", "\\|")


def _param_row(param, ctx) -> str:
    import click

    if isinstance(param, click.Argument):
        names = f"`{param.human_readable_name}`"
    else:
        names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    default = ""
    if isinstance(param, click.Option):
        shown = param.show_default
        value = param.default
        if isinstance(shown, str):
            default = shown
        elif param.is_flag and not param.secondary_opts:
            default = "off" if not value else "on"
        elif value is not None and not callable(value) and value != ():
            default = (
                f"`{value}`"
                if not isinstance(value, (list, tuple))
                else ("`" + ",".join(map(str, value)) + "`")
            )
    kind = getattr(param.type, "name", "")
    choices = getattr(param.type, "choices", None)
    text = getattr(param, "help", "") or ""
    if choices:
        text = f"{text} One of: {', '.join(map(str, choices))}."
    elif kind and kind not in ("text", "boolean") and not getattr(param, "is_flag", False):
        text = f"{text} ({kind})"
    if param.required:  # as --help marks it
        default = "**required**"
    return f"| {names} | {_cell(default)} | {_cell(text)} |"


MAP = RESULTS / "map"


def map_files() -> list[Path]:
    """The committed map's pages the site carries: ``map.html`` and every cell's report."""
    if not (MAP / "map.html").is_file():
        return []
    return [MAP / "map.html", *sorted(MAP.glob("cells/*/report.html")),
            *sorted(MAP.glob("cells/*/confirm/report.html"))]  # fmt: skip


def map_markdown() -> str:
    lines = ["# The map: where exact selection pays, across federations", ""]
    if not (MAP / "grid.md").is_file():
        return "\n".join([*lines, "No map is committed yet (`results/map/grid.md`).", ""])
    script = ROOT / "benchmarks" / "studies" / "run_map.sh"
    cmd = [ln for ln in script.read_text(encoding="utf-8").splitlines()
           if ln.startswith(".venv/bin/fedsel")] if script.is_file() else []  # fmt: skip
    lines += [
        "Rendered at build time from the committed `results/map/` (`grid.md`, `grid.csv`, "
        "`study.toml`; each cell's study in `cells/<slug>/`, its held-out seeds in "
        "`cells/<slug>/confirm/`). Made by `benchmarks/studies/run_map.sh` from `benchmarks/studies/map.toml`:",
        "",
        "```bash",
        *(cmd or ["(benchmarks/studies/run_map.sh not committed)"]),
        "```",
        "",
        "## Verdict",
        "",
        (MAP / "grid.md").read_text(encoding="utf-8"),
        "",
        "## The map",
        "",
        "Each cell: the leading formulation within 1.25× `proportional`'s client compute per "
        "round, its paired difference to the cell's best baseline on the screen's seeds "
        "(bootstrap 95 % interval) and whether held-out seeds confirm it beats every counted "
        "baseline. Click a cell for its study report "
        "([open the map alone](../assets/results/map/map.html)).",
        "",
        '<iframe src="../assets/results/map/map.html" title="the map" '
        'style="width:100%;height:1500px;border:1px solid #ddd"></iframe>',
        "",
        "## The table",
        "",
        "<!-- fedsel:table results/map/grid.csv -->",
        "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------ CSV tables in pages
# the marker, then (in the committed page, so the repository host shows it) its last
# rendering up to the closing marker: the build replaces both with a fresh rendering
_TABLE = re.compile(
    r"<!-- fedsel:table (\S+)(?: columns=(\S+))? -->(?:\n.*?\n<!-- /fedsel:table -->)?", re.S
)


def _csv_table(match: re.Match) -> str:
    import pandas as pd

    path = ROOT / match[1]
    if not path.exists():
        raise PluginError(f"fedsel:table names {match[1]}, which is not committed")
    df = pd.read_csv(path)
    if match[2]:
        cols = match[2].split(",")
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise PluginError(f"fedsel:table {match[1]} has no column {missing}")
        df = df[cols]
    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "|".join("---:" if df[c].dtype.kind in "if" else "---" for c in df.columns) + "|"
    rows = []
    for rec in df.itertuples(index=False):
        cells = []
        for v in rec:
            if isinstance(v, float):
                cells.append("" if v != v else f"{v:.4g}" if abs(v) < 1e4 else f"{v:,.0f}")
            else:
                cells.append(_cell(v))
        rows.append("| " + " | ".join(cells) + " |")
    note = f"\n*(rendered at build time from `{match[1]}`)*\n"
    return "\n".join([head, rule, *rows]) + "\n" + note


# ------------------------------------------------------------------ command output in pages
_OUTPUT = re.compile(
    r"<!-- fedsel:output (fedsel [^>]*?) -->(?:\n.*?\n<!-- /fedsel:output -->)?", re.S
)


def command_output(command: str) -> str:
    """What ``command`` (``fedsel ...``) prints on stdout and stderr, run in a scratch folder
    that holds the example round as ``stats.csv``; a failing command fails the build."""
    import contextlib
    import io
    import shlex
    import tempfile

    from fl_oracle.cli import main
    from selection.example import example_stats_bytes

    args = shlex.split(command)[1:]
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        Path("stats.csv").write_bytes(example_stats_bytes())
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    if code:
        raise PluginError(f"fedsel:output {command!r} exited {code}: {err.getvalue().strip()}")
    return out.getvalue() + err.getvalue()


def _output_block(match: re.Match) -> str:
    text = command_output(match[1]).rstrip("\n")
    return f"```console\n$ {match[1]}\n{text}\n```"


# ------------------------------------------------------------------ mkdocs events
def on_config(config, **_):
    """Fill the Results section's Studies and Benchmarks with the committed files; in a
    versioned build (``docs/versions.py``: ``mike`` sets ``MIKE_DOCS_VERSION``) turn the
    theme's version selector on."""
    if os.environ.get("MIKE_DOCS_VERSION"):
        config["extra"]["version"] = {"provider": "mike", "default": "latest"}
    for item in config["nav"]:
        if isinstance(item, dict) and "Results" in item:
            for sub in item["Results"]:
                if isinstance(sub, dict) and "Studies" in sub:
                    sub["Studies"] = [{Path(p).stem: p} for p in study_pages()] + [
                        {"problem-statement statistics": "results/seed-statistics.md"}
                    ]
                if isinstance(sub, dict) and "Benchmarks" in sub:
                    sub["Benchmarks"] = [{t: p} for p, t in benchmark_titles().items()]
    return config


def on_files(files, config, **_):
    def add(uri: str, content: str) -> None:
        files.append(File.generated(config, uri, content=content))

    for uri, path in benchmark_pages().items():
        add(uri, benchmark_markdown(path))
    for uri, folder in study_pages().items():
        add(uri, study_markdown(folder))
    add("results/seed-statistics.md", seed_statistics_markdown())
    add("results/map.md", map_markdown())
    for page in map_files():
        rel = page.relative_to(MAP).as_posix()
        files.append(File.generated(config, f"assets/results/map/{rel}", abs_src_path=str(page)))
    # the one plotly.js the committed reports share (selection/plotly_js.py), where the map's
    # reports find it: assets/results/map/../fedsel-assets/
    from selection.plotly_js import ASSETS, ensure_bundle

    js = ensure_bundle(RESULTS / ASSETS)  # a build product: written here if make did not
    files.append(File.generated(config, f"assets/results/{ASSETS}/{js.name}", abs_src_path=str(js)))
    for sub in IMAGE_DIRS:
        for png in sorted((RESULTS / sub).glob("*.png")):
            files.append(
                File.generated(config, f"assets/results/{sub}/{png.name}", abs_src_path=str(png))
            )
    return files


def _outside_code(markdown: str, pattern: re.Pattern, sub) -> str:
    """``pattern.sub(sub, line)`` on every line of ``markdown`` outside fenced code blocks."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        out.append(line if fenced else pattern.sub(sub, line))
    return "\n".join(out)


# ------------------------------------------------------------------ citations as links
_CITED = re.compile(r"(?<!\[)`(results/([\w.-]+)(/[^`\s]*)?)`(?!\]|\()")


def link_citations(markdown: str, page_uri: str) -> str:
    """Every inline mention of a committed study or benchmark (`` `results/study-k10/...` ``,
    `` `results/benchmarks/scale.md` ``) outside code blocks becomes a link to its page."""
    import posixpath

    studies = {Path(p).stem: p for p in study_pages()}
    benches = {src.name: p for p, src in benchmark_pages().items()}
    here = posixpath.dirname(page_uri)

    def target(m: re.Match) -> str | None:
        top, rest = m[2], (m[3] or "").lstrip("/")
        if top == "benchmarks":
            name = rest.split("/")[0]
            stem = name.split(".")[0]
            return benches.get(name) or benches.get(f"{stem}.md") if stem else None
        if top in studies:
            return studies[top]
        if top == "map" and (MAP / "grid.md").is_file():
            return "results/map.md"
        return None

    def sub(m: re.Match) -> str:
        t = target(m)
        if t is None or t == page_uri:
            return m[0]
        return f"[{m[0]}]({posixpath.relpath(t, here or '.')})"

    return _outside_code(markdown, _CITED, sub)


_ROLE = re.compile(
    r":(?:class|meth|func|mod|data|attr|exc|obj):(<code>)~?([\w.]*?)([\w]+)(</code>)"
)
_ROLE_RAW = re.compile(r":(?:class|meth|func|mod|data|attr|exc|obj):`~?([\w.]*?)(\w+)`")


def plain_roles(html_text: str) -> str:
    """Sphinx roles left in rendered docstrings (``:class:`~a.b.C```) shown as the code they
    name: ``C`` where the role shortens it (``~``), the full path otherwise."""

    def code(m: re.Match) -> str:
        short = "~" in m[0]
        return f"{m[1]}{m[3] if short else m[2] + m[3]}{m[4]}"

    html_text = _ROLE.sub(code, html_text)
    return _ROLE_RAW.sub(
        lambda m: f"<code>{m[2] if '~' in m[0] else m[1] + m[2]}</code>", html_text
    )


def on_page_content(html_text, page, **_):
    return plain_roles(html_text)


def rendered(markdown: str) -> str:
    """``markdown`` with every ``fedsel:table`` and ``fedsel:output`` marker followed by a
    fresh rendering and its closing marker: what a committed page holds, so the repository
    host shows the tables and outputs the built site shows (``python docs/hooks.py`` writes
    them; a test checks they are current)."""

    def table(m: re.Match) -> str:
        head = m[0].split("\n", 1)[0]
        return f"{head}\n{_csv_table(m)}\n<!-- /fedsel:table -->"

    def output(m: re.Match) -> str:
        head = m[0].split("\n", 1)[0]
        return f"{head}\n{_output_block(m)}\n<!-- /fedsel:output -->"

    return _OUTPUT.sub(output, _TABLE.sub(table, markdown))


def source_links(markdown: str, page_uri: str) -> str:
    """Links that point, from the page's source in ``docs/``, at committed files under
    ``results/`` (so they resolve on the repository host) turned into links to the pages and
    assets the build makes of those files: a benchmark's table, a study's verdict, the map,
    the problem-statement statistics, a screenshot or a benchmark image."""
    import posixpath

    studies = {folder.name: uri for uri, folder in study_pages().items()}
    here = posixpath.dirname(page_uri)

    def built(rel: str) -> str | None:
        parts = rel.split("/")
        if len(parts) < 2 or parts[0] != "results":
            return None
        top, rest = parts[1], "/".join(parts[2:])
        if top in IMAGE_DIRS and rest.endswith(".png"):
            return f"assets/results/{top}/{rest}"
        if top == "benchmarks" and rest.endswith(".md"):
            return f"results/benchmarks/{rest}"
        if top in studies and rest == "verdict.md":
            return studies[top]
        if top == "map" and rest == "grid.md":
            return "results/map.md"
        if top == "seed-statistics" and rest == "summary.md":
            return "results/seed-statistics.md"
        return None

    def sub(m: re.Match) -> str:
        target, anchor = (m[2].split("#", 1) + [""])[:2]
        repo = posixpath.normpath(posixpath.join("docs", here, target))
        uri = built(repo)
        if uri is None:
            return m[0]
        link = posixpath.relpath(uri, here or ".") + (f"#{anchor}" if anchor else "")
        return f"{m[1]}({link})"

    return _outside_code(markdown, _LINK, sub)


#: the seconds a command's output reports, which differ run to run
_SECONDS = re.compile(r"\d+\.\d+ ?s\b|\"seconds\": [0-9.e-]+")
_LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s]+)\)")


def on_page_markdown(markdown, page, **_):
    markdown = _OUTPUT.sub(_output_block, _TABLE.sub(_csv_table, markdown))
    markdown = source_links(markdown, page.file.src_uri)
    return link_citations(markdown, page.file.src_uri)


_SCREENSHOTS = re.compile(r"<!-- screenshots.*?<!-- /screenshots -->\n*", re.S)
_IMAGE_LINE = re.compile(r"^!\[[^\]]*\]\([^)\s]+\)\s*$\n?", re.M)
_RELATIVE = re.compile(r"(?<!!)\[([^\]]+)\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s#]+)(#[^)\s]*)?\)")


def wheel_description(readme: str) -> str:
    """The wheel's long description (DESCRIPTION.md, ``readme`` in pyproject.toml): the README
    with nothing a package index cannot resolve — a relative link becomes its text and the
    path it names in the source distribution, the screenshots and their caption are dropped
    (the images are not in the package), and a note says where the docs are (tests/docs/test_consistency.py)."""
    text = _IMAGE_LINE.sub("", _SCREENSHOTS.sub("", readme))
    text = _RELATIVE.sub(lambda m: f"{m[1]} (`{m[2]}` in the source)", text)
    note = (
        "\n<!-- the wheel's description: python docs/hooks.py writes it from README.md -->\n"
        "*The documentation is Markdown under `docs/` in the source distribution "
        "(`pip download --no-binary :all: --no-deps fedsel`); `make docs` builds the site.*\n"
    )
    title, _, rest = text.partition("\n")
    return f"{title}\n{note}{rest}"


if __name__ == "__main__":  # the CLI reference and every page's renderings (python docs/hooks.py)
    (ROOT / "docs" / "reference" / "cli.md").write_text(cli_markdown(), encoding="utf-8")
    (ROOT / "DESCRIPTION.md").write_text(
        wheel_description((ROOT / "README.md").read_text(encoding="utf-8")), encoding="utf-8"
    )
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        fresh = rendered(text)
        if _SECONDS.sub("S", fresh) != _SECONDS.sub("S", text):  # not for the seconds alone
            page.write_text(fresh, encoding="utf-8")
            print(f"rendered {page.relative_to(ROOT)}")
