"""The built book in a real browser: headless Chromium, driven by Selenium, reading _build/html from
a local server. Every page loads without console errors and without a request leaving localhost,
chapters show their figures, search works, the navigation reaches every chapter. Skipped, with the
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


@dataclass
class Visit:
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    images: list[dict] = field(default_factory=list)  # src, alt, natural size of each figure in the content
    nav_links: list[str] = field(default_factory=list)
    # the start of every code block in the content that is wider than its box (a sideways scroll bar)
    sideways_code: list[str] = field(default_factory=list)


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
    return visit


@pytest.fixture(scope="module")
def visits(browser, site) -> dict[str, Visit]:
    """Each page of the book, loaded once."""
    browser.get_log("browser"), browser.get_log("performance")  # start from empty logs
    found = {}
    for page in book_pages():
        browser.get(urljoin(site, page))
        settle(browser)
        found[page] = record(browser, site)
    return found


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


def test_screenshots_of_landing_and_chapter_page(browser, site):
    folder = BOOK_DIR / "_build" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    chapters = chapter_notebooks()
    chapter_page = next(iter(chapters.values()))[0] if chapters else book_pages()[1]
    for name, page in [("landing", ""), ("chapter", chapter_page)]:
        browser.get(urljoin(site, page))
        settle(browser)
        if name == "landing":  # the site's root redirects to the book's first page
            assert browser.current_url == urljoin(site, book_pages()[0]), browser.current_url
        path = folder / f"{name}.png"
        assert browser.save_screenshot(str(path)) and path.stat().st_size > 10_000, f"no screenshot {path}"
