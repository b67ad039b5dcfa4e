"""Canvas's and Moodle's downloads and rosters (README.md, "Canvas and Moodle"): each file's owner comes from the
platform's name for it, never from its content, and a download's limits are each owner's."""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import re
import stat
import unicodedata
import zipfile
from collections import namedtuple
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path

from word2bert_grader.intake import downloads
from word2bert_grader.intake.course import Course
from word2bert_grader.intake.deadlines import LMS_RECORD, TIMESTAMP
from word2bert_grader.intake.downloads import Candidate, Problem

CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_IDENTITY = ("First name", "Surname", "ID number", "Email address")
MOODLE_TIME_FORMATS = ("%A, %d %B %Y, %I:%M %p", "%A, %d %B %Y, %H:%M", "%d %B %Y, %I:%M %p")
MAX_SHEET_BYTES = 20 * 2**20  # a grading worksheet
# Canvas's names and file names are 255 characters at most: a longer one is not Canvas's (and its readings add up)
MAX_CANVAS_NAME = 1024
MAX_DEPTH = 4  # folders below an assignment's download folder
MAX_OWNER_FILES = downloads.MAX_MEMBERS  # an owner's files in one download (notebooks first)
MAX_OWNER_BYTES = downloads.MAX_ARCHIVE_BYTES  # decompressed
MAX_ENTRIES = 200_000  # files and members of one assignment's download kept (each owner's within their limits)
MAX_CLASS_ZIP_BYTES = 32 * 2**30  # the platform's zip itself (read a member at a time, each within its own limit)
SEVERAL_USERS = "several users"  # the owner of every Canvas name that reads as several (collected for none)
CanvasName = namedtuple("CanvasName", "name late user attachment file")  # user: an id or "anon_<id>"
MoodleName = namedtuple("MoodleName", "name participant plugin file")  # file: the path in the participant's folder


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
    problems: list[str] = field(default_factory=list)

    @property
    def students(self) -> set[str]:
        return {p.student for p in self.people}

    def find(self, column: str, value: str) -> list[Person]:
        """The people whose ``column`` (an identity column, or "name") is ``value``, as people read names."""
        key = _folded(value)
        return [
            p for p in self.people if key and _folded(p.name if column == "name" else p.identity.get(column, "")) == key
        ]


def read_roster(path: Path, lms: str, id_column: str) -> Roster:
    """The roster of an LMS's gradebook export; a row without a usable id is said and left out."""
    roster, shown = Roster(lms), f"roster {path.name}"
    try:
        if not path.is_file():  # one plain check (a FIFO would be waited on for ever)
            raise ValueError("not a file")
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))
    except (OSError, UnicodeError, ValueError, csv.Error) as error:
        roster.problems.append(f"{shown} cannot be read ({type(error).__name__}: {error})")
        return roster
    roster.header = header = [h.strip() for h in rows[0]] if rows else []
    missing = sorted(({id_column, "ID"} if lms == "canvas" else {id_column}) - set(header))
    if not rows or missing:
        what = f"is not {lms.capitalize()}'s gradebook export: no column {', '.join(missing)}" if rows else "is empty"
        roster.problems.append(f"{shown} {what}")
        return roster
    for number, row in enumerate(rows[1:], start=2):
        values = dict(zip(header, (cell.strip() for cell in row), strict=False))
        if not any(values.values()) or (lms == "canvas" and values.get("Student") == "Points Possible"):
            continue  # an empty row; Canvas's row of the points possible
        first_last = " ".join(filter(None, (values.get("First name"), values.get("Surname"))))
        name, student = values.get("Student", "") if lms == "canvas" else first_last, values.get(id_column, "")
        why = "has no " + id_column if not student else downloads.id_problem(student)  # ids become folder names
        if why:
            roster.problems.append(f"{shown} line {number} ({name or 'no name'}): the id {why}: left out")
            continue
        identity = {k: values[k] for k in (CANVAS_IDENTITY if lms == "canvas" else MOODLE_IDENTITY) if k in values}
        roster.people.append(Person(student, name, values.get("ID", "") if lms == "canvas" else "", identity))
    return roster


def _folded(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())  # composed Unicode, case and spaces aside


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
        with contextlib.suppress(OSError, ValueError, TypeError):
            data = json.loads((folder / LMS_RECORD).read_text(encoding="utf-8"))
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        return None


def canvas_readings(base: str) -> list[CanvasName]:
    """Every way to read ``base`` as Canvas names downloads (``name_[LATE_]user_attachment_file``; README.md)."""
    parts, readings = base.split("_") if len(base) <= MAX_CANVAS_NAME else [], []
    for i in range(len(parts) - 2):
        anonymous = parts[i] == "anon" and i + 3 < len(parts) and all_digits(parts[i + 2])
        if anonymous or (all_digits(parts[i]) and all_digits(parts[i + 1])):
            user = f"anon_{parts[i + 1]}" if anonymous else parts[i]
            attachment = parts[i + 2] if anonymous else parts[i + 1]
            rest, name = "_".join(parts[i + (3 if anonymous else 2) :]), parts[:i]
            late = bool(name) and name[-1] == "LATE"
            if rest:
                readings.append(CanvasName("_".join(name[:-1] if late else name), late, user, attachment, rest))
    return readings


def parse_canvas(base: str) -> CanvasName | None:
    """A Canvas download name read as Canvas reads it back: its first reading."""
    return next(iter(canvas_readings(base)), None)


def canvas_users(base: str) -> list[str]:
    """The users a Canvas download name reads as: one for an honest name (anonymous grading's ``anon_`` ids count)."""
    return sorted({r.user for r in canvas_readings(base)})


def canvas_owner(name: str) -> str | None:
    """Whose limits a file counts against: the users of the first part of its path that names some (an upload)."""
    users = next(filter(None, map(canvas_users, name.split("/"))), [])
    return SEVERAL_USERS if len(users) > 1 else next(iter(users), None)


def all_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _canvas(assignment: str, entries: list[Candidate], roster: Roster | None, course: Course, folder: Path):
    found, problems, people = [], [], roster.people if roster is not None else []
    for entry in entries:
        base = entry.name.rsplit("/", 1)[-1]
        readings = canvas_readings(base)
        parsed, users = next(iter(readings), None), sorted({r.user for r in readings})
        person = next((p for p in people if parsed and p.lms_id == parsed.user), None)
        if any(canvas_users(part) for part in entry.name.split("/")[:-1]):  # an opened upload: its names are his
            why = "not collected: in a folder named as a student's upload (an opened zip; kept in the downloads)"
        elif parsed is None:
            why = "ignored: not named as Canvas names downloads (name_ID_ID_file)"
        elif not parsed.file.endswith(".ipynb"):
            why = "ignored: not a notebook"
        elif parsed.user.startswith("anon_"):
            why = "not collected: anonymous grading hides whose it is (kept in the downloads)"
        elif len(users) > 1:  # another user's ids in a part of the student's choosing: neither reading can be trusted
            why = f"not collected: the name reads as Canvas users {' and '.join(users)} (a display name or a file name "
            why += "holding another user's ids; kept in the downloads: grade it by hand)"
        elif len({(r.late, r.attachment, r.file) for r in readings}) > 1:  # her own ids can move, and drop, LATE
            why = f"not collected: the name reads in {len(readings)} ways for one user (her own ids in a display name "
            why += "or a file name can hide a LATE mark; kept in the downloads: grade it by hand)"
        elif people and person is None:
            why = f"not collected: Canvas user {parsed.user} is on no roster row (kept in the downloads)"
        else:
            student = person.student if person else f"canvas-{parsed.user}"  # no usable roster: Canvas's id, said so
            record = Record("canvas", entry.source, parsed.user, parsed.name, parsed.attachment, parsed.late)
            found.append(_owned(entry, student, assignment, parsed.file, (int(parsed.attachment),), record))
            continue
        problems.append(Problem(entry.source, why))
    return found, problems


def parse_moodle(path: str) -> MoodleName | None:
    """A path in Moodle's "Download all submissions", read as Moodle's own feedback import reads it."""
    parts = path.split("/")
    while parts:
        info = parts.pop(0).split("_", 4)
        if len(info) >= 4 and all_digits(info[1]) and info[2] == "assignsubmission":
            rest = "/".join(([info[4]] if len(info) == 5 and info[4] else []) + parts)
            return MoodleName(info[0], info[1], info[3], rest) if rest else None
    return None


def _worksheets(folder: Path, course: Course) -> tuple[dict[str, tuple[dict, datetime | None]], list[Problem]]:
    """Participant id -> (identity, submission time), from the grading worksheets (not from students' uploads)."""
    sheets, problems = {}, []
    for path in sorted(folder.glob("*.csv")):
        shown = f"{folder.name}/{path.name}"
        try:
            if parse_moodle(path.name) is not None:
                raise downloads.Refused("a student's uploaded file, not the grading worksheet")
            rows = list(csv.DictReader(io.StringIO(downloads.read_file(path, MAX_SHEET_BYTES).decode("utf-8-sig"))))
            if not rows or "Identifier" not in rows[0]:
                raise downloads.Refused("not Moodle's grading worksheet (no Identifier column)")
        except Exception as e:
            problems.append(Problem(shown, f"ignored: {downloads.reason(e, 'read')}"))
            continue
        for number, row in enumerate(rows, start=2):
            ident = re.search(r"([0-9]+)\s*$", str(row.get("Identifier") or ""))
            stamp = str(row.get("Last modified (submission)") or "").strip()
            when = None
            for form in MOODLE_TIME_FORMATS:
                with contextlib.suppress(ValueError):
                    when = when or datetime.strptime(stamp, form).replace(tzinfo=course.timezone)
            if ident is None:
                problems.append(Problem(shown, f"line {number}: no participant id in {row.get('Identifier')!r}"))
                continue
            if stamp not in ("", "-") and when is None:
                why = f"cannot read the time {stamp!r}: the file's time is used"
                problems.append(Problem(shown, f"line {number}: {why}"))
            identity = {k: str(v).strip() for k, v in row.items() if isinstance(k, str) and isinstance(v, str)}
            sheets[ident[1]] = (identity, when)
    return sheets, problems


def _moodle(assignment: str, entries: list[Candidate], roster: Roster | None, course: Course, folder: Path):
    (sheets, problems), found = _worksheets(folder, course), []
    for entry in entries:
        if "/" not in entry.name and entry.name.endswith(".csv"):
            continue  # a worksheet (read above)
        parsed = parse_moodle(entry.name)
        if parsed is None or parsed.plugin != "file" or not parsed.file.endswith(".ipynb"):
            layout = "not in Moodle's download layout (Name_ID_assignsubmission_)"
            problems.append(Problem(entry.source, f"ignored: {'not a notebook' if parsed else layout}"))
            continue
        identity, when = sheets.get(parsed.participant, ({}, None))
        student, why = _moodle_person(parsed, identity, roster, course.lms.id_column)
        if student is None:
            problems.append(Problem(entry.source, f"not collected: {why} (kept in the downloads)"))
            continue
        record = Record("moodle", entry.source, parsed.participant, parsed.name)
        found.append(_owned(entry, student, assignment, parsed.file, None, record, when))
    return found, problems


def _moodle_person(parsed: MoodleName, identity: dict, roster: Roster | None, id_column: str | None):
    """(student or None, why not) of a Moodle participant: by e-mail, ID number or name on the roster."""
    if roster is None or not roster.people:
        value = identity.get(id_column or "", "")
        if value and not downloads.id_problem(value):
            return value, ""
        return None, "no usable roster, and no worksheet row with the student's id"
    for column in ("Email address", "ID number"):
        if len(people := roster.find(column, identity.get(column, ""))) == 1:
            return people[0].student, ""
    name = identity.get("Full name", parsed.name)
    if len(people := roster.find("name", name)) == 1:
        return people[0].student, ""
    if people:
        return None, f"{len(people)} roster rows are named {name!r}: put the grading worksheet beside the download"
    return None, f"{name!r} (participant {parsed.participant}) is on no roster row"


def _owned(entry: Candidate, student, assignment, file: str, order, record: Record, when=None) -> Candidate:
    """An entry whose owner is known, with the files written beside it; named: ``<assignment>.ipynb`` or a copy."""
    stem = file.rsplit("/", 1)[-1].removesuffix(".ipynb")
    named = re.fullmatch(rf"{re.escape(assignment)}(?:-[0-9]+| \([0-9]+\))?", stem) is not None
    beside = {LMS_RECORD: json.dumps(asdict(record), ensure_ascii=False).encode()}
    beside |= {TIMESTAMP: when.isoformat(sep=" ").encode()} if when else {}
    return replace(entry, student=student, assignment=assignment, order=order, named=named, beside=beside)


def collect(downloads_dir: Path, submitted: Path, assignments, lms: str, roster: Roster | None, course: Course):
    """Collect ``downloads_dir/<assignment>/`` of every assignment into ``submitted``."""
    names = downloads.checked_assignments(assignments)
    moodle_owner = lambda name: getattr(parse_moodle(name), "participant", None)  # noqa: E731
    owner, reader = (canvas_owner, _canvas) if lms == "canvas" else (moodle_owner, _moodle)
    candidates, problems = [], []
    for path in sorted(Path(downloads_dir).iterdir()):
        if path.name not in names or path.is_symlink() or not path.is_dir():
            problems.append(Problem(path.name, f"ignored: not a folder named after an assignment ({', '.join(names)})"))
            continue
        entries, trouble = _entries(path, downloads.MAX_MEMBER_BYTES, course, owner)
        found, more = reader(path.name, entries, roster, course, path)
        candidates += found
        problems += trouble + more
    return downloads.settle(candidates, problems, Path(submitted), downloads.MAX_MEMBER_BYTES, copies_once=True)


def _entries(folder: Path, cap: int, course: Course, owner) -> tuple[list[Candidate], list[Problem]]:
    """Every file of one assignment's download and of the platform's zips at its top, within each owner's limits."""
    entries, problems, read = [], [], {}  # read: (owner, notebook or not) -> how many

    def keep(source: str, name: str, mtime: float | None, reader, size: int) -> None:
        """An owner's files beyond MAX_OWNER_FILES are set aside as they are read: they cost no one else theirs."""
        entry = Candidate("", "", source, None, reader, mtime, name=name, size=size)
        key = (owner(name), name.endswith(".ipynb"))
        read[key] = read.get(key, 0) + 1
        if read[key] > MAX_OWNER_FILES:
            problems.append(_beyond(entry, key[0]))
        elif len(entries) >= MAX_ENTRIES:
            problems.append(Problem(source, f"ignored: more than {MAX_ENTRIES} files in one download"))
        else:
            entries.append(entry)

    def walk(path: Path, rel: str, depth: int) -> None:
        for child in sorted(path.iterdir()):
            name = f"{rel}/{child.name}" if rel else child.name
            source, info = f"{folder.name}/{name}", child.lstat()
            if stat.S_ISLNK(info.st_mode):
                problems.append(Problem(source, "refused: a symlink (downloads must be plain files)"))
            elif stat.S_ISDIR(info.st_mode) and depth < MAX_DEPTH:
                walk(child, name, depth + 1)
            elif stat.S_ISDIR(info.st_mode):
                problems.append(Problem(source, f"ignored: folders nested more than {MAX_DEPTH} deep"))
            elif not stat.S_ISREG(info.st_mode):
                problems.append(Problem(source, "refused: not a regular file"))
            elif not child.name.lower().endswith(".zip"):
                keep(source, name, info.st_mtime, functools.partial(downloads.read_file, child), info.st_size)
            elif depth or owner(name) is not None:
                why = "a zip inside the download" if depth else "a student's uploaded zip"
                problems.append(Problem(source, f"ignored: {why} (not opened)"))
            else:
                problems.extend(_zip_entries(child, source, cap, course, keep))

    walk(folder, "", 0)
    kept, used = [], {}  # within each owner's limits: notebooks first, then in name order
    for i in sorted(range(len(entries)), key=lambda i: not entries[i].name.endswith(".ipynb")):
        who = owner(entries[i].name)
        files, size = used.get(who, (0, 0))
        if files >= MAX_OWNER_FILES or size + entries[i].size > MAX_OWNER_BYTES:
            problems.append(_beyond(entries[i], who))
        else:
            used[who] = (files + 1, size + entries[i].size)
            kept.append(i)
    return [entries[i] for i in sorted(kept)], problems


def _beyond(entry: Candidate, owner: str | None) -> Problem:
    whose = {None: "files named as no one's", SEVERAL_USERS: "files named as several users"}.get(owner)
    whose, limit = whose or f"user {owner}'s files", f"{MAX_OWNER_FILES} files, {MAX_OWNER_BYTES} bytes"
    return Problem(entry.source, f"ignored: {whose} pass one student's limit in a download ({limit})")


def _zip_entries(path: Path, shown: str, cap: int, course: Course, keep) -> list[Problem]:
    """The platform's zip's members, each given to ``keep``; returns the problems of the others."""
    if path.stat().st_size > MAX_CLASS_ZIP_BYTES:
        return [Problem(shown, f"refused: a zip of more than {MAX_CLASS_ZIP_BYTES} bytes")]
    try:
        with downloads.open_regular(path) as f, zipfile.ZipFile(f) as archive:
            members = archive.infolist()
    except Exception as e:  # a hostile file can make zipfile raise almost anything
        return [Problem(shown, f"refused: not a readable zip ({downloads.describe(e)})")]
    problems = []
    for member in members:
        name = member.filename
        if not member.flag_bits & 0x800:  # no UTF-8 flag: zipfile read CP437, but most zippers' bytes are UTF-8
            with contextlib.suppress(UnicodeError):
                name = name.encode("cp437").decode("utf-8")
        why = downloads.member_problem(member, name)
        if why is None and name.endswith(".ipynb") and downloads.size_problem(member.file_size, cap):
            why = f"refused: {downloads.size_problem(member.file_size, cap)}"
        if why:
            problems.append(Problem(f"{shown}:{name}", why))
        elif why is None:
            mtime = None
            with contextlib.suppress(ValueError):  # a zip's times are local times without a zone: the course's
                mtime = datetime(*member.date_time, tzinfo=course.timezone).timestamp()
            read = functools.partial(downloads.read_member, path, member)
            keep(f"{shown}:{name}", name, mtime, read, member.file_size)
    return problems


# What make autograde learns first: the roster's students (None: no roster), the downloads' problems, roster notes
Intake = namedtuple("Intake", "allowed problems notes")


def intake(
    root: Path, assignments: list[str], downloads_dir: Path | None, roster: Path | None, lms: str | None, course: Course
) -> Intake:
    """Read the roster and collect the downloads, in the LMS's formats (``lms``) or the plain ones."""
    notes, people, allowed, problems = [], None, None, []
    if lms:
        people = read_roster(roster, lms, course.lms.id_column or "") if roster else None
        notes += people.problems if people else [f"no {lms} roster given: every download's owner is taken as is"]
        allowed = people.students if people and people.people else None
    elif roster:
        try:
            allowed = downloads.read_roster(roster)
        except (OSError, UnicodeError, ValueError, csv.Error) as error:
            notes.append(f"roster {roster} cannot be read ({error}): every student is graded")
    if downloads_dir is not None and lms:
        _, problems = collect(downloads_dir.resolve(), root / "submitted", assignments, lms, people, course)
    elif downloads_dir is not None:
        _, problems = downloads.collect(downloads_dir.resolve(), root / "submitted", assignments, allowed)
    return Intake(allowed, problems, notes)
