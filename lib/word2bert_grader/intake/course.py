"""``course.toml``: the course's calendar and its learning platform, read once and checked.

One file in the course root, beside ``nbgrader_config.py`` (every section is optional)::

    timezone = "Europe/Berlin"          # IANA name: how times without an offset are read

    [late]                              # nbgrader's LateSubmissionPlugin: "none", "zero" or "per_hour"
    policy = "per_hour"
    points_per_hour = 1.0               # per_hour: points per hour late, hours rounded (nbgrader's example plugin)

    [due]                               # a TOML date-time per assignment; without an offset, in `timezone`
    01-word2vec = 2026-02-06T23:59:00
    03-gpt = 2026-03-06T23:59:00+01:00

    [extensions.alice]                  # per student: hours more, or a date-time of their own
    01-word2vec = 48
    03-gpt = 2026-03-10T12:00:00

    [lms]
    name = "canvas"                     # or "moodle": the formats of `--downloads`, rosters and `make export`
    roster = "roster.csv"               # the LMS's gradebook export (relative to the course root)
    student_id = "SIS Login ID"         # its column that holds our student ids (Moodle: "Email address")

    [lms.columns]                       # the LMS's gradebook column of an assignment, where our name is not it
    01-word2vec = "Exercise 1: word2vec (123456)"

The file is the instructor's, but a typo must not stop a class from being graded: every value is checked, and
what is wrong is left out and said in :attr:`Course.problems` (a file that is not TOML at all leaves every
default in place, with that problem).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tomllib

FILE = "course.toml"
POLICIES = ("none", "zero", "per_hour")
LMS_NAMES = ("canvas", "moodle")
DEFAULT_ID_COLUMN = {"canvas": "SIS Login ID", "moodle": "Email address"}


@dataclass(frozen=True)
class LatePolicy:
    method: str = "none"  # one of POLICIES
    points_per_hour: float = 1.0


@dataclass(frozen=True)
class LmsSettings:
    name: str | None = None  # one of LMS_NAMES, or None: downloads named <student>_<assignment>.ipynb
    roster: Path | None = None
    student_id: str | None = None  # the roster's column of student ids (None: the LMS's default)
    columns: dict[str, str] = field(default_factory=dict)  # assignment -> the LMS's gradebook column

    @property
    def id_column(self) -> str | None:
        return self.student_id or DEFAULT_ID_COLUMN.get(self.name or "")


@dataclass
class Course:
    timezone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    due: dict[str, datetime] = field(default_factory=dict)  # assignment -> due date (aware)
    extensions: dict[tuple[str, str], datetime | timedelta] = field(default_factory=dict)  # (student, assignment)
    late: LatePolicy = field(default_factory=LatePolicy)
    lms: LmsSettings = field(default_factory=LmsSettings)
    problems: list[str] = field(default_factory=list)

    def for_lms(self, name: str | None) -> Course:
        """This course as graded for the LMS ``name`` (the command's ``LMS=``; None: course.toml's): its roster's
        id column then defaults to that LMS's, also where course.toml names no LMS."""
        return replace(self, lms=replace(self.lms, name=name)) if name else self

    def due_for(self, student: str, assignment: str) -> datetime | None:
        """The student's due date of the assignment: their extension's, or everyone's."""
        due = self.due.get(assignment)
        extension = self.extensions.get((student, assignment))
        if isinstance(extension, datetime):
            return extension
        if extension is not None and due is not None:
            return due + extension
        return due

    def check_students(self, students: set[str]) -> None:
        """Report extensions for students who are neither on the roster nor among the submissions."""
        for student in sorted({s for s, _ in self.extensions} - students):
            self.problems.append(f"{FILE}: an extension for {student!r}, who is not in this class (ignored)")
            self.extensions = {k: v for k, v in self.extensions.items() if k[0] != student}


def load(root: Path, assignments: list[str]) -> Course:
    """``root/course.toml`` checked against the course's assignments; a missing file is the defaults."""
    course = Course()
    path = root / FILE
    if not path.is_file():
        return course
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, tomllib.TOMLDecodeError) as error:
        course.problems.append(f"{FILE} cannot be read ({error}): no due dates, penalties or LMS settings applied")
        return course
    problems = course.problems
    known = {"timezone", "late", "due", "extensions", "lms"}
    problems += [f"{FILE}: unknown setting {k!r} (ignored)" for k in sorted(set(data) - known)]
    zone = data.get("timezone", "UTC")
    try:
        course.timezone = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        problems.append(f"{FILE}: timezone {zone!r} is not an IANA time zone name: UTC is used")
    course.late = _policy(_table(data, "late", problems), problems)
    for assignment, value in _table(data, "due", problems).items():
        if assignment not in assignments:
            problems.append(f"{FILE}: a due date for {assignment!r}, which is no assignment (ignored)")
            continue
        when = _datetime(value, course.timezone)
        if when is None:
            problems.append(f"{FILE}: due date of {assignment} is not a date-time: {value!r} (ignored)")
        else:
            course.due[assignment] = when
    for student, table in _table(data, "extensions", problems).items():
        if not isinstance(table, dict):
            problems.append(f"{FILE}: extensions of {student!r} are not a table (ignored)")
            continue
        for assignment, value in table.items():
            extension = _extension(value, course.timezone)
            if assignment not in assignments:
                problems.append(f"{FILE}: an extension of {student!r} for {assignment!r}, which is no assignment")
            elif extension is None:
                problems.append(f"{FILE}: extension of {student!r} for {assignment} is neither hours nor a date-time")
            else:
                course.extensions[student, assignment] = extension
    course.lms = _lms(root, _table(data, "lms", problems), assignments, problems)
    return course


def _table(data: dict, name: str, problems: list[str]) -> dict:
    value = data.get(name, {})
    if isinstance(value, dict):
        return value
    problems.append(f"{FILE}: [{name}] is not a table (ignored)")
    return {}


def _policy(table: dict, problems: list[str]) -> LatePolicy:
    method = table.get("policy", "none")
    if method not in POLICIES:
        problems.append(f"{FILE}: late policy {method!r} is none of {', '.join(POLICIES)}: no penalty applied")
        method = "none"
    rate = table.get("points_per_hour", 1.0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate < float("inf"):
        problems.append(f"{FILE}: points_per_hour {rate!r} is not a number of points >= 0: 1 is used")
        rate = 1.0
    return LatePolicy(method, float(rate))


def _datetime(value, zone: ZoneInfo) -> datetime | None:
    """A TOML date-time (or date: the end of that day) as an aware date-time, in ``zone`` if it has no offset."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=zone)
    if isinstance(value, date):
        return datetime.combine(value, time(23, 59, 59), tzinfo=zone)
    return None


def _extension(value, zone: ZoneInfo) -> datetime | timedelta | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and 0 <= value < 24 * 366:
        return timedelta(hours=value)
    return _datetime(value, zone)


def _lms(root: Path, table: dict, assignments: list[str], problems: list[str]) -> LmsSettings:
    name = table.get("name")
    if name is not None and name not in LMS_NAMES:
        problems.append(f"{FILE}: [lms] name {name!r} is none of {', '.join(LMS_NAMES)} (ignored)")
        name = None
    roster = table.get("roster")
    if roster is not None and not isinstance(roster, str):
        problems.append(f"{FILE}: [lms] roster is not a path (ignored)")
        roster = None
    student_id = table.get("student_id")
    if student_id is not None and not isinstance(student_id, str):
        problems.append(f"{FILE}: [lms] student_id is not a column name (ignored)")
        student_id = None
    columns = {}
    for assignment, column in _table(table, "columns", problems).items():
        if assignment in assignments and isinstance(column, str):
            columns[assignment] = column
        else:
            problems.append(f"{FILE}: [lms.columns] {assignment!r} = {column!r} (ignored)")
    return LmsSettings(name, root / roster if roster else None, student_id, columns)
