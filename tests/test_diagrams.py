"""The book's diagrams are drawn by book/_diagrams/draw.py. The SVGs committed under book/images/diagrams/ must be
exactly what the script draws now (so a change to a diagram's code is never left undrawn), and every one of them
must be shown on a page, with alt text."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
from helpers import ROOT

DRAW = ROOT / "book" / "_diagrams" / "draw.py"
COMMITTED = ROOT / "book" / "images" / "diagrams"
# A MyST figure or image directive, fenced with ``` or :::, and its options (":alt: ...").
DIRECTIVE = re.compile(r"^(?:```|:::)\{(?:figure|image)\}[ \t]+(\S+)[ \t]*\n((?:[ \t]*:[\w-]+:.*\n)*)", re.M)


def draw_module():
    spec = importlib.util.spec_from_file_location("word2bert_book_diagrams", DRAW)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page_texts():
    """(page, MyST text) for every Markdown page and every notebook's Markdown cells under book/."""
    for path in sorted((ROOT / "book").rglob("*")):
        if any(part.startswith((".", "_")) for part in path.relative_to(ROOT).parts):
            continue
        if path.suffix == ".md":
            yield path, path.read_text(encoding="utf-8")
        elif path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            yield path, "\n".join("".join(c["source"]) + "\n" for c in cells if c["cell_type"] == "markdown")


@pytest.mark.slow
def test_committed_diagrams_are_what_the_script_draws(tmp_path):
    drawn = {p.name for p in draw_module().draw_all(tmp_path)}
    committed = {p.name for p in COMMITTED.glob("*.svg")}
    assert drawn == committed, (
        f"draw.py draws {sorted(drawn - committed)} that are not committed, and no longer draws "
        f"{sorted(committed - drawn)}: run `python book/_diagrams/draw.py` and commit book/images/diagrams/"
    )
    stale = sorted(n for n in drawn if (tmp_path / n).read_bytes() != (COMMITTED / n).read_bytes())
    assert not stale, (
        f"committed diagrams that differ from what draw.py draws now: {stale}. Run "
        "`python book/_diagrams/draw.py` and commit the result (with the matplotlib of constraints.txt: "
        "another version writes different bytes)"
    )


def test_every_diagram_is_shown_on_a_page_with_alt_text():
    shown, without_alt = set(), []
    for page, text in page_texts():
        for target, options in DIRECTIVE.findall(text):
            path = (page.parent / target).resolve()
            if path.parent != COMMITTED.resolve():
                continue
            assert path.exists(), f"{page.relative_to(ROOT)} shows {target}, which does not exist"
            shown.add(path.name)
            alt = re.search(r"^[ \t]*:alt:[ \t]*(\S.*)$", options, re.M)
            if not alt or len(alt.group(1).split()) < 5:
                without_alt.append(f"{page.relative_to(ROOT)}: {target}")
    unused = sorted({p.name for p in COMMITTED.glob("*.svg")} - shown)
    assert not unused, f"diagrams that no page shows: {unused}"
    assert not without_alt, f"diagrams shown without an :alt: of a few words: {without_alt}"


def test_the_landing_page_gives_the_course_map_in_text():
    """The course map's text alternative on the landing page: a table row per chapter with what the map shows (the
    chapter's times among it, from book/_diagrams/chapter_times.json), and where and when the times were measured."""
    draw = draw_module()
    cells = json.loads((ROOT / "book" / "intro.ipynb").read_text(encoding="utf-8"))["cells"]
    intro = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    missing = [row for row in draw.landing_rows() if row not in intro]
    assert not missing, (
        "book/intro.ipynb lacks these rows of the course map (tools/chapter_times.py prints them):\n"
        + ("\n".join(missing))
    )
    times = json.loads(draw.CHAPTER_TIMES.read_text(encoding="utf-8"))
    assert f"({times['machine']}, {times['measured']})" in intro, "the landing page names another measurement"
