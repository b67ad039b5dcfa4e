"""An assignment, read once from its source notebook (cells, points, written answers), and a submission laid over it:
the plan of what runs where, in notebook order. The rules are README.md's ("The plan")."""

from __future__ import annotations

import ast
import hashlib
import json
from collections import namedtuple
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict

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


Plan = namedtuple("Plan", "steps contract notes")  # contract: the names the answer cells define, for the tests


class Assignment(BaseModel):
    """A source notebook (``solutions/<name>/<name>.ipynb``), parsed once and carried to the workers as it is."""

    model_config = ConfigDict(frozen=True)

    name: str
    cells: list[dict]
    digest: str  # of the source notebook's bytes
    points: dict[str, float]  # grade id -> points of each test cell (what the grader scores)
    written: dict[str, float]  # grade id -> points of each written answer (what the instructor grades by hand)

    @classmethod
    def read(cls, name: str, data: bytes) -> Assignment:
        cells = read_cells(data)
        tests = [c for c in cells if meta(c).get("grade") and meta(c).get("grade_id")]
        points = {meta(c)["grade_id"]: float(meta(c).get("points", 0)) for c in tests if not _written(c)}
        written = {meta(c)["grade_id"]: float(meta(c).get("points", 0)) for c in tests if _written(c)}
        return cls(name=name, cells=cells, digest=hashlib.sha256(data).hexdigest(), points=points, written=written)

    def plan(self, submission_cells: list[dict]) -> Plan:
        return plan(self.cells, submission_cells)


def assignments(root: Path) -> dict[str, Assignment]:
    """The course's assignments: every ``solutions/<name>/<name>.ipynb``, by name."""
    folders = sorted(p for p in (root / "solutions").iterdir() if (p / f"{p.name}.ipynb").is_file())
    return {p.name: Assignment.read(p.name, (p / f"{p.name}.ipynb").read_bytes()) for p in folders}


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


def printable(text: str) -> str:
    """Text from student code as one line, safe for a terminal and a CSV: no newline, control character or escape."""
    return "".join(c if c.isprintable() else "?" for c in valid_text(text))


def text(source) -> str:
    """A cell's source as valid text (a list of lines or a string; anything else is none)."""
    if isinstance(source, list):
        return valid_text("".join(s for s in source if isinstance(s, str)))
    return valid_text(source) if isinstance(source, str) else ""


def meta(cell) -> dict:
    """A cell's nbgrader metadata, with a grade id that is a string or absent (the submission may lie)."""
    found = cell.get("metadata") if isinstance(cell, dict) else None
    value = found.get("nbgrader") if isinstance(found, dict) else None
    if not isinstance(value, dict):
        return {}
    return value if isinstance(value.get("grade_id"), str) else {k: v for k, v in value.items() if k != "grade_id"}


def read_cells(data: bytes) -> list[dict]:
    """The cells of a notebook file, leniently: anything with a cell type and a source."""
    nb = json.loads(data.decode("utf-8"))
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("no list of cells")
    return [c for c in nb["cells"] if isinstance(c, dict) and c.get("cell_type") in ("code", "markdown", "raw")]


def _written(cell) -> bool:
    """nbgrader's manually graded answer: a markdown cell that is both a solution and graded."""
    return cell.get("cell_type") == "markdown" and bool(meta(cell).get("solution")) and bool(meta(cell).get("grade"))


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
    """Lay the submission over the source (README.md, "The plan")."""
    answers: dict[str, int] = {}  # grade id -> index of the submission cell that is the answer
    source_ids = {meta(c).get("grade_id") for c in source_cells}
    answer_ids = {meta(c).get("grade_id") for c in source_cells if meta(c).get("solution")}
    written_ids = {meta(c).get("grade_id") for c in source_cells if _written(c)}
    for i, cell in enumerate(submission_cells):
        gid = meta(cell).get("grade_id")
        if gid in answer_ids and cell.get("cell_type") == ("markdown" if gid in written_ids else "code"):
            answers[gid] = i  # the last copy wins
    # Scratch cells follow the source cell that comes before them in the submission.
    after: dict[str | None, list[Step]] = {}
    anchor, seen, notes = None, set(), []
    duplicated, edited_tests, edited_locked = set(), set(), set()
    source_by_id = {meta(c).get("grade_id"): c for c in source_cells}
    # Cells of the source without a grade id (prose, mostly) come back unchanged in the submission.
    unlabelled = {text(c.get("source")).strip() for c in source_cells if not meta(c).get("grade_id")}
    for i, cell in enumerate(submission_cells):
        gid = meta(cell).get("grade_id")
        if gid in source_ids and gid is not None and (gid not in answer_ids or answers.get(gid) == i):
            if gid in seen:
                duplicated.add(gid)
                continue
            seen.add(gid)
            anchor = gid
            original = source_by_id[gid]
            if gid not in answer_ids and _shown(cell).strip() != _shown(original).strip():
                (edited_tests if meta(original).get("grade") else edited_locked).add(gid)
            continue
        if gid is None and text(cell.get("source")).strip() in unlabelled:
            continue
        if cell.get("cell_type") in ("code", "markdown"):
            code = cell["cell_type"] == "code"
            step = Step(Kind.STUDENT if code else Kind.MARKDOWN, text(cell.get("source")), student_markdown=not code)
            after.setdefault(anchor, []).append(step)

    steps = list(after.get(None, []))
    contract = []
    for cell in source_cells:
        info = meta(cell)
        gid, code = info.get("grade_id"), cell.get("cell_type") == "code"
        if _written(cell):  # the student's text, or nothing: the source's is the model answer
            answer = text(submission_cells[answers[gid]].get("source")) if gid in answers else ""
            if gid not in answers:
                notes.append(f"written answer {gid} is missing from the submission")
            steps.append(Step(Kind.WRITTEN, answer, gid, float(info.get("points", 0)), student_markdown=True))
        elif cell.get("cell_type") == "markdown":
            steps.append(Step(Kind.MARKDOWN, text(cell.get("source")), gid))
        elif info.get("solution") and code:
            contract += defined_names(text(cell.get("source")))
            if gid in answers:
                steps.append(Step(Kind.ANSWER, text(submission_cells[answers[gid]].get("source")), gid))
            else:
                notes.append(f"answer cell {gid} is missing from the submission")
        elif info.get("grade") and code:
            steps.append(Step(Kind.TEST, text(cell.get("source")), gid, float(info.get("points", 0))))
        elif code:
            steps.append(Step(Kind.SETUP, text(cell.get("source")), gid))
        else:
            continue
        steps += after.get(gid, [])
    tests = {meta(c).get("grade_id") for c in source_cells if meta(c).get("grade") and not meta(c).get("solution")}
    missing = sorted(tests - seen)  # (written answers are solutions: missing ones noted above)
    for names, what in (
        (missing, "deleted test cells {}: restored from the source"),
        (sorted(edited_tests), "edited test cells {}: restored from the source"),
        (sorted(duplicated), "duplicated cells {}: each counted once"),
        (sorted(edited_locked), "edited read-only cells {}: restored from the source"),
    ):
        if names:
            notes.append(what.format(", ".join(names)))
    return Plan(steps, contract, notes)


def _shown(cell) -> str:
    """A source cell as the student's release shows it (hidden tests removed)."""
    return without_hidden_tests(text(cell.get("source")))
