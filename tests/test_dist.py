"""`make dist` (tools/dist.py) on the book this test run built: the two versioned archives, the
landing page's links to them, and the book's archive read from the disk (file://) in headless
Chromium, offline: MathJax typesets, figures load, search lists results, no console error and no
request leaves the disk.

The archives go to a temporary folder; like `make dist`, they are also copied into the built site's
downloads/, which the landing page links (the links the published site serves).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from bs4 import BeautifulSoup
from helpers import ROOT
from helpers.book import MARKERS
from helpers.browser import NETWORK_SCHEMES, PAGE_TIMEOUT_S, settle

pytestmark = pytest.mark.book

spec = importlib.util.spec_from_file_location("w2b_dist", ROOT / "tools" / "dist.py")
dist = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dist)

# [project] version of pyproject.toml (its first `version = "..."` line).
VERSION = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)[1]


@pytest.fixture(scope="module")
def archives(built_book, tmp_path_factory) -> dict[str, Path]:
    return dist.make_dist(built_book, tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def unpacked(archives, tmp_path_factory) -> Path:
    """The book's archive, unpacked: its top folder."""
    where = tmp_path_factory.mktemp("offline")
    with zipfile.ZipFile(archives["book"]) as archive:
        archive.extractall(where)
    return where / f"word2bert-book-{VERSION}"


def members(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None, f"{path.name}: a member fails its CRC"
        return archive.namelist()


def test_archives_are_named_by_the_version(archives):
    assert dist.version() == VERSION, "word2bert.__version__ differs from pyproject.toml's version"
    assert archives["book"].name == f"word2bert-book-{VERSION}.zip"
    assert archives["student"].name == f"word2bert-student-{VERSION}.zip"


def test_book_archive_holds_the_site_and_the_student_archive_but_not_itself(archives, built_book):
    names = members(archives["book"])
    top = f"word2bert-book-{VERSION}/"
    assert all(n.startswith(top) for n in names), "one top folder"
    inside = {n.removeprefix(top) for n in names}
    site = {p.relative_to(built_book).as_posix() for p in built_book.rglob("*") if p.is_file()}
    book_zips = {n for n in site if n.startswith("downloads/word2bert-book-")}
    assert book_zips, "make dist copies the book's archive into the site's downloads/"
    assert inside - {"README.txt"} == site - book_zips, "the archive is the site, less its own copy"
    assert f"downloads/word2bert-student-{VERSION}.zip" in inside
    for needed in ("index.html", "search.html", "searchindex.js", "book/intro.html"):
        assert needed in inside, needed
    # Made again while the site holds a book archive (as every run after the first): still not inside.
    (archives["book"].parent / "again").mkdir()
    again = dist.book_archive(built_book, archives["book"].parent / "again", VERSION)
    assert not [n for n in members(again) if "/downloads/word2bert-book-" in n]


def test_student_archive_holds_the_exercises_the_wheel_and_a_readme(archives, tmp_path):
    names = members(archives["student"])
    top = f"word2bert-student-{VERSION}/"
    assert all(n.startswith(top) for n in names)
    inside = {n.removeprefix(top) for n in names}
    released = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "exercises").rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    }
    assert released and {n for n in inside if n.startswith("exercises/")} == released
    wheel_name = f"word2bert-{VERSION}-py3-none-any.whl"
    assert inside == released | {"README.md", f"wheels/{wheel_name}"}
    with zipfile.ZipFile(archives["student"]) as archive:
        for name in released:
            data = archive.read(top + name)
            assert data == (ROOT / name).read_bytes(), f"{name} differs from the release"
            assert not any(m.encode() in data for m in MARKERS), f"{name}: solution markers"
        readme = archive.read(top + "README.md").decode("utf-8")
        archive.extract(top + f"wheels/{wheel_name}", tmp_path)
    assert f"pip install wheels/{wheel_name}" in readme and "jupyter lab exercises/" in readme
    wheel = tmp_path / top / "wheels" / wheel_name
    in_wheel = members(wheel)
    assert "word2bert/testing.py" in in_wheel and any(
        n.startswith("word2bert/checkpoints/") and n.endswith(".safetensors") for n in in_wheel
    )
    assert not any(n.startswith("word2bert_grader/") for n in in_wheel)
    # The wheel installs and is the library the notebooks import (its dependencies are this venv's).
    target = tmp_path / "site-packages"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    probe = "import word2bert, word2bert.testing; print(word2bert.__version__, word2bert.__file__)"
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env, cwd=tmp_path, timeout=120
    ).stdout.split()
    assert out[0] == VERSION and Path(out[1]).is_relative_to(target), out


def test_landing_page_links_both_archives_on_the_site(archives, built_book):
    landing = built_book / "book" / "intro.html"
    page = BeautifulSoup(landing.read_text(encoding="utf-8"), "html.parser")
    links = {a.get_text(strip=True): a["href"] for a in page.select("a.w2b-download")}
    assert set(links) == {archives["book"].name, archives["student"].name}, links
    for name, href in links.items():
        target = (landing.parent / urlsplit(href).path).resolve()
        assert target.is_file(), f"the landing page links {href}, which the site lacks"
        assert target.read_bytes() == (archives["book"].parent / name).read_bytes()


def offline_visit(driver, url: str) -> dict:
    """Load a file:// page, wait for MathJax and images; what it shows, logs and requests."""
    driver.get_log("browser"), driver.get_log("performance")
    driver.get(url)
    settle(driver)
    seen = driver.execute_script(
        """return {
            url: location.href,
            math: document.querySelectorAll("mjx-container").length,
            math_errors: document.querySelectorAll("mjx-merror, .MathJax_Error").length,
            images: [...document.querySelectorAll("article.bd-article img")].map(
                img => [img.getAttribute("src"), img.naturalWidth]),
        };"""
    )
    seen["errors"] = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    seen["network"] = [
        m["params"]["request"]["url"]
        for m in (json.loads(e["message"])["message"] for e in driver.get_log("performance"))
        if m["method"] == "Network.requestWillBeSent" and m["params"]["request"]["url"].startswith(NETWORK_SCHEMES)
    ]
    return seen


def test_book_archive_works_from_the_disk(browser, unpacked):
    root = unpacked.as_uri() + "/"
    landing = offline_visit(browser, urljoin(root, "index.html"))
    assert landing["url"] == urljoin(root, "book/intro.html"), "index.html leads to the landing page"
    notation = offline_visit(browser, urljoin(root, "book/notation.html"))
    assert notation["math"] > 10 and not notation["math_errors"], notation
    chapter = offline_visit(browser, urljoin(root, "book/01-word-vectors/02-skipgram.html"))
    assert chapter["images"] and all(width > 0 for _, width in chapter["images"]), chapter["images"]
    browser.get_log("browser"), browser.get_log("performance")
    browser.get(urljoin(root, "search.html?q=masked+language+model"))
    deadline, results = time.monotonic() + PAGE_TIMEOUT_S, []
    while time.monotonic() < deadline and not results:
        results = browser.execute_script(
            "return [...document.querySelectorAll('#search-results li a')].map(a => a.href);"
        )
        time.sleep(0.2)
    assert results and all(r.startswith(root) for r in results), results
    assert any(r.startswith(urljoin(root, "book/glossary.html")) for r in results), results
    time.sleep(1)  # a failed summary fetch would log its error just after the results
    search_errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    for name, visit in [("landing", landing), ("notation", notation), ("chapter", chapter)]:
        assert not visit["errors"], f"{name}: console errors from the disk: {visit['errors']}"
        assert not visit["network"], f"{name}: requests that need a network: {visit['network']}"
    assert not search_errors, f"search from the disk logs errors: {search_errors[:3]}"
