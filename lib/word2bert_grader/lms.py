"""Canvas and Moodle, in their own formats: rosters and submission downloads in, grades and feedback out.

**Rosters** are the LMS's gradebook export, read by :func:`read_roster`:

- Canvas (Grades, Export): ``Student,ID,SIS User ID,SIS Login ID,Section,<assignments...>``, then the row
  ``Points Possible``; ``ID`` is Canvas's user id, the one in its download names;
- Moodle (Grades, Export, Plain text file): ``First name,Surname,ID number,Institution,Department,
  Email address,<grade items...>``.

One column holds the course's student ids (``course.toml``'s ``[lms] student_id``: "SIS Login ID" and
"Email address" by default). A row without a usable id, or with one another row has, is reported and left out.

**Downloads** (``make autograde DOWNLOADS=dir LMS=canvas|moodle``): ``dir/<assignment>/`` holds what the LMS
gave for that assignment, its zip as downloaded or unpacked (or both: identical copies count once):

- Canvas ("Download Submissions"): flat files named ``<name>_<user id>_<attachment id>_<file>``,
  ``<name>_LATE_<user id>_<attachment id>_<file>``, ``anon_<id>_...`` under anonymous grading; a file
  uploaded again under the same name is renamed ``<file>-1``, ``-2``... The user id finds the student.
- Moodle ("Download all submissions"): a folder per participant, ``<Full Name>_<participant id>_
  assignsubmission_file_`` (without the last ``_`` since Moodle 4.1; or flat files with the folder's name as
  a prefix). Participant ids differ per assignment: the assignment's grading worksheet (Download grading
  worksheet, a CSV with ``Identifier``, ``Full name``, ``Email address`` and ``Last modified (submission)``),
  put in the same folder, gives whose each is and when it was submitted; without it, the full name is looked
  up on the roster.

The student comes from the LMS's identifiers only, never from a file's content. The safety rules of
:mod:`word2bert_grader.downloads` hold here too: nothing is extracted, paths that could escape, links,
encrypted and oversized members (counted as they decompress) are refused, zips inside the download are not
opened, and one bad file never stops the others. Several notebooks for one student: those named for the
assignment (``<assignment>.ipynb``, with Canvas's ``-1`` suffixes) count; of those, Canvas's newest upload (the
largest attachment id) wins. Copies with the same bytes are one. Notebooks that cannot be told apart are a
conflict: none is collected, and the student gets a failed row that says so. A file whose owner is on no
roster row is reported and left where it is. Besides the notebook, the collector writes ``lms.json``
(:class:`Record`: the LMS's ids, to pack the feedback) and, where the LMS gave a time, nbgrader's
``timestamp.txt``; the notebook keeps the download's time (:mod:`word2bert_grader.deadlines`).

**Exports** (``make export LMS=canvas|moodle``, :func:`export`), from ``grades.csv`` and ``feedback/``:

- ``exports/canvas-grades.csv``, Canvas's gradebook import: its five identity columns, the ``Points Possible``
  row, one column per assignment (named as in the roster export, where it has one); and
  ``exports/canvas-feedback/<assignment>.zip`` for the assignment's Re-Upload Submissions, each page named
  ``<name>_<user id>_<attachment id>_<file>``, which Canvas reads back (its first two all-digit fields) to attach
  the page to that submission;
- ``exports/moodle-grades.csv`` for Moodle's CSV grade import: the roster's identity columns, and a grade and a
  ``Feedback:`` column per assignment; and ``exports/moodle-feedback/<assignment>.zip`` for Upload multiple
  feedback files in a zip: ``<Full Name>_<participant id>_assignfeedback_file_/<file>``.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import os
import re
import stat
import unicodedata
import zipfile
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from word2bert_grader import downloads, filing
from word2bert_grader.course import Course
from word2bert_grader.deadlines import LMS_RECORD, TIMESTAMP
from word2bert_grader.filing import Collected, Problem

MAX_ROSTER_BYTES = 20 * 2**20
MAX_DEPTH = 4  # folders below an assignment's download folder
MAX_ENTRIES = 20_000  # files and members of one assignment's download
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_IDENTITY = ("First name", "Surname", "ID number", "Email address")
MOODLE_TIME_FORMATS = ("%A, %d %B %Y, %I:%M %p", "%A, %d %B %Y, %H:%M", "%d %B %Y, %I:%M %p")


# --- Rosters --------------------------------------------------------------------------------------


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
        with open(path, "rb") as stream:
            data = stream.read(MAX_ROSTER_BYTES + 1)
        if len(data) > MAX_ROSTER_BYTES:
            raise ValueError(f"larger than {MAX_ROSTER_BYTES // 2**20} MB")
        text = data.decode("utf-8-sig")
        rows = list(csv.reader(io.StringIO(text, newline="")))
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
        seen[student] = number
        lms_id = values.get("ID", "") if lms == "canvas" else ""
        roster.people.append(Person(student, name, lms_id, {k: values.get(k, "") for k in identity if k in values}))
    return roster


def _folded(text: str) -> str:
    """Names compared as people read them: composed Unicode, case and spacing ignored."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


@dataclass
class Intake:
    """What ``make autograde`` learns before grading: who may be graded, what the downloads gave, what to say."""

    allowed: set[str] | None  # the roster's students; None: no roster
    problems: list[Problem]  # the collection's, as :func:`word2bert_grader.downloads.collect` reports them
    notes: list[str]  # about the roster


def intake(
    root: Path, assignments: list[str], downloads_dir: Path | None, roster: Path | None, lms: str | None, course: Course
) -> Intake:
    """Read the roster and collect the downloads, in the LMS's formats (``lms``) or the plain ones."""
    notes: list[str] = []
    people = None
    if lms:
        people = read_roster(roster, lms, course.lms.id_column or "") if roster else None
        notes += people.problems if people else [f"no {lms} roster given: every download's owner is taken as is"]
        allowed = people.students if people and people.people else None
    else:
        try:
            allowed = downloads.read_roster(roster) if roster else None
        except (OSError, UnicodeError, ValueError, csv.Error) as error:
            notes.append(f"roster {roster} cannot be read ({error}): every student is graded")
            allowed = None
    problems: list[Problem] = []
    if downloads_dir is not None:
        submitted = root / "submitted"
        if lms:
            _, problems = collect(downloads_dir.resolve(), submitted, assignments, lms, people, course)
        else:
            _, problems = downloads.collect(downloads_dir.resolve(), submitted, assignments, allowed)
    return Intake(allowed, problems, notes)


# --- What the collector keeps beside each notebook -------------------------------------------------


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


# --- Reading a download ---------------------------------------------------------------------------


@dataclass
class _Entry:
    source: str  # shown: the path under the downloads folder (and ":member")
    name: str  # the path the LMS gave it, inside its download
    mtime: float | None
    read: Callable[[int], bytes]


@dataclass
class _Found:
    student: str
    assignment: str
    entry: _Entry
    named: bool  # its file is named for the assignment
    order: int | None  # Canvas's attachment id (uploads are numbered in order); None: no order
    record: Record
    submitted: datetime | None = None  # Moodle's worksheet


def collect(
    downloads_dir: Path,
    submitted: Path,
    assignments: Collection[str],
    lms: str,
    roster: Roster | None,
    course: Course,
    max_member_bytes: int = filing.MAX_MEMBER_BYTES,
) -> tuple[list[Collected], list[Problem]]:
    """Collect ``downloads_dir/<assignment>/`` of every assignment into ``submitted``; see the module's rules."""
    names = filing.checked_assignments(assignments)
    problems: list[Problem] = []
    found: list[_Found] = []
    for path in sorted(Path(downloads_dir).iterdir()):
        if path.name not in names or path.is_symlink() or not path.is_dir():
            problems.append(Problem(path.name, f"ignored: not a folder named after an assignment ({', '.join(names)})"))
            continue
        entries, trouble = _entries(path, path.name, max_member_bytes, course)
        problems += trouble
        reader = _canvas if lms == "canvas" else _moodle
        more, trouble = reader(path.name, entries, roster, course, path)
        found += more
        problems += trouble
    collected = []
    for (student, assignment), group in _grouped(found).items():
        winner, data, lost = _choose(group, max_member_bytes)
        problems += lost
        if winner is None:
            continue
        beside = {LMS_RECORD: json.dumps(asdict(winner.record), ensure_ascii=False).encode()}
        if winner.submitted is not None:
            beside[TIMESTAMP] = winner.submitted.isoformat(sep=" ").encode()
        try:
            filing.write_notebook(Path(submitted), student, assignment, data, beside, winner.entry.mtime)
        except Exception as e:  # a failed write, or a folder that is a symlink: refused
            problems.append(
                Problem(winner.entry.source, f"refused: cannot write it ({filing.describe(e)})", student, assignment)
            )
        else:
            collected.append(Collected(student, assignment, winner.entry.source))
    done = {(c.student, c.assignment) for c in collected}
    for p in problems:
        if (p.student, p.assignment) in done:
            p.student = p.assignment = None
    return sorted(collected, key=lambda c: (c.student, c.assignment)), problems


def _entries(folder: Path, shown: str, cap: int, course: Course) -> tuple[list[_Entry], list[Problem]]:
    """Every file of one assignment's download: plain files (in folders, to MAX_DEPTH) and the members of the
    zips at its top; never following a link, never opening a zip inside a zip."""
    entries: list[_Entry] = []
    problems: list[Problem] = []

    def walk(path: Path, rel: str, depth: int) -> None:
        for child in sorted(path.iterdir()):
            name = f"{rel}/{child.name}" if rel else child.name
            source = f"{shown}/{name}"
            if len(entries) >= MAX_ENTRIES:
                problems.append(Problem(source, f"ignored: more than {MAX_ENTRIES} files in one download"))
                return
            mode = child.lstat().st_mode
            if stat.S_ISLNK(mode):
                problems.append(Problem(source, "refused: a symlink (downloads must be plain files)"))
            elif stat.S_ISDIR(mode):
                if depth < MAX_DEPTH:
                    walk(child, name, depth + 1)
                else:
                    problems.append(Problem(source, f"ignored: folders nested more than {MAX_DEPTH} deep"))
            elif not stat.S_ISREG(mode):
                problems.append(Problem(source, "refused: not a regular file"))
            elif child.name.lower().endswith(".zip"):
                if depth == 0:
                    more, trouble = _zip_entries(child, source, cap, course)
                    entries.extend(more)
                    problems.extend(trouble)
                else:
                    problems.append(Problem(source, "ignored: a zip inside the download (not opened)"))
            else:
                read = functools.partial(filing.read_file, child)
                entries.append(_Entry(source, name, child.lstat().st_mtime, read))

    walk(folder, "", 0)
    return entries, problems


def _zip_entries(path: Path, shown: str, cap: int, course: Course) -> tuple[list[_Entry], list[Problem]]:
    if path.stat().st_size > filing.MAX_ARCHIVE_BYTES:
        return [], [Problem(shown, f"refused: a zip of more than {filing.MAX_ARCHIVE_BYTES} bytes")]
    try:
        with filing.open_regular(path) as f, zipfile.ZipFile(f) as archive:
            members = archive.infolist()
    except Exception as e:  # a hostile file can make zipfile raise almost anything
        return [], [Problem(shown, f"refused: not a readable zip ({filing.describe(e)})")]
    if len(members) > filing.MAX_MEMBERS:
        return [], [Problem(shown, f"refused: {len(members)} members, more than {filing.MAX_MEMBERS}")]
    total = sum(m.file_size for m in members)
    if total > filing.MAX_ARCHIVE_BYTES:
        return [], [Problem(shown, f"refused: {total} bytes uncompressed, more than {filing.MAX_ARCHIVE_BYTES}")]
    entries, problems = [], []
    for member in members:
        name = _member_name(member)
        source = f"{shown}:{name}"
        why = filing.path_problem(name) or (None if member.is_dir() else filing.type_problem(member))
        if why:
            problems.append(Problem(source, f"refused: {why}"))
            continue
        base = name.rsplit("/", 1)[-1]
        if member.is_dir() or name.startswith("__MACOSX/") or base.startswith("._") or base == ".DS_Store":
            continue
        if base.lower().endswith(".zip"):
            problems.append(Problem(source, "ignored: a zip inside the zip (not opened)"))
            continue
        if member.flag_bits & 0x1:
            problems.append(Problem(source, "refused: encrypted"))
            continue
        why = filing.size_problem(member.file_size, cap)
        if why and base.endswith(".ipynb"):
            problems.append(Problem(source, f"refused: {why}"))
            continue
        try:  # a zip's times are local times without a zone: the course's
            mtime = datetime(*member.date_time, tzinfo=course.timezone).timestamp()
        except ValueError:
            mtime = None
        entries.append(_Entry(source, name, mtime, functools.partial(filing.read_member, path, member)))
    return entries, problems


def _member_name(member: zipfile.ZipInfo) -> str:
    """A member's name as its zipper meant it: without the UTF-8 flag, zipfile reads the bytes as CP437, but
    Moodle's and most zippers' bytes are UTF-8 (non-ASCII names would not match the roster otherwise)."""
    name = member.filename
    if not member.flag_bits & 0x800:
        try:
            return name.encode("cp437").decode("utf-8")
        except UnicodeError:
            return name
    return name


def _named_for(filename: str, assignment: str) -> bool:
    """``<assignment>.ipynb``, or a copy of it renamed by the LMS (``-1``) or a browser (`` (1)``)."""
    stem = filename.rsplit("/", 1)[-1].removesuffix(".ipynb")
    return re.fullmatch(rf"{re.escape(assignment)}(?:-[0-9]+| \([0-9]+\))?", stem) is not None


# --- Canvas ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CanvasName:
    name: str  # Canvas's sanitized sortable name ("" under anonymous grading)
    late: bool
    user: str  # the user id, or "anon_<id>"
    attachment: str
    file: str  # the file's name as uploaded (with Canvas's "-1" for a re-upload)


def parse_canvas(base: str) -> CanvasName | None:
    """A Canvas download name (``lib/content_zipper.rb``: ``[name, "LATE", user id].join("_")``, then
    ``_<attachment id>_<file>``); the ids are the first two all-digit fields, as Canvas reads them back."""
    parts = base.split("_")
    for i in range(len(parts) - 2):
        anonymous = parts[i] == "anon" and i + 3 < len(parts) and parts[i + 2].isascii() and parts[i + 2].isdigit()
        if anonymous or (_digits(parts[i]) and _digits(parts[i + 1])):
            user = f"anon_{parts[i + 1]}" if anonymous else parts[i]
            attachment = parts[i + 2] if anonymous else parts[i + 1]
            rest = "_".join(parts[i + (3 if anonymous else 2) :])
            name = parts[:i]
            late = bool(name) and name[-1] == "LATE"
            return CanvasName("_".join(name[:-1] if late else name), late, user, attachment, rest) if rest else None
    return None


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _canvas(
    assignment: str, entries: list[_Entry], roster: Roster | None, course: Course, folder: Path
) -> tuple[list[_Found], list[Problem]]:
    found, problems = [], []
    for entry in entries:
        base = entry.name.rsplit("/", 1)[-1]
        parsed = parse_canvas(base)
        if parsed is None:
            problems.append(Problem(entry.source, "ignored: not named as Canvas names downloads (name_ID_ID_file)"))
            continue
        if not parsed.file.endswith(".ipynb"):
            problems.append(Problem(entry.source, "ignored: not a notebook"))
            continue
        if parsed.user.startswith("anon_"):
            problems.append(
                Problem(entry.source, "not collected: anonymous grading hides whose it is (kept in the downloads)")
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
            _Found(student, assignment, entry, _named_for(parsed.file, assignment), int(parsed.attachment), record)
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
        if len(info) >= 4 and _digits(info[1]) and info[2] == "assignsubmission":
            rest = "/".join(([info[4]] if len(info) == 5 and info[4] else []) + parts)
            return MoodleName(info[0], info[1], info[3], rest) if rest else None
    return None


@dataclass(frozen=True)
class _Sheet:
    identity: dict[str, str]  # "Full name", "Email address", "ID number"... of the participant
    submitted: datetime | None


def _worksheets(folder: Path, course: Course) -> tuple[dict[str, _Sheet], list[Problem]]:
    """Participant id -> its row of the grading worksheets (CSVs at the top of the assignment's folder)."""
    sheets, problems = {}, []
    for path in sorted(folder.glob("*.csv")):
        shown = f"{folder.name}/{path.name}"
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


def _moodle(
    assignment: str, entries: list[_Entry], roster: Roster | None, course: Course, folder: Path
) -> tuple[list[_Found], list[Problem]]:
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
        found.append(_Found(student, assignment, entry, named, None, record, sheet.submitted if sheet else None))
    return found, problems


# --- Choosing one notebook per student ------------------------------------------------------------


def _grouped(found: list[_Found]) -> dict[tuple[str, str], list[_Found]]:
    groups: dict[tuple[str, str], list[_Found]] = {}
    for f in found:
        groups.setdefault((f.student, f.assignment), []).append(f)
    return groups


def _choose(group: list[_Found], cap: int) -> tuple[_Found | None, bytes, list[Problem]]:
    """The one notebook of a student's group, its bytes, and the problems of the others."""
    student, assignment = group[0].student, group[0].assignment
    named = [f for f in group if f.named] or group
    problems = [
        Problem(f.entry.source, f"superseded: another file is named {assignment}.ipynb", student, assignment)
        for f in group
        if f not in named
    ]
    contents: dict[str, tuple[_Found, bytes]] = {}
    for f in named:
        try:
            data = filing.checked(f.entry.read(cap))
        except Exception as e:  # damaged, oversized once decompressed, unreadable
            problems.append(
                Problem(f.entry.source, f"refused: cannot read it ({filing.describe(e)})", student, assignment)
            )
            continue
        digest = hashlib.sha256(data).hexdigest()
        best = contents.get(digest)
        if best is None or (f.order or 0) > (best[0].order or 0):  # identical copies count once
            contents[digest] = (f, data)
    if not contents:
        return None, b"", problems
    ranked = sorted(contents.values(), key=lambda c: c[0].order if c[0].order is not None else -1)
    orders = [c[0].order for c in ranked]
    if len(ranked) > 1 and (None in orders or orders.count(orders[-1]) > 1):
        problems.append(
            Problem(
                ", ".join(c[0].entry.source for c in ranked),
                f"conflict: {len(ranked)} different notebooks for {student}/{assignment} that cannot be told apart; "
                "none collected",
                student,
                assignment,
            )
        )
        return None, b"", problems
    winner, data = ranked[-1]
    problems += [
        Problem(c[0].entry.source, f"superseded: {winner.entry.source} is a newer upload", student, assignment)
        for c in ranked[:-1]
    ]
    return winner, data, problems


# --- Exports --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grade:
    """One row of ``grades.csv``, as the export reads it back."""

    student: str
    assignment: str
    score: float  # final: after the late penalty
    raw: float
    penalty: float
    max_score: float
    status: str
    late: str  # the lateness, in words


def read_grades(path: Path) -> tuple[list[Grade], list[str]]:
    """The rows of ``grades.csv`` (written by ``make autograde``); rows that do not read are reported."""
    grades, problems = [], []
    with open(path, encoding="utf-8", newline="") as stream:
        for number, row in enumerate(csv.DictReader(stream), start=2):
            try:
                score = float(row["score"])
                grades.append(
                    Grade(
                        row["student"],
                        row["assignment"],
                        score,
                        float(row.get("raw_score") or score),
                        float(row.get("late_penalty") or 0),
                        float(row["max_score"]),
                        row["status"],
                        row.get("late") or "",
                    )
                )
            except (KeyError, TypeError, ValueError) as error:
                problems.append(
                    f"grades.csv line {number} does not read ({type(error).__name__}: {error}): not exported"
                )
    return grades, problems


def export(root: Path, lms: str, course: Course, assignments: list[str], roster: Roster | None) -> list[str]:
    """``exports/<lms>-grades.csv`` and ``exports/<lms>-feedback/<assignment>.zip`` from ``grades.csv`` and
    ``feedback/``; returns what the instructor should know (students left out, feedback not packed)."""
    grades, report = read_grades(root / "grades.csv")
    out = root / "exports"
    out.mkdir(exist_ok=True)
    by = {(g.student, g.assignment): g for g in grades}
    graded = sorted({g.assignment for g in grades} & set(assignments))
    people = roster.people if roster is not None and roster.people else []
    if not people:
        report.append(f"no usable {lms} roster: rows carry the student id only ({course.lms.id_column})")
        people = [
            Person(s, "", "", {course.lms.id_column or "SIS Login ID": s}) for s in sorted({g.student for g in grades})
        ]
    outsiders = sorted({g.student for g in grades} - {p.student for p in people})
    if outsiders:
        report.append(f"graded but on no roster row, not exported: {', '.join(outsiders)}")
    columns = {a: _lms_column(a, course, roster, lms) for a in graded}
    maxima = {a: max((g.max_score for g in grades if g.assignment == a), default=0.0) for a in graded}
    if lms == "canvas":
        header = list(CANVAS_IDENTITY) + [columns[a] for a in graded]
        rows = [["    Points Possible", "", "", "", ""] + [f"{maxima[a]:g}" for a in graded]]
        for p in people:
            rows.append([p.identity.get(c, p.name if c == "Student" else "") for c in CANVAS_IDENTITY])
            rows[-1] += [_score(by.get((p.student, a))) for a in graded]
    else:
        identity = [c for c in MOODLE_IDENTITY if c in (roster.header if roster else [])] or [course.lms.id_column]
        header = identity + [h for a in graded for h in (columns[a], f"Feedback: {columns[a]}")]
        rows = []
        for p in people:
            rows.append([p.identity.get(c, "") for c in identity])
            for a in graded:
                g = by.get((p.student, a))
                rows[-1] += [_score(g), _comment(g)]
    _write_csv(out / f"{lms}-grades.csv", header, rows)
    report.append(f"wrote exports/{lms}-grades.csv: {len(people)} students, {len(graded)} assignments")
    for a in graded:
        packed, missing = _feedback_zip(root, out / f"{lms}-feedback" / f"{a}.zip", lms, a, [p.student for p in people])
        report.append(f"wrote exports/{lms}-feedback/{a}.zip: {packed} feedback pages")
        if missing:
            report.append(f"  {a}: no {lms} download recorded, feedback not packed: {', '.join(missing)}")
    return report


def _lms_column(assignment: str, course: Course, roster: Roster | None, lms: str) -> str:
    """The gradebook column of an assignment: ``[lms.columns]``, else the roster export's column named after it
    (Canvas: ``<name> (<id>)``), else its name (Canvas then makes a new assignment; Moodle asks at import)."""
    if assignment in course.lms.columns:
        return course.lms.columns[assignment]
    for column in roster.header if roster else []:
        if re.fullmatch(rf"(?:Assignment: )?{re.escape(assignment)}(?: \([^)]*\))?", column):
            return column
    return assignment if lms == "canvas" else f"Assignment: {assignment}"


def _score(grade: Grade | None) -> str:
    return "" if grade is None else f"{grade.score:g}"


def _comment(grade: Grade | None) -> str:
    if grade is None:
        return ""
    text = f"{grade.raw:g} / {grade.max_score:g} before any late penalty; late penalty {grade.penalty:g}"
    return text + (f" ({grade.late})" if grade.late else "")


def _feedback_zip(root: Path, path: Path, lms: str, assignment: str, students: list[str]) -> tuple[int, list[str]]:
    """Pack each student's feedback page under the name the LMS reads back; returns (packed, students without
    a recorded download)."""
    path.parent.mkdir(exist_ok=True)
    packed, missing = 0, []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for student in students:
            page = root / "feedback" / student / assignment / f"{assignment}.html"
            if not page.is_file() or page.is_symlink():
                continue
            record = Record.read(root / "submitted" / student / assignment)
            if record is None or record.lms != lms or not _digits(record.user) or not _digits(record.attachment or "0"):
                missing.append(student)
                continue
            if lms == "canvas":  # Canvas reads the first two all-digit fields as user and attachment ids
                name = record.name if re.fullmatch(r"[^\W\d_]\w*", record.name) else "student"
                member = f"{name}_{record.user}_{record.attachment}_{assignment}-feedback.html"
            else:  # Moodle reads <name>_<participant id>_<subtype>_<plugin>: the name may hold no "_" or "/"
                name = re.sub(r"[\x00-\x1f_/\\]+", " ", record.name).strip() or "Participant"
                member = f"{name}_{record.user}_assignfeedback_file_/{assignment}-feedback.html"
            archive.writestr(member, page.read_bytes())
            packed += 1
    _write_bytes(path, buffer.getvalue())
    return packed, missing


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(header)
    writer.writerows([[_cell(c) for c in row] for row in rows])
    _write_bytes(path, text.getvalue().encode("utf-8"))


def _cell(value: str) -> str:
    """A cell that no spreadsheet runs as a formula (the LMS's names are people's, not ours)."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") and not re.fullmatch(r"-?[0-9.]+", value) else value


def _write_bytes(path: Path, data: bytes) -> None:
    if path.is_symlink():
        path.unlink()
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_bytes(data)
    os.replace(tmp, path)
