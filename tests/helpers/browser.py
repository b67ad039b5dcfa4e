"""Headless Chromium, driven by Selenium, as the browser tests use it (the `browser` fixture of conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
    # A request for any other host fails to resolve, so nothing can leave the machine; the
    # performance log still records the attempt, which is how the tests see it.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
# What goes over the network (data:, blob: and the browser's own chrome:// pages do not).
NETWORK_SCHEMES = ("http:", "https:", "ws:", "wss:", "ftp:")
PAGE_TIMEOUT_S = 30


def start_chromium(profile: Path):
    """A Selenium driver of headless Chromium with its own profile folder, logging console messages and
    network requests; skips the test, saying what to install, where Chromium or Selenium is missing."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[dev]'")
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip(
            "headless Chromium not found (needs `chromium` and `chromedriver` on PATH): "
            "`make system-deps`, or `sudo apt-get install chromium chromium-driver`"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(PAGE_TIMEOUT_S)
    return driver


def settle(driver) -> None:
    """Wait until the page has loaded, MathJax has typeset, and every figure has loaded."""
    driver.set_script_timeout(PAGE_TIMEOUT_S)
    driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const images = () => Promise.all([...document.images].map(img => {
            img.loading = "eager";
            return img.complete ? null : new Promise(r => { img.onload = img.onerror = r; });
        }));
        const mathjax = window.MathJax && MathJax.startup && MathJax.startup.promise;
        Promise.resolve(mathjax).then(images).then(() => done(true), () => done(false));
        """
    )
