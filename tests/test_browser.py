"""The built book in a real browser: headless Chromium, driven by Selenium, reading _build/html from
a local server. Every page loads without console errors and without a request leaving localhost,
chapters show their figures, search works, the navigation reaches every chapter. Every page is also
read on a phone-sized screen, 400 px wide, where no text may run past the screen's edge, no table is wider
than the text column (a result a reader would have to scroll sideways to find), and every chart's labels
stay legible. A screenshot of every page at both widths is kept in _build/screenshots/. Skipped, with the
reason, where Chromium is absent."""

from __future__ import annotations

import functools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urljoin, urlsplit

import pytest
from helpers import BOOK_DIR
from helpers.book import toc_files
from helpers.browser import NETWORK_SCHEMES, PAGE_TIMEOUT_S, settle

pytestmark = pytest.mark.book

# The two screens every page is read on: a laptop's window, and a phone's.
WIDE, NARROW = 1280, 400
SCREENSHOTS = BOOK_DIR / "_build" / "screenshots"


@dataclass
class Visit:
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    images: list[dict] = field(default_factory=list)  # src, alt, natural size of each figure in the content
    nav_links: list[str] = field(default_factory=list)
    # the start of every code block in the content that is wider than its box (a sideways scroll bar)
    sideways_code: list[str] = field(default_factory=list)
    # the start of every text, figure or formula in the content whose right edge lies past the window's, outside a
    # box that scrolls sideways by itself
    past_the_edge: list[str] = field(default_factory=list)
    # every table shown in the content (not folded away) that is wider than the text column: its first cells, its
    # width and the column's, in CSS pixels
    wide_tables: list[str] = field(default_factory=list)
    # every chart (a PNG of the content): its source, the width it is shown at and the width it was drawn for
    charts: list[dict] = field(default_factory=list)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(built_book):
    """The built book served on 127.0.0.1 by a thread; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(built_book)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


def book_pages() -> list[str]:
    """Every page of the table of contents, as a path of the site (`book/intro.html`)."""
    return [f"{f}.html" for f in toc_files()]


def chapter_notebooks() -> dict[str, list[str]]:
    """Executed chapter notebooks by chapter folder (`book/01-word-vectors`), as site paths."""
    chapters: dict[str, list[str]] = {}
    for f in toc_files():
        parts = f.split("/")
        if parts[0] == "book" and len(parts) > 2 and (BOOK_DIR / f"{f}.ipynb").exists():
            chapters.setdefault("/".join(parts[:2]), []).append(f"{f}.html")
    return chapters


def record(driver, base: str) -> Visit:
    visit = Visit()
    for entry in driver.get_log("browser"):
        if entry["level"] == "SEVERE":
            visit.console_errors.append(entry["message"])
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if url.startswith(NETWORK_SCHEMES) and not url.startswith(base):
                visit.external_requests.append(url)
    visit.images = driver.execute_script(
        """
        return [...document.querySelectorAll("article.bd-article img")].map(img => ({
            src: img.getAttribute("src"), alt: img.alt,
            width: img.naturalWidth, height: img.naturalHeight}));
        """
    )
    visit.nav_links = driver.execute_script(
        """return [...document.querySelectorAll(".bd-sidebar-primary a[href], nav a[href]")]
                  .map(a => a.href);"""
    )
    visit.sideways_code = driver.execute_script(
        """return [...document.querySelectorAll("article.bd-article pre")]
                  .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
                  .map(pre => pre.textContent.trim().slice(0, 80));"""
    )
    visit.past_the_edge = driver.execute_script(PAST_THE_EDGE)
    visit.wide_tables = driver.execute_script(WIDE_TABLES)
    visit.charts = driver.execute_script(
        """
        return [...document.querySelectorAll("article.bd-article img")]
            .filter(img => /\\.png$/i.test(img.getAttribute("src") || "") && img.offsetParent !== null)
            .map(img => ({src: img.getAttribute("src"), shown: img.getBoundingClientRect().width,
                          // the width the chart was drawn for: a retina PNG's (twice as many pixels) is in its style
                          drawn: parseFloat(img.style.width) || Number(img.getAttribute("width"))
                                 || img.naturalWidth}));
        """
    )
    return visit


# Measured in the browser: every table in the article that a reader sees (not inside a folded output or dropdown)
# whose full width is more than the text column's, so that part of it hides behind a sideways scroll.
WIDE_TABLES = """
const article = document.querySelector("article.bd-article");
if (!article) return [];
const style = getComputedStyle(article);
const column = article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
return [...article.querySelectorAll("table")]
    .filter(table => table.offsetParent !== null && table.scrollWidth > column + 1)
    .map(table => {
        const start = table.textContent.trim().replace(/\\s+/g, " ").slice(0, 50);
        return `${start}: ${table.scrollWidth} px in ${column}`;
    });
"""


# Measured in the browser: every piece of text, figure and formula in the article whose right edge is past the
# window's right edge (so the page itself scrolls sideways, or the text is cut), unless an element around it scrolls
# sideways by itself (overflow-x: auto or scroll, as the theme's table boxes do).
PAST_THE_EDGE = """
const edge = document.documentElement.clientWidth + 1;
const article = document.querySelector("article.bd-article");
if (!article) return [];
const scrollsItself = node => {
    for (let el = node; el && el !== article.parentElement; el = el.parentElement) {
        if (["auto", "scroll"].includes(getComputedStyle(el).overflowX)) return true;
    }
    return false;
};
const found = [];
const texts = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
for (let node = texts.nextNode(); node; node = texts.nextNode()) {
    if (!node.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const box = range.getBoundingClientRect();
    if (box.width > 0 && box.right > edge && !scrollsItself(node.parentElement)) {
        found.push(node.textContent.trim().slice(0, 60));
    }
}
for (const el of article.querySelectorAll("img, svg, mjx-container")) {
    const box = el.getBoundingClientRect();
    // a formula may be its own scrolling box (w2b.css); a figure is not
    const scroller = el.tagName === "MJX-CONTAINER" ? el : el.parentElement;
    if (box.width > 0 && box.right > edge && !scrollsItself(scroller)) {
        found.push(`<${el.tagName.toLowerCase()}> ` + (el.getAttribute("src") || el.textContent.trim()).slice(0, 60));
    }
}
return found;
"""


def set_width(driver, width: int) -> None:
    """A window `width` CSS pixels wide (Chromium's own window has a minimum width; the emulated one has none)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    )


def screenshot_path(page: str, width: int):
    return SCREENSHOTS / str(width) / page.replace("/", "__").replace(".html", ".png")


def read_every_page(browser, site, width: int) -> dict[str, Visit]:
    """Each page of the book loaded once in a window `width` pixels wide, with a screenshot of it."""
    set_width(browser, width)
    browser.get_log("browser"), browser.get_log("performance")  # start from empty logs
    found = {}
    for page in book_pages():
        browser.get(urljoin(site, page))
        settle(browser)
        assert browser.execute_script("return window.innerWidth") == width
        found[page] = record(browser, site)
        path = screenshot_path(page, width)
        path.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(path))
    return found


@pytest.fixture(scope="module")
def visits(browser, site) -> dict[str, Visit]:
    """Each page of the book, loaded once, 1280 px wide."""
    return read_every_page(browser, site, WIDE)


@pytest.fixture(scope="module")
def narrow_visits(browser, site, visits) -> dict[str, Visit]:
    """Each page of the book, loaded once, 400 px wide (after the wide visits, which share the browser)."""
    return read_every_page(browser, site, NARROW)


def test_every_page_loads_without_console_errors(visits):
    errors = {page: v.console_errors for page, v in visits.items() if v.console_errors}
    assert not errors, f"console errors: {json.dumps(errors, indent=1)[:4000]}"


def test_no_request_leaves_localhost(visits):
    external = {page: v.external_requests for page, v in visits.items() if v.external_requests}
    assert not external, (
        "pages requested assets from other hosts (serve them from _static: offline MathJax, "
        f"no widget scripts, no CDN fonts): {json.dumps(external, indent=1)[:4000]}"
    )


def test_every_chapter_shows_its_executed_figures(visits):
    chapters = chapter_notebooks()
    if not chapters:
        pytest.skip("_toc.yml lists no chapter notebooks yet")
    for chapter, pages in chapters.items():
        images = [img for page in pages for img in visits[page].images]
        assert images, f"{chapter}: no figure on any of its pages {pages}"
        blank = [img["src"] for img in images if not (img["width"] > 0 and img["height"] > 0)]
        assert not blank, f"{chapter}: figures that did not load (natural size 0): {blank}"


def test_no_code_block_scrolls_sideways(visits):
    """Long lines of code and of printed output wrap at the window's width (book/_static/w2b.css)."""
    wide = {page: v.sideways_code for page, v in visits.items() if v.sideways_code}
    assert not wide, f"code blocks wider than the page: {json.dumps(wide, indent=1)[:4000]}"


@pytest.mark.parametrize("width", [WIDE, NARROW])
def test_no_text_runs_past_the_edge_of_the_screen(width, visits, narrow_visits):
    """On a laptop and on a phone, every text, figure and formula fits the window, or scrolls inside a box of its
    own (a wide table: book/_static/w2b.css keeps its first column in view and shadows its right edge)."""
    read = visits if width == WIDE else narrow_visits
    past = {page: v.past_the_edge for page, v in read.items() if v.past_the_edge}
    assert not past, f"{width} px: content past the window's right edge: {json.dumps(past, indent=1)[:4000]}"


def test_no_table_is_wider_than_the_text_column_on_a_phone(narrow_visits):
    """At 400 px every table a reader sees fits the text column: no result hides behind a sideways scroll. A wide
    table is plotted instead, or turned so that layers are rows (word2bert.reporting.cosine_table)."""
    wide = {page: v.wide_tables for page, v in narrow_visits.items() if v.wide_tables}
    assert not wide, f"400 px: tables wider than the text column: {json.dumps(wide, indent=1)[:4000]}"


def smallest_label_px(chart: dict) -> float:
    """The height in CSS pixels of a chart's smallest label as shown: its size in points in the book's style
    (word2bert.reporting.BOOK_STYLE), at the style's dots per inch, scaled by how much the page shrinks the chart."""
    from word2bert.reporting import BOOK_STYLE

    points = min(BOOK_STYLE[k] for k in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize", "axes.labelsize"))
    return points / 72 * BOOK_STYLE["figure.dpi"] * chart["shown"] / chart["drawn"]


# A label smaller than this, in CSS pixels, is hard to read on a phone (about 8 points). The book's 12-point labels
# on a 5-inch chart come to 11.5 px in the phone's text column; a chart drawn more than about 5.3 inches wide fails.
LEGIBLE_PX = 11


def test_every_chart_is_legible_on_a_phone(narrow_visits):
    """At 400 px the page shrinks a chart to the text column, and its labels with it: a chart drawn wider than
    the book's 5 inches ends up with labels too small to read."""
    small = {
        page: [f"{c['src']}: {smallest_label_px(c):.1f} px" for c in v.charts if smallest_label_px(c) < LEGIBLE_PX]
        for page, v in narrow_visits.items()
    }
    small = {page: charts for page, charts in small.items() if charts}
    assert not small, f"400 px: charts whose labels are under {LEGIBLE_PX} px: {json.dumps(small, indent=1)[:4000]}"


def test_every_page_has_a_screenshot_at_both_widths(visits, narrow_visits):
    missing = [
        str(path)
        for page in book_pages()
        for path in (screenshot_path(page, WIDE), screenshot_path(page, NARROW))
        if not path.exists() or path.stat().st_size < 10_000
    ]
    assert not missing, f"no screenshot (or an empty one): {missing[:10]}"


def test_search_finds_masked_language_model(browser, site):
    browser.get(urljoin(site, "search.html?q=masked+language+model"))
    deadline = time.monotonic() + PAGE_TIMEOUT_S
    results = []
    while time.monotonic() < deadline and not results:
        results = browser.execute_script(
            "return [...document.querySelectorAll('#search-results li a')].map(a => a.href);"
        )
        time.sleep(0.2)
    assert results, "the book's search found no page for 'masked language model'"


def test_navigation_reaches_every_page(visits, site):
    """Following the sidebar's links from the landing page reaches every page of the TOC."""
    base, landing = urlsplit(site), book_pages()[0]
    seen, frontier = {landing}, [landing]
    while frontier:
        page = frontier.pop()
        for href in visits[page].nav_links if page in visits else []:
            url = urlsplit(href)
            target = url.path.lstrip("/")
            if url.netloc == base.netloc and target in visits and target not in seen:
                seen.add(target)
                frontier.append(target)
    unreachable = sorted(set(book_pages()) - seen)
    assert not unreachable, f"pages the navigation never links to: {unreachable}"


def test_the_site_root_leads_to_the_landing_page(browser, site, narrow_visits):
    set_width(browser, WIDE)
    browser.get(site)
    settle(browser)
    assert browser.current_url == urljoin(site, book_pages()[0]), browser.current_url
