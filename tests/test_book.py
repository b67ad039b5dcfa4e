"""The built book as a reader meets it: every page in the table of contents, every link resolving,
figures described, exercises downloadable, and no solution or hidden test anywhere on the site."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from bs4 import BeautifulSoup
from helpers import BOOK_DIR, ROOT
from helpers.book import MARKERS, toc_files

if TYPE_CHECKING:  # nbformat (with jsonschema's grammars) imported where used: every test worker collects this module
    import nbformat

PAGE_SUFFIXES = (".md", ".ipynb")
# Folders whose pages the book shows; every page under them must be in _toc.yml.
PAGE_FOLDERS = ("book", "exercises")
LINK_ATTRIBUTES = {
    "a": "href",
    "link": "href",
    "img": "src",
    "script": "src",
    "source": "src",
    "iframe": "src",
}
EXTERNAL = re.compile(r"^([a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)  # http:, https:, mailto:, data:, javascript:, //host
SHORTEST_SOLUTION_LINE = 25  # shorter solution lines (`return x`) are too common to mean a leak
# A Markdown table row shown as text: a line that starts and ends with "|" with a cell boundary between,
# or a delimiter row ("|---|", "| :-- |", or "|—|" once Sphinx's smart quotes have made "---" a dash).
MARKDOWN_TABLE_ROW = re.compile(r"^[ \t]*\|(?:[^|\n]*\|){2,}[ \t]*$|\|[ \t]*:?(?:-{3,}|[—–]+):?[ \t]*\|", re.MULTILINE)
# What a tqdm bar leaves as text: "100%|████| 200/200 [00:41<00:00, 4.80it/s]".
PROGRESS_BAR = re.compile(r"\d%\||█|\[\d+:\d\d(?:<[\d:?]+)?, *[\d.?]+ *[a-zA-Z]+/[a-zA-Z]+\]")
# The cell tags that keep a cell's outputs off its page.
OUTPUT_REMOVING_TAGS = {"remove-output", "remove-cell"}
# The landing page's links to the offline archives (book/_ext/w2b_sphinx.py's w2b-download role).
OFFLINE_ARCHIVE = re.compile(r"(^|/)downloads/word2bert-(book|student)-[^/]+\.zip$")
# Deprecation warnings in the build's log (tests/conftest.py builds with PYTHONWARNINGS=default), and the
# ones known and accepted: jupyter-book 1's own command line uses Click's BaseCommand (deprecated in Click
# 8.2, removed in 9.0; constraints.txt pins Click 8). See README, "Design notes".
DEPRECATION = re.compile(r"\b\w*(DeprecationWarning|FutureWarning|RemovedInSphinx\d+Warning)\b")
KNOWN_DEPRECATIONS = [
    re.compile(r"jupyter_book/cli/pluggable\.py:\d+: DeprecationWarning: 'BaseCommand' is deprecated"),
]
# The book's stylesheet (_config.yml: html_css_files) and the rule in it that makes code wrap.
BOOK_CSS = "w2b.css"
WRAPPING_PRE = re.compile(r"\.bd-article\s+pre\s*\{[^}]*white-space:\s*pre-wrap")


def source_pages(book_dir: Path = BOOK_DIR) -> set[str]:
    pages = set()
    for folder in PAGE_FOLDERS:
        for path in (book_dir / folder).rglob("*"):
            if path.suffix in PAGE_SUFFIXES and not any(p.startswith((".", "_")) for p in path.parts):
                pages.add(path.relative_to(book_dir).with_suffix("").as_posix())
    return pages


def site_files(html: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in html.rglob("*") if p.is_file() and p.suffix in suffixes)


def content_pages(html: Path) -> list[Path]:
    """The site's HTML pages (not the theme's vendored files under _static)."""
    return [p for p in site_files(html, (".html",)) if "_static" not in p.relative_to(html).parts]


@cache
def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@cache
def anchors(path: Path) -> frozenset[str]:
    page = soup(path)
    return frozenset(t["id"] for t in page.find_all(id=True)) | frozenset(
        t["name"] for t in page.find_all("a", attrs={"name": True})
    )


def local_targets(page: Path):
    """(tag, url, resolved file, fragment) for every link on `page` that stays on the site."""
    for tag, attr in LINK_ATTRIBUTES.items():
        for element in soup(page).find_all(tag, attrs={attr: True}):
            url = element[attr].strip()
            if not url or EXTERNAL.match(url):
                continue
            parts = urlsplit(url)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            yield tag, url, target, unquote(parts.fragment)


def visible_text(path: Path) -> str:
    """What a file on the site shows or hands out: an HTML page's text (without the spans of code
    highlighting), a notebook's cell sources and outputs, any other file as it is."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        return soup(path).get_text()
    if path.suffix == ".ipynb":
        cells = json.loads(raw).get("cells", [])
        return "\n".join(
            "".join(c.get("source", "")) + "".join("".join(o.get("text", "")) for o in c.get("outputs", []))
            for c in cells
        )
    return raw


def solution_only_lines(root: Path = ROOT) -> set[str]:
    """Lines of solutions/ inside solution or hidden-test blocks that occur in no file the book may
    show (book/, exercises/, the library): one of them on the site came from solutions/."""
    blocks = set()
    for nb in (root / "solutions").rglob("*.ipynb"):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            inside = False
            for line in "".join(cell["source"]).splitlines():
                if any(m in line for m in MARKERS):
                    inside = any(line.strip().endswith(m) for m in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS"))
                elif inside and len(line.strip()) >= SHORTEST_SOLUTION_LINE:
                    blocks.add(line.strip())
    public = []
    for folder in ("book", "exercises", "lib"):
        public += [p for p in (root / folder).rglob("*") if p.is_file() and p.suffix in (".md", ".ipynb", ".py")]
    shown = "\n".join(visible_text(p) for p in public)
    return {line for line in blocks if line not in shown}


def test_no_page_is_orphaned_from_the_toc():
    listed = set(toc_files())
    orphans = sorted(source_pages() - listed)
    assert not orphans, f"pages in book/ or exercises/ that _toc.yml does not list (never built): {orphans}"
    missing = sorted(f for f in listed if not any((BOOK_DIR / f"{f}{s}").exists() for s in PAGE_SUFFIXES))
    assert not missing, f"_toc.yml lists pages that do not exist: {missing}"


@pytest.mark.book
def test_every_toc_page_is_built(built_book):
    unbuilt = [f for f in toc_files() if not (built_book / f"{f}.html").exists()]
    assert not unbuilt, f"pages in _toc.yml with no HTML page in {built_book}: {unbuilt}"
    assert (built_book / "index.html").exists()


@pytest.mark.book
def test_every_internal_link_and_anchor_resolves(built_book):
    broken = []
    pages = content_pages(built_book)
    for page in pages:
        for tag, url, target, fragment in local_targets(page):
            where = f"{page.relative_to(built_book)}: <{tag}> {url}"
            if OFFLINE_ARCHIVE.search(url):
                continue  # written by `make dist`, after the build: tests/test_dist.py checks them
            if not target.exists():
                broken.append(f"{where} (no file {target})")
            elif fragment and target.suffix == ".html" and fragment not in anchors(target):
                broken.append(f"{where} (no id '{fragment}' in {target.name})")
    assert len(pages) > 1, f"no pages found in {built_book}"
    assert not broken, "broken internal links:\n" + "\n".join(broken[:50])


@pytest.mark.book
def test_the_build_prints_no_deprecation_warning(built_book):
    log = (built_book.parent / "book-build.log").read_text(encoding="utf-8")
    found = [
        line.strip()
        for line in log.splitlines()
        if DEPRECATION.search(line) and not any(k.search(line) for k in KNOWN_DEPRECATIONS)
    ]
    assert not found, "deprecation warnings in the book's build:\n" + "\n".join(sorted(set(found)))


@pytest.mark.book
def test_no_solution_or_hidden_test_reaches_the_site(built_book):
    leaked_lines = solution_only_lines()
    leaks = []
    for path in site_files(built_book, (".html", ".ipynb", ".md", ".txt", ".js", ".json", ".py")):
        rel = path.relative_to(built_book)
        if rel.parts[0] == "_static" and path.suffix in (".js", ".json"):
            continue  # the theme's vendored scripts
        text = visible_text(path)
        leaks += [f"{rel}: '{m}'" for m in MARKERS if m in text]
        leaks += [f"{rel}: solution line {line!r}" for line in leaked_lines if line in text]
    assert not leaks, "solution text on the built site:\n" + "\n".join(leaks[:30])


def exercise_pages() -> list[str]:
    return sorted(f for f in toc_files() if f.startswith("exercises/"))


@pytest.mark.book
def test_exercises_are_rendered_and_downloadable(built_book):
    exercises = exercise_pages()
    assert exercises, "_toc.yml lists no page under exercises/"
    for name in exercises:
        page = built_book / f"{name}.html"
        assert page.exists(), f"exercise {name} was not rendered"
        downloads = [t for tag, url, t, _ in local_targets(page) if tag == "a" and t.suffix == ".ipynb"]
        assert downloads and all(t.exists() for t in downloads), f"{name}: no working .ipynb download link"
        notebook = json.loads(downloads[0].read_text(encoding="utf-8"))
        source = json.loads((BOOK_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))
        assert [c["source"] for c in notebook["cells"]] == [c["source"] for c in source["cells"]], (
            f"{name}: the downloadable notebook differs from the release in exercises/"
        )
        assert "Traceback" not in soup(page).get_text(), f"{name}: the page was executed (its stubs raise)"


@pytest.mark.book
def test_progress_bars_are_text_not_widgets(built_book):
    """A notebook that showed an ipywidget (tqdm.auto or tqdm.notebook with ipywidgets installed)
    embeds the widget's state, and the page shows only the widget's first frame as text ("0%")."""
    widget_pages = [
        str(page.relative_to(built_book))
        for page in content_pages(built_book)
        if soup(page).find("script", type="application/vnd.jupyter.widget-state+json")
    ]
    assert not widget_pages, (
        f"pages with ipywidgets output: {widget_pages}; use `from tqdm import tqdm` (a text progress bar)"
    )


@pytest.mark.book
def test_figures_have_alt_text(built_book):
    missing = []
    for page in content_pages(built_book):
        for img in soup(page).find_all("img"):
            alt, src = (img.get("alt") or "").strip(), img.get("src", "")
            # myst-nb falls back to the image's path when a notebook figure was given no alt text
            if not alt or alt == src or re.search(r"\.(png|svg|jpe?g|gif)$", alt, re.IGNORECASE):
                missing.append(f"{page.relative_to(built_book)}: {src} (alt={alt!r})")
    assert not missing, "figures without alt text (set it in the cell's metadata or the figure):\n" + "\n".join(
        missing[:30]
    )


@cache
def page_text(page: Path) -> str:
    """The text of the article of a page as a reader sees it: without code cells' source, code blocks or scripts,
    but with everything a notebook printed."""
    body = BeautifulSoup(str(soup(page).find("article") or soup(page)), "html.parser")
    for element in body.select("script, style, .cell_input"):
        element.decompose()
    for element in body.select("pre, div.highlight"):
        if element.find_parent(class_="cell_output") is None and element.parent is not None:
            element.decompose()
    return body.get_text()


def executed_notebook(built_book: Path, page: Path) -> nbformat.NotebookNode | None:
    """The notebook behind a page as executed for the site, or None for a page not made from a notebook.

    myst-nb writes it to `_build/jupyter_execute`, but one taken from the jupyter-cache is written there
    without its outputs; its outputs are then the cache's (`execute.cache` in _config.yml)."""
    import nbformat
    from jupyter_cache import get_cache

    path = built_book.parent / "jupyter_execute" / page.relative_to(built_book).with_suffix(".ipynb")
    if not path.exists():
        return None
    notebook = nbformat.read(path, as_version=4)
    config = yaml.safe_load((BOOK_DIR / "_config.yml").read_text(encoding="utf-8"))
    cache = BOOK_DIR / config["execute"]["cache"]
    if cache.is_dir() and not any(cell.get("outputs") for cell in notebook.cells):
        try:
            notebook = get_cache(str(cache)).merge_match_into_notebook(notebook)[1]
        except KeyError:
            pass  # never executed: the exercises
    return notebook


def printed_tables(notebook: nbformat.NotebookNode) -> int:
    """How many tables a notebook's shown outputs hold: Markdown tables (IPython's `Markdown`) and HTML ones
    (pandas)."""
    count = 0
    for cell in notebook.cells:
        if OUTPUT_REMOVING_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            markdown, html = (
                "".join(data.get("text/markdown", "")),
                "".join(data.get("text/html", "")),
            )
            count += bool(re.search(r"\|[ \t]*:?-{3,}:?[ \t]*\|", markdown)) or html.count("<table")
    return count


@pytest.mark.book
def test_every_printed_table_is_an_html_table(built_book):
    """A results table a notebook prints (`Markdown("| model | ... |")`) reaches its page as a <table>."""
    executed, printed, missing = 0, 0, []
    for page in content_pages(built_book):
        notebook = executed_notebook(built_book, page)
        if notebook is None:
            continue
        executed += 1
        expected = printed_tables(notebook)
        printed += expected
        rendered = len(soup(page).select("div.cell_output table"))
        if rendered < expected:
            missing.append(f"{page.relative_to(built_book)}: {expected} printed, {rendered} <table> in outputs")
    assert executed, f"no executed notebooks in {built_book.parent / 'jupyter_execute'}"
    assert printed, "no notebook printed a table: the chapters' results tables (or their outputs) are missing"
    assert not missing, "printed tables that are not HTML tables:\n" + "\n".join(missing)


@pytest.mark.book
def test_no_page_shows_a_raw_markdown_table_row(built_book):
    raw = []
    for page in content_pages(built_book):
        for match in MARKDOWN_TABLE_ROW.finditer(page_text(page)):
            raw.append(f"{page.relative_to(built_book)}: {match.group().strip()[:100]!r}")
    assert not raw, "Markdown table rows shown as text:\n" + "\n".join(raw[:30])


@pytest.mark.book
def test_no_page_shows_a_progress_bar(built_book):
    """tqdm bars stay in terminals and notebooks; the book's build turns them off (TQDM_DISABLE=1)."""
    bars = []
    for page in content_pages(built_book):
        text = page_text(page)
        bars += [
            f"{page.relative_to(built_book)}: {line.strip()[:120]!r}"
            for line in text.splitlines()
            if PROGRESS_BAR.search(line)
        ]
    assert not bars, "progress bars on pages:\n" + "\n".join(bars[:30])


@pytest.mark.book
def test_code_wraps_on_every_page_with_code(built_book):
    """Long code lines wrap instead of scrolling sideways: the book's stylesheet makes `pre` wrap inside the
    article, and every page with code loads it and has its code inside the article."""
    css = built_book / "_static" / BOOK_CSS
    assert css.exists(), f"{css} is missing: _config.yml's html_static_path/html_css_files"
    assert WRAPPING_PRE.search(css.read_text(encoding="utf-8")), f"{css}: no `.bd-article pre` rule with pre-wrap"
    unstyled, outside, with_code = [], [], 0
    for page in content_pages(built_book):
        blocks = soup(page).find_all("pre")
        if not blocks:
            continue
        with_code += 1
        stylesheets = {
            Path(urlsplit(link["href"]).path).name for link in soup(page).find_all("link", rel="stylesheet", href=True)
        }
        if BOOK_CSS not in stylesheets:
            unstyled.append(str(page.relative_to(built_book)))
        if any(block.find_parent("article", class_="bd-article") is None for block in blocks):
            outside.append(str(page.relative_to(built_book)))
    assert with_code > 1, "no page with code found"
    assert not unstyled, f"pages with code that do not load {BOOK_CSS}: {unstyled}"
    assert not outside, f"pages with code outside article.bd-article (the rule misses it): {outside}"


# The text column is about 700 px wide and figures are shown at their natural size up to it: one drawn with
# word2bert.reporting.BOOK_STYLE (5 inches at 100 dpi) is never shrunk. The build draws figures at twice their
# resolution ("retina", book/_ext/w2b_sphinx.py) and gives the size to show them at in the output's metadata; that
# size is the one measured. A figure a little wider (matplotlib's tight bounding box adds a few pixels) shrinks by at
# most 5%.
WIDEST_FIGURE_PX = 740
SMALLEST_FONT_PT = 9
FONT_SIZE = re.compile(r"fontsize\s*=\s*(\d+(?:\.\d+)?)")


def book_notebooks() -> list[Path]:
    """The book's own notebook pages (not the exercises)."""
    pages = [BOOK_DIR / f"{f}.ipynb" for f in toc_files() if f.startswith("book/")]
    return [p for p in pages if p.exists()]


def png_width(data: str) -> int:
    import base64

    return int.from_bytes(base64.b64decode(data[:64])[16:20], "big")


def shown_width(output) -> int:
    """The width a notebook's PNG output is shown at: its metadata's, where a retina figure gives one, or its own."""
    width = output.get("metadata", {}).get("image/png", {}).get("width")
    return int(width) if width else png_width(output["data"]["image/png"])


def test_every_plotting_page_uses_the_book_style_and_no_small_font():
    import nbformat

    unstyled, small = [], []
    for path in book_notebooks():
        code = "\n".join("".join(c["source"]) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        if "plt." in code and "plt.style.use(BOOK_STYLE)" not in code:
            unstyled.append(path.name)
        small += [f"{path.name}: fontsize={size}" for size in FONT_SIZE.findall(code) if float(size) < SMALLEST_FONT_PT]
    assert not unstyled, f"pages that plot without word2bert.reporting.BOOK_STYLE: {unstyled}"
    assert not small, f"labels smaller than {SMALLEST_FONT_PT} points: {small}"


# Tags that fold or remove a cell's code: a reader sees model code, not the plumbing that checks a page's claims.
CODE_HIDING_TAGS = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
ASSERT_STATEMENT = re.compile(r"^\s*assert\b", re.MULTILINE)
# The book's reference pages (set-up, symbols, terms, sources, licences, test sets, maintainers' notes, the API, the
# exercises' guides): every other page of the book teaches an idea, and shows it in a figure.
REFERENCE_PAGES = re.compile(
    r"^book/(setup|notation|glossary|references|licenses|test-sets|lab-notes|exercises/.*|api/.*)$"
)
FIGURE_MARKUP = re.compile(r"\{(figure|image|glue:figure)\}|!\[")
DRAWING_CODE = re.compile(r"\bplt\.|\bplot_\w+\(")


def test_no_visible_cell_asserts():
    """A page checks its claims in cells whose code is hidden: an assert is plumbing, not what the page teaches."""
    import nbformat

    visible = [
        f"{path.relative_to(BOOK_DIR).as_posix()}: {cell.source.strip().splitlines()[0][:60]}"
        for path in book_notebooks()
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "code"
        and ASSERT_STATEMENT.search(cell.source)
        and not CODE_HIDING_TAGS & set(cell.metadata.get("tags", []))
    ]
    assert not visible, f"cells that assert in view (tag them remove-input or hide-input): {visible}"


def test_every_content_page_has_a_figure():
    """Every page that teaches (not the reference pages) shows its idea in a figure: a diagram, or a chart its code
    draws."""
    missing = []
    for page in toc_files():
        if not page.startswith("book/") or REFERENCE_PAGES.match(page):
            continue
        if (BOOK_DIR / f"{page}.ipynb").exists():
            import nbformat

            cells = nbformat.read(BOOK_DIR / f"{page}.ipynb", as_version=4).cells
            drawn = any(c.cell_type == "code" and DRAWING_CODE.search(c.source) for c in cells)
            text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
        else:
            drawn, text = False, (BOOK_DIR / f"{page}.md").read_text(encoding="utf-8")
        if not drawn and not FIGURE_MARKUP.search(text):
            missing.append(page)
    assert not missing, f"content pages without a figure: {missing}"


@pytest.mark.book
def test_every_figure_fits_the_text_column(built_book):
    """A figure wider than the column is shrunk with its labels (a 15-inch figure's 10-point labels to 6 px)."""
    import nbformat

    wide = []
    for path in book_notebooks():
        page = built_book / path.relative_to(BOOK_DIR).with_suffix(".html")
        for cell in (executed_notebook(built_book, page) or nbformat.v4.new_notebook()).cells:
            for output in cell.get("outputs", []):
                if output.get("data", {}).get("image/png") and shown_width(output) > WIDEST_FIGURE_PX:
                    wide.append(f"{path.name}: a figure shown {shown_width(output)} px wide")
    assert not wide, f"figures wider than {WIDEST_FIGURE_PX} px, shrunk on the page: {wide}"


def test_every_section_ends_with_questions_to_check_yourself():
    """A reader on their own checks each page with two or three short questions whose answers are folded."""
    import nbformat

    missing = []
    for path in book_notebooks():
        if path.stem in ("intro", "test-sets"):  # the landing page, and a reference page
            continue
        text = "\n".join(
            "".join(c["source"]) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"
        )
        section = text.split("## Check yourself", 1)
        questions = re.findall(r"^\d\. ", section[-1].split(":::", 1)[0], re.M) if len(section) == 2 else []
        if not 2 <= len(questions) <= 3 or ":class: dropdown" not in section[-1]:
            missing.append(path.relative_to(BOOK_DIR).as_posix())
    assert not missing, f"pages without 2 or 3 questions under '## Check yourself' and folded answers: {missing}"


@pytest.mark.book
def test_the_landing_pages_chapter_times_are_current(built_book):
    """The course map's times (book/_diagrams/chapter_times.json) against this build's: each chapter within a
    factor of 3, as far apart as a quiet machine and a busy one, or within 10 s (a chapter of seconds, where a file
    cache decides the factor: "Getting started" took 10 s for the map and 3 s in one CI build, 4+ s in others).
    Off by more, a chapter has grown or shrunk:
    `python tools/chapter_times.py` and `python book/_diagrams/draw.py` (on the machine the landing page names)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("word2bert_chapter_times", ROOT / "tools" / "chapter_times.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    draw = tool.draw_module()
    config = yaml.safe_load((BOOK_DIR / "_config.yml").read_text(encoding="utf-8"))
    now = tool.notebook_seconds(BOOK_DIR / config["execute"]["cache"], BOOK_DIR)
    off = [
        f"{chapter.title}: {draw.duration(then)} on the map, {draw.duration(seconds)} in this build"
        for chapter, then, seconds in zip(draw.CHAPTERS, draw.chapter_seconds(), draw.chapter_seconds(now))
        if not (then / 3 <= seconds <= 3 * then or abs(seconds - then) <= 10)
    ]
    assert not off, "chapters whose notebooks' time changed by more than a factor of 3:\n" + "\n".join(off)
