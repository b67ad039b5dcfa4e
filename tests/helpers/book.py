"""The book's table of contents and the markers that must never reach a reader (the site, the archives)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from helpers import BOOK_DIR

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def toc_files(book_dir: Path = BOOK_DIR) -> list[str]:
    """Every `root`/`file` entry of _toc.yml: a path relative to the book, without suffix."""
    toc = yaml.safe_load((book_dir / "_toc.yml").read_text(encoding="utf-8"))
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    found.append(str(node[key]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return [re.sub(r"\.(md|ipynb)$", "", f) for f in found]
