"""What to run, in what order: a submission laid over its source notebook.

The instructor's source notebook (``solutions/<name>/<name>.ipynb``) decides which cells are tests
and what they say; the submission only contributes code. Walking the submission:

- an answer cell (nbgrader ``solution``, matched by grade id) contributes the student's code; when
  it appears twice, the last copy is the answer and the earlier ones are ordinary student cells;
- a test cell, or a read-only (locked) cell, is always the source's, whatever the submission made
  of it: edited, deleted or duplicated test cells are restored, and said so;
- any other cell of the submission (scratch work) runs where the student put it, after the source
  cell it follows;
- a written answer (nbgrader's manually graded answer: a markdown cell that is both ``solution`` and
  ``grade``) is the student's text, never run and never scored here: the instructor grades it by hand
  in formgrader, and the source's model answer is never shown.

Every code step runs in the sandbox except the tests' hidden halves, which only the grader sees.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from enum import StrEnum

HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


class Kind(StrEnum):
    """What a step of the plan is, and so where it runs."""

    MARKDOWN = "markdown"  # prose: never run
    SETUP = "setup"  # a locked code cell of the source: runs in the sandbox and in the grader
    ANSWER = "answer"  # the student's code for an answer cell
    STUDENT = "student"  # a cell of the student's own (scratch work)
    TEST = "test"  # the source's test: its visible half in the sandbox, the whole of it in the grader
    WRITTEN = "written"  # a written answer: graded by hand, never run

    @property
    def runs(self) -> bool:
        return self not in (Kind.MARKDOWN, Kind.WRITTEN)


@dataclass
class Step:
    kind: Kind
    source: str  # what runs: the student's code, or the source's (a test's whole source, hidden part included)
    grade_id: str | None = None
    points: float = 0.0
    student_markdown: bool = False  # a markdown cell written by the student (shown sanitized)

    def __post_init__(self):
        self.kind = Kind(self.kind)

    @property
    def visible(self) -> str:
        """What the student's copy of this cell holds (a test without its hidden part)."""
        return without_hidden_tests(self.source) if self.kind is Kind.TEST else self.source


@dataclass
class Plan:
    steps: list[Step]
    contract: list[str]  # the names the source's answer cells define: what the tests may use
    notes: list[str] = field(default_factory=list)


def without_hidden_tests(source: str) -> str:
    kept, hidden = [], False
    for line in source.split("\n"):
        if HIDDEN_BEGIN in line:
            hidden = True
        elif HIDDEN_END in line:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


def valid_text(text: str) -> str:
    """``text`` with what no UTF-8 file can hold (lone surrogates, from a JSON escape or a print) replaced."""
    return text.encode("utf-8", "replace").decode("utf-8")


def valid_data(value):
    """``value`` (a result: dicts, lists, strings, numbers) with every string made valid text (:func:`valid_text`)."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_data(k): valid_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_data(v) for v in value]
    return value


def _text(source) -> str:
    if isinstance(source, list):
        return valid_text("".join(s for s in source if isinstance(s, str)))
    return valid_text(source) if isinstance(source, str) else ""


def _nbgrader(cell) -> dict:
    """A cell's nbgrader metadata, with a grade id that is a string or absent (the submission may lie)."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    value = meta.get("nbgrader") if isinstance(meta, dict) else None
    if not isinstance(value, dict):
        return {}
    if not isinstance(value.get("grade_id"), str):
        value = {k: v for k, v in value.items() if k != "grade_id"}
    return value


def read_cells(data: bytes) -> list[dict]:
    """The cells of a notebook file, leniently: anything with a cell type and a source."""
    nb = json.loads(data.decode("utf-8"))
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("no list of cells")
    cells = []
    for cell in nb["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") in ("code", "markdown", "raw"):
            cells.append(cell)
    return cells


def _written(cell) -> bool:
    """nbgrader's manually graded answer: a markdown cell that is both a solution and graded."""
    meta = _nbgrader(cell)
    return cell.get("cell_type") == "markdown" and bool(meta.get("solution")) and bool(meta.get("grade"))


def points(source_cells: list[dict]) -> dict[str, float]:
    """grade id -> points of every test cell of a source notebook (what the grader scores)."""
    return {
        _nbgrader(c)["grade_id"]: float(_nbgrader(c).get("points", 0))
        for c in source_cells
        if _nbgrader(c).get("grade") and _nbgrader(c).get("grade_id") and not _written(c)
    }


def written_points(source_cells: list[dict]) -> dict[str, float]:
    """grade id -> points of every written answer of a source notebook (what the instructor grades by hand)."""
    return {
        _nbgrader(c)["grade_id"]: float(_nbgrader(c).get("points", 0))
        for c in source_cells
        if _written(c) and _nbgrader(c).get("grade_id")
    }


def defined_names(source: str) -> list[str]:
    """Top-level names an answer cell defines (functions, classes, assigned variables)."""
    try:
        tree = ast.parse(without_hidden_tests(source))
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def plan(source_cells: list[dict], submission_cells: list[dict]) -> Plan:
    """Lay the submission over the source; see the module docstring."""
    answers: dict[str, int] = {}  # grade id -> index of the submission cell that is the answer
    source_ids = {_nbgrader(c).get("grade_id") for c in source_cells}
    answer_ids = {_nbgrader(c).get("grade_id") for c in source_cells if _nbgrader(c).get("solution")}
    written_ids = {_nbgrader(c).get("grade_id") for c in source_cells if _written(c)}
    for i, cell in enumerate(submission_cells):
        gid = _nbgrader(cell).get("grade_id")
        if gid in answer_ids and cell.get("cell_type") == ("markdown" if gid in written_ids else "code"):
            answers[gid] = i  # the last copy wins
    # Scratch cells follow the source cell that comes before them in the submission.
    after: dict[str | None, list[Step]] = {}
    anchor, seen, notes = None, set(), []
    duplicated, edited_tests, edited_locked = set(), set(), set()
    source_by_id = {_nbgrader(c).get("grade_id"): c for c in source_cells}
    # Cells of the source without a grade id (prose, mostly) come back unchanged in the submission.
    unlabelled = {_text(c.get("source")).strip() for c in source_cells if not _nbgrader(c).get("grade_id")}
    for i, cell in enumerate(submission_cells):
        gid = _nbgrader(cell).get("grade_id")
        kind = cell.get("cell_type")
        if gid in source_ids and gid is not None and (gid not in answer_ids or answers.get(gid) == i):
            if gid in seen:
                duplicated.add(gid)
                continue
            seen.add(gid)
            anchor = gid
            original = source_by_id[gid]
            if gid not in answer_ids and _shown(cell).strip() != _shown(original).strip():
                (edited_tests if _nbgrader(original).get("grade") else edited_locked).add(gid)
            continue
        if gid is None and _text(cell.get("source")).strip() in unlabelled:
            continue
        if kind == "code":
            step = Step(Kind.STUDENT, _text(cell.get("source")))
        elif kind == "markdown":
            step = Step(Kind.MARKDOWN, _text(cell.get("source")), student_markdown=True)
        else:
            continue
        after.setdefault(anchor, []).append(step)

    steps = list(after.get(None, []))
    contract = []
    for cell in source_cells:
        meta = _nbgrader(cell)
        gid = meta.get("grade_id")
        if _written(cell):  # the student's text, or nothing: the source's is the model answer
            text = _text(submission_cells[answers[gid]].get("source")) if gid in answers else ""
            if gid not in answers:
                notes.append(f"written answer {gid} is missing from the submission")
            steps.append(Step(Kind.WRITTEN, text, gid, float(meta.get("points", 0)), student_markdown=True))
        elif cell.get("cell_type") == "markdown":
            steps.append(Step(Kind.MARKDOWN, _text(cell.get("source")), gid))
        elif meta.get("solution") and cell.get("cell_type") == "code":
            contract += defined_names(_text(cell.get("source")))
            if gid in answers:
                steps.append(Step(Kind.ANSWER, _text(submission_cells[answers[gid]].get("source")), gid))
            else:
                notes.append(f"answer cell {gid} is missing from the submission")
        elif meta.get("grade") and cell.get("cell_type") == "code":
            steps.append(Step(Kind.TEST, _text(cell.get("source")), gid, float(meta.get("points", 0))))
        elif cell.get("cell_type") == "code":
            steps.append(Step(Kind.SETUP, _text(cell.get("source")), gid))
        else:
            continue
        steps += after.get(gid, [])
    tests = {
        _nbgrader(c).get("grade_id")
        for c in source_cells
        if _nbgrader(c).get("grade") and not _nbgrader(c).get("solution")
    }  # (written answers are solutions: missing ones noted above)
    missing = sorted(tests - seen)
    if missing:
        notes.append(f"deleted test cells {', '.join(missing)}: restored from the source")
    if edited_tests:
        notes.append(f"edited test cells {', '.join(sorted(edited_tests))}: restored from the source")
    if duplicated:
        notes.append(f"duplicated cells {', '.join(sorted(duplicated))}: each counted once")
    if edited_locked:
        notes.append(f"edited read-only cells {', '.join(sorted(edited_locked))}: restored from the source")
    return Plan(steps, contract, notes)


def _shown(cell) -> str:
    """A source cell as the student's release shows it (hidden tests removed)."""
    return without_hidden_tests(_text(cell.get("source")))
