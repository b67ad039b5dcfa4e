"""Written answers: nbgrader's manually graded answer cells (markdown, ``solution`` and ``grade``).

The grader never runs or scores them; it carries the student's text to the instructor's graded copy (where
formgrader grades it), shows it on the student's feedback page, never shows the source's model answer, and counts
the points apart until the instructor has given them. The whole path, formgrader included, is tested through
`make autograde` in test_formgrader.py; these are the pieces.
"""

from __future__ import annotations

import json

from word2bert_grader.assignment import Assignment, plan
from word2bert_grader.outputs import feedback
from word2bert_grader.outputs.gradebook import Recorded
from word2bert_grader.outputs.reports import total
from word2bert_grader.task import Result

MODEL_ANSWER = "MODEL ANSWER: the instructor's reference text"


def cell(kind: str, source: str, grade_id: str | None = None, **flags) -> dict:
    meta = {"nbgrader": {"grade_id": grade_id, "schema_version": 3, **flags}} if grade_id else {}
    return {"cell_type": kind, "metadata": meta, "source": source, **({"outputs": []} if kind == "code" else {})}


SOURCE = [
    cell("markdown", "# Exercise"),
    cell("code", "def f(x):\n    return x + 1", "f", solution=True, grade=False, locked=False),
    cell("code", "assert f(1) == 2", "test_f", solution=False, grade=True, locked=True, points=2),
    cell("markdown", "Why does f add one?"),
    cell("markdown", MODEL_ANSWER, "why_f", solution=True, grade=True, locked=False, points=3),
]


def student(answer: str | None) -> list[dict]:
    cells = [SOURCE[0], cell("code", "def f(x):\n    return x + 1", "f", solution=True), SOURCE[2], SOURCE[3]]
    if answer is not None:
        cells.append(cell("markdown", answer, "why_f", solution=True, grade=True, points=3))
    return cells


def test_written_answers_have_points_apart_from_the_tests():
    source = Assignment.read("a", json.dumps({"cells": SOURCE}).encode())
    assert source.points == {"test_f": 2.0}, "the grader scores tests only"
    assert source.written == {"why_f": 3.0}


def test_the_plan_carries_the_students_text_never_the_model_answer():
    laid = plan(SOURCE, student("Because *one* is the <b>answer</b>."))
    written = [s for s in laid.steps if s.kind == "written"]
    assert [(s.grade_id, s.source, s.points) for s in written] == [
        ("why_f", "Because *one* is the <b>answer</b>.", 3.0)
    ]
    assert all(MODEL_ANSWER not in s.source for s in laid.steps), "the model answer reached the plan"
    assert not laid.notes

    missing = plan(SOURCE, student(None))
    assert [s.source for s in missing.steps if s.kind == "written"] == [""]
    assert missing.notes == ["written answer why_f is missing from the submission"]

    twice = student("first draft") + [cell("markdown", "final answer", "why_f", solution=True, grade=True)]
    steps = plan(SOURCE, twice).steps
    assert [s.source for s in steps if s.kind == "written"] == ["final answer"], "the last copy is the answer"
    assert any(s.kind == "markdown" and s.source == "first draft" for s in steps), "earlier copies are prose"


def test_feedback_shows_the_answer_sanitized_and_the_graded_copy_keeps_its_grade_cell():
    laid = plan(SOURCE, student("Because <script>alert(1)</script> [x](javascript:alert(2))"))
    records = [
        type("R", (), {"step": s, "outputs": [], "failure": "", "passed": True, "test_output": "", "message": ""})()
        for s in laid.steps
    ]
    result = Result(
        student="s", assignment="a", score=2.0, max_score=2.0, written={"why_f": 3.0}, cells={"test_f": 2.0}
    )
    page = feedback.page(result, records, feedback.Sanitizer())
    assert "<script>" not in page and 'href="javascript:' not in page, "shown as text, never as HTML or a link"
    assert "your written answer: why_f, 3 points, graded by hand" in page
    assert "3 points of written answers, graded by hand" in page and MODEL_ANSWER not in page

    graded = json.loads(feedback.graded_notebook(SOURCE, records))
    answer = [c for c in graded["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "why_f"]
    assert len(answer) == 1 and answer[0]["cell_type"] == "markdown", "formgrader grades the cell with this id"
    # formgrader renders this copy unsanitised: the student's text is there whole, as a fenced block of text
    text = "Because <script>alert(1)</script> [x](javascript:alert(2))"
    assert answer[0]["source"] == f"```text\n{text}\n```" and answer[0]["metadata"]["nbgrader"]["points"] == 3
    assert MODEL_ANSWER not in json.dumps(graded)


def test_totals_count_hand_graded_points_once_given():
    r = Result(student="s", assignment="a", score=2.0, max_score=2.0, written={"why_f": 3.0, "how_f": 1.0})
    assert total(r) == (2.0, 6.0, 4.0), "nothing given yet: 4 points wait"
    recorded = Recorded(0, {r.key: {"why_f": 2.5, "how_f": None}})
    assert total(r, recorded) == (4.5, 6.0, 1.0)
    failed = r.model_copy(update={"failure": "not a notebook"})
    assert total(failed, Recorded(0, {r.key: {}})) == (2.0, 6.0, 0.0), "nothing to grade by hand"
    assert total(Result(student="s", assignment="a", score=1.0, max_score=2.0)) == (1.0, 2.0, 0.0), "an older result"
