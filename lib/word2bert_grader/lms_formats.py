"""Canvas's and Moodle's download layouts: whose each downloaded file is, from the LMS's names and Moodle's grading
worksheet, and the :class:`Record` the collector keeps of it (see :mod:`word2bert_grader.lms`)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from word2bert_grader import filing
from word2bert_grader.course import Course
from word2bert_grader.deadlines import LMS_RECORD
from word2bert_grader.filing import Problem
from word2bert_grader.lms_roster import MAX_ROSTER_BYTES, Roster

MOODLE_TIME_FORMATS = ("%A, %d %B %Y, %I:%M %p", "%A, %d %B %Y, %H:%M", "%d %B %Y, %I:%M %p")


@dataclass(frozen=True)
class Record:
    """``submitted/<student>/<assignment>/lms.json``: what the LMS said of the collected download."""

    lms: str
    download: str  # the file (and member) it came from
    user: str  # Canvas's user id, Moodle's participant id (of this assignment)
    name: str  # the name the LMS gave it (Canvas's name part, Moodle's full name)
    attachment: str = ""  # Canvas's attachment id
    late: bool | None = None  # Canvas's LATE mark; None on Moodle

    @classmethod
    def read(cls, folder: Path) -> Record | None:
        try:
            data = json.loads((folder / LMS_RECORD).read_text(encoding="utf-8"))
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        except (OSError, ValueError, TypeError):
            return None


# --- A download's files, and whose they are -------------------------------------------------------


@dataclass
class Entry:
    source: str  # shown: the path under the downloads folder (and ":member")
    name: str  # the path the LMS gave it, inside its download
    mtime: float | None
    read: Callable[[int], bytes]
    size: int = 0  # bytes (a zip member's once decompressed, as its zip says)


@dataclass
class Found:
    student: str
    assignment: str
    entry: Entry
    named: bool  # its file is named for the assignment
    order: int | None  # Canvas's attachment id (uploads are numbered in order); None: no order
    record: Record
    submitted: datetime | None = None  # Moodle's worksheet


def _named_for(filename: str, assignment: str) -> bool:
    """``<assignment>.ipynb``, or a copy of it renamed by the LMS (``-1``) or a browser (`` (1)``)."""
    stem = filename.rsplit("/", 1)[-1].removesuffix(".ipynb")
    return re.fullmatch(rf"{re.escape(assignment)}(?:-[0-9]+| \([0-9]+\))?", stem) is not None


# --- Canvas ---------------------------------------------------------------------------------------


# Canvas's name part and its file's name are at most 255 characters each: a longer name is none of Canvas's (a zip
# member's name of 65,535 "_1" groups has 32,000 readings, each with its own file name: 20 s and 2 GB).
MAX_CANVAS_NAME = 1024


@dataclass(frozen=True)
class CanvasName:
    name: str  # Canvas's sanitized sortable name ("" under anonymous grading)
    late: bool
    user: str  # the user id, or "anon_<id>"
    attachment: str
    file: str  # the file's name as uploaded (with Canvas's "-1" for a re-upload)


def canvas_readings(base: str) -> list[CanvasName]:
    """Every way to read ``base`` as a Canvas download name (``lib/content_zipper.rb``: ``[name, "LATE", user
    id].join("_")``, then ``_<attachment id>_<file>``): one per place where two all-digit fields stand. Canvas reads
    the first back; but the name part is the student's own (a display name of ``eve_1001_99999``) and so is the
    file's, so an honest name has one reading and a name that reads as two users is no evidence of either."""
    parts, readings = base.split("_") if len(base) <= MAX_CANVAS_NAME else [], []
    for i in range(len(parts) - 2):
        anonymous = parts[i] == "anon" and i + 3 < len(parts) and parts[i + 2].isascii() and parts[i + 2].isdigit()
        if anonymous or (all_digits(parts[i]) and all_digits(parts[i + 1])):
            user = f"anon_{parts[i + 1]}" if anonymous else parts[i]
            attachment = parts[i + 2] if anonymous else parts[i + 1]
            rest = "_".join(parts[i + (3 if anonymous else 2) :])
            name = parts[:i]
            late = bool(name) and name[-1] == "LATE"
            if rest:
                readings.append(CanvasName("_".join(name[:-1] if late else name), late, user, attachment, rest))
    return readings


def parse_canvas(base: str) -> CanvasName | None:
    """A Canvas download name read as Canvas reads it back: its first reading (:func:`canvas_readings`)."""
    readings = canvas_readings(base)
    return readings[0] if readings else None


SEVERAL_USERS = "several users"  # the owner of every Canvas name that reads as several (collected for none)


def canvas_users(base: str) -> list[str]:
    """The users a Canvas download name reads as: one for an honest name (anonymous grading's ``anon_`` ids count)."""
    return sorted({r.user for r in canvas_readings(base)})


def canvas_owner(name: str) -> str | None:
    """Whose a download's limits count it as: its user; every name that reads as several users is collected for
    none of them, and counted for none of them (whose notebooks it would crowd out): all together; None: no Canvas
    name."""
    users = canvas_users(name.rsplit("/", 1)[-1])
    return SEVERAL_USERS if len(users) > 1 else next(iter(users), None)


def all_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def canvas_notebooks(
    assignment: str, entries: list[Entry], roster: Roster | None, course: Course, folder: Path
) -> tuple[list[Found], list[Problem]]:
    found, problems = [], []
    for entry in entries:
        base = entry.name.rsplit("/", 1)[-1]
        readings = canvas_readings(base)
        if not readings:
            problems.append(Problem(entry.source, "ignored: not named as Canvas names downloads (name_ID_ID_file)"))
            continue
        parsed = readings[0]
        if not parsed.file.endswith(".ipynb"):
            problems.append(Problem(entry.source, "ignored: not a notebook"))
            continue
        if parsed.user.startswith("anon_"):
            problems.append(
                Problem(entry.source, "not collected: anonymous grading hides whose it is (kept in the downloads)")
            )
            continue
        # A name that reads as two users holds another user's ids in a part of the student's choosing (a display
        # name, a file name): whoever is on the roster, neither reading can be trusted.
        users = canvas_users(base)
        if len(users) > 1:
            problems.append(
                Problem(
                    entry.source,
                    f"not collected: the name reads as Canvas users {' and '.join(users)} (a display name or a file "
                    "name holding another user's ids; kept in the downloads: grade it by hand)",
                )
            )
            continue
        # One user, several readings: the student's own ids in a display name or a file name can move where Canvas's
        # fields seem to start, and with them the LATE mark ("x_1001_1_y_LATE_1001_5555_..." first reads on time).
        if len({(r.late, r.attachment, r.file) for r in readings}) > 1:
            problems.append(
                Problem(
                    entry.source,
                    f"not collected: the name reads in {len(readings)} ways as a Canvas download name (a display name "
                    "or a file name holding the student's own ids, which can hide a LATE mark; kept in the downloads: "
                    "grade it by hand)",
                )
            )
            continue
        if roster is None or not roster.people:
            student = f"canvas-{parsed.user}"  # no usable roster: graded under Canvas's id, and said so
        else:
            person = roster.by_lms_id(parsed.user)
            if person is None:
                problems.append(
                    Problem(
                        entry.source,
                        f"not collected: Canvas user {parsed.user} is on no roster row (kept in the downloads)",
                    )
                )
                continue
            student = person.student
        record = Record("canvas", entry.source, parsed.user, parsed.name, parsed.attachment, parsed.late)
        found.append(
            Found(student, assignment, entry, _named_for(parsed.file, assignment), int(parsed.attachment), record)
        )
    return found, problems


# --- Moodle ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoodleName:
    name: str  # the participant's full name ("Participant" under blind marking)
    participant: str
    plugin: str  # "file", "onlinetext", ...
    file: str  # the path inside the participant's folder


def parse_moodle(path: str) -> MoodleName | None:
    """A path in Moodle's "Download all submissions" zip, read as Moodle's own feedback import reads it
    (``mod/assign/feedback/file/importziplib.php``): the first part ``<name>_<id>_<subtype>_<plugin>[_<rest>]``."""
    parts = path.split("/")
    while parts:
        info = parts.pop(0).split("_", 4)
        if len(info) >= 4 and all_digits(info[1]) and info[2] == "assignsubmission":
            rest = "/".join(([info[4]] if len(info) == 5 and info[4] else []) + parts)
            return MoodleName(info[0], info[1], info[3], rest) if rest else None
    return None


def moodle_owner(path: str) -> str | None:
    parsed = parse_moodle(path)
    return parsed.participant if parsed is not None else None


@dataclass(frozen=True)
class _Sheet:
    identity: dict[str, str]  # "Full name", "Email address", "ID number"... of the participant
    submitted: datetime | None


def _worksheets(folder: Path, course: Course) -> tuple[dict[str, _Sheet], list[Problem]]:
    """Participant id -> its row of the grading worksheets (CSVs at the top of the assignment's folder, but for those
    Moodle names as a participant's file: a student's upload, in an unpacked flat download)."""
    sheets, problems = {}, []
    for path in sorted(folder.glob("*.csv")):
        shown = f"{folder.name}/{path.name}"
        if parse_moodle(path.name) is not None:
            problems.append(Problem(shown, "ignored: a student's uploaded file, not the grading worksheet"))
            continue
        try:
            text = filing.read_file(path, MAX_ROSTER_BYTES).decode("utf-8-sig")
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
        except Exception as e:
            problems.append(Problem(shown, f"ignored: cannot read it ({filing.describe(e)})"))
            continue
        if not rows or "Identifier" not in rows[0]:
            problems.append(Problem(shown, "ignored: not Moodle's grading worksheet (no Identifier column)"))
            continue
        for number, row in enumerate(rows, start=2):
            ident = re.search(r"([0-9]+)\s*$", str(row.get("Identifier") or ""))
            if ident is None:
                problems.append(Problem(shown, f"line {number}: no participant id in {row.get('Identifier')!r}"))
                continue
            stamp = str(row.get("Last modified (submission)") or "").strip()
            when = _moodle_time(stamp, course)
            if stamp not in ("", "-") and when is None:
                problems.append(
                    Problem(shown, f"line {number}: cannot read the time {stamp!r}: the file's time is used")
                )
            identity = {k: str(v).strip() for k, v in row.items() if isinstance(k, str) and isinstance(v, str)}
            sheets[ident[1]] = _Sheet(identity, when)
    return sheets, problems


def _moodle_time(text: str, course: Course) -> datetime | None:
    for form in MOODLE_TIME_FORMATS:
        try:
            return datetime.strptime(text, form).replace(tzinfo=course.timezone)
        except ValueError:
            continue
    return None


def _moodle_person(
    parsed: MoodleName, sheet: _Sheet | None, roster: Roster | None, id_column: str | None
) -> tuple[str | None, str]:
    """(student or None, why not) of a Moodle participant."""
    if roster is None or not roster.people:
        value = (sheet.identity.get(id_column or "", "") if sheet else "") or ""
        if value and not filing.id_problem(value):
            return value, ""
        return None, "no usable roster, and no worksheet row with the student's id"
    if sheet is not None:
        for column in ("Email address", "ID number"):
            people = roster.find(column, sheet.identity.get(column, ""))
            if len(people) == 1:
                return people[0].student, ""
    name = sheet.identity.get("Full name", parsed.name) if sheet else parsed.name
    people = roster.find("name", name)
    if len(people) == 1:
        return people[0].student, ""
    if people:
        return None, f"{len(people)} roster rows are named {name!r}: put the grading worksheet beside the download"
    return None, f"{name!r} (participant {parsed.participant}) is on no roster row"


def moodle_notebooks(
    assignment: str, entries: list[Entry], roster: Roster | None, course: Course, folder: Path
) -> tuple[list[Found], list[Problem]]:
    sheets, problems = _worksheets(folder, course)
    found = []
    for entry in entries:
        if "/" not in entry.name and entry.name.endswith(".csv"):
            continue  # a worksheet (read above)
        parsed = parse_moodle(entry.name)
        if parsed is None:
            problems.append(
                Problem(entry.source, "ignored: not in Moodle's download layout (Name_ID_assignsubmission_)")
            )
            continue
        if parsed.plugin != "file" or not parsed.file.endswith(".ipynb"):
            problems.append(Problem(entry.source, "ignored: not a notebook"))
            continue
        sheet = sheets.get(parsed.participant)
        student, why = _moodle_person(parsed, sheet, roster, course.lms.id_column)
        if student is None:
            problems.append(Problem(entry.source, f"not collected: {why} (kept in the downloads)"))
            continue
        record = Record("moodle", entry.source, parsed.participant, parsed.name)
        named = _named_for(parsed.file, assignment)
        found.append(Found(student, assignment, entry, named, None, record, sheet.submitted if sheet else None))
    return found, problems
