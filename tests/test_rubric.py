"""The instructors' page's rubric is the source notebooks' (book/exercises/instructors.md, "Rubric and expected
time of each exercise"): every test cell and written answer with its points, the totals, the number of answers
to write. A point changed in a notebook and not on the page, or the reverse, fails here."""

from __future__ import annotations

import re
from pathlib import Path

from word2bert_grader.assignment import assignments, meta

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "exercises" / "instructors.md"


def rubric_blocks() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Rubric and expected time of each exercise", 1)[1].split("\n## ", 1)[0]
    blocks = re.split(r"\n(?=\*\*Exercise \d)", section)[1:]
    return {re.search(r"\(`([^`]+)`\)", b)[1]: b for b in blocks}


def test_every_exercise_has_its_rubric_on_the_instructors_page():
    blocks = rubric_blocks()
    assert sorted(blocks) == sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())
    sources = assignments(ROOT)
    for name, block in blocks.items():
        cells = sources[name].cells
        expected = {**sources[name].points, **sources[name].written}
        shown: dict[str, float] = {}
        for row in re.findall(r"^\| (`.+?) \| ([0-9. +]+) \|$", block, flags=re.M):
            ids = re.findall(r"`([^`]+)`", row[0])
            points = [float(p) for p in row[1].split("+")]
            assert len(ids) == len(points), row
            shown.update(zip(ids, points, strict=True))
        assert shown == expected, f"{name}: the page's rubric differs from the source notebook"
        total = float(re.search(r"\*\*Total\*\* \| \*\*([0-9.]+)\*\*", block)[1])
        assert total == sum(expected.values()), name
        answers = [c for c in cells if meta(c).get("solution") and c.get("cell_type") == "code"]
        assert int(re.search(r": (\d+) (?:functions|functions or classes) to write", block)[1]) == len(answers), name
        assert re.search(r"about \d+ hours", block), f"{name}: an expected time"
