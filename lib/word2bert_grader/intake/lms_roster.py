"""Canvas's and Moodle's gradebook exports, read as rosters (the formats are :mod:`intake.lms`'s)."""

from __future__ import annotations

import csv
import io
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from word2bert_grader.intake import filing

MAX_ROSTER_BYTES = 20 * 2**20
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_IDENTITY = ("First name", "Surname", "ID number", "Email address")


@dataclass(frozen=True)
class Person:
    student: str  # the course's id
    name: str  # as the LMS shows it ("Lovelace, Ada" on Canvas, "Ada Lovelace" on Moodle)
    lms_id: str  # Canvas's user id; "" on Moodle (its participant ids are per assignment)
    identity: dict[str, str] = field(default_factory=dict, compare=False)  # the export's identity columns


@dataclass
class Roster:
    lms: str
    people: list[Person] = field(default_factory=list)
    header: list[str] = field(default_factory=list)  # the export's columns (assignment columns included)
    points: dict[str, str] = field(default_factory=dict)  # Canvas's Points Possible row
    problems: list[str] = field(default_factory=list)

    @property
    def students(self) -> set[str]:
        return {p.student for p in self.people}

    def by_lms_id(self, lms_id: str) -> Person | None:
        return next((p for p in self.people if p.lms_id == lms_id), None)

    def find(self, column: str, value: str) -> list[Person]:
        """The people whose ``column`` (an identity column, or "name") is ``value``, compared as text."""
        key = _folded(value)
        if not key:
            return []
        return [p for p in self.people if _folded(p.name if column == "name" else p.identity.get(column, "")) == key]


def read_roster(path: Path, lms: str, id_column: str) -> Roster:
    """The roster of an LMS's gradebook export; every problem is in ``Roster.problems`` (never raises)."""
    roster = Roster(lms)
    try:
        if not path.is_file():  # the instructor's file: one plain check (a FIFO would be waited on for ever)
            raise ValueError("not a file")
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))
    except (OSError, UnicodeError, ValueError, csv.Error) as error:
        roster.problems.append(f"roster {path.name} cannot be read ({type(error).__name__}: {error})")
        return roster
    if not rows:
        roster.problems.append(f"roster {path.name} is empty")
        return roster
    header = [h.strip() for h in rows[0]]
    roster.header = header
    identity = CANVAS_IDENTITY if lms == "canvas" else MOODLE_IDENTITY
    needed = {id_column, "ID"} if lms == "canvas" else {id_column}
    missing = sorted(needed - set(header))
    if missing:
        roster.problems.append(
            f"roster {path.name} is not {lms.capitalize()}'s gradebook export: no column {', '.join(missing)}"
        )
        return roster
    seen: dict[str, int] = {}
    seen_lms_ids: dict[str, int] = {}  # Canvas's user ids: a download's owner, and whose feedback Canvas attaches
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        values = dict(zip(header, (cell.strip() for cell in row), strict=False))
        if len(row) != len(header):
            roster.problems.append(f"roster {path.name} line {number}: {len(row)} fields, the header has {len(header)}")
        if lms == "canvas" and values.get("Student") == "Points Possible":
            roster.points = values
            continue
        name = (
            values.get("Student", "")
            if lms == "canvas"
            else " ".join(filter(None, (values.get("First name"), values.get("Surname"))))
        )
        student = values.get(id_column, "")
        why = "has no " + id_column if not student else filing.id_problem(student)
        if why:
            roster.problems.append(f"roster {path.name} line {number} ({name or 'no name'}): the id {why}: left out")
            continue
        if student in seen:
            roster.problems.append(
                f"roster {path.name} line {number}: {id_column} {student!r} is also on line {seen[student]}: left out"
            )
            continue
        lms_id = values.get("ID", "") if lms == "canvas" else ""
        if lms_id in seen_lms_ids:
            roster.problems.append(
                f"roster {path.name} line {number}: ID {lms_id!r} is also on line {seen_lms_ids[lms_id]}: left out"
            )
            continue
        seen[student] = number
        if lms_id:
            seen_lms_ids[lms_id] = number
        roster.people.append(Person(student, name, lms_id, {k: values.get(k, "") for k in identity if k in values}))
    return roster


def _folded(text: str) -> str:
    """Names compared as people read them: composed Unicode, case and spacing ignored."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())
