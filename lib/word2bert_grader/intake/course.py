"""``course.toml``, the course's calendar and platform (the format: the instructors' page), checked by pydantic: what
is wrong is said in :attr:`Course.problems` and left out, the rest applied, so that a typo never stops a grading."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tomllib
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

FILE = "course.toml"
DEFAULT_ID_COLUMN = {"canvas": "SIS Login ID", "moodle": "Email address"}
_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)


class LatePolicy(BaseModel):
    """nbgrader's LateSubmissionPlugin: "none", "zero", or "per_hour" (points per hour late, hours rounded)."""

    model_config = _STRICT
    method: Literal["none", "zero", "per_hour"] = Field("none", validation_alias="policy")
    points_per_hour: float = Field(1.0, ge=0, allow_inf_nan=False)


class LmsSettings(BaseModel):
    model_config = _STRICT
    name: Literal["canvas", "moodle"] | None = None  # None: downloads named <student>_<assignment>.ipynb
    roster: Path | None = Field(None, strict=False)  # the LMS's gradebook export (relative to the course root)
    student_id: str | None = None  # the roster's column of student ids (None: the LMS's default)
    columns: dict[str, str] = {}  # assignment -> the LMS's gradebook column

    @property
    def id_column(self) -> str | None:
        return self.student_id or DEFAULT_ID_COLUMN.get(self.name or "")


def _zone(name: str) -> str:
    try:
        return ZoneInfo(name).key
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("not an IANA time zone name") from None


def _moment(value: Any) -> datetime | date:
    if isinstance(value, date):  # TOML's date-times and dates
        return value
    raise ValueError("not a date-time")


def _extension(value: Any) -> float | datetime | date:
    if isinstance(value, date) or (type(value) in (int, float) and 0 <= value < 24 * 366):  # hours more
        return value
    raise ValueError("neither hours nor a date-time")


class _File(BaseModel):
    model_config = _STRICT
    timezone: Annotated[str, AfterValidator(_zone)] = "UTC"  # how every time without an offset is read
    late: LatePolicy = LatePolicy()
    due: dict[str, Annotated[Any, AfterValidator(_moment)]] = {}
    extensions: dict[str, dict[str, Annotated[Any, AfterValidator(_extension)]]] = {}  # student -> assignment -> ...
    lms: LmsSettings = LmsSettings()


@dataclass
class Course:
    timezone: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    due: dict[str, datetime] = field(default_factory=dict)  # assignment -> due date (aware)
    extensions: dict[tuple[str, str], datetime | timedelta] = field(default_factory=dict)  # (student, assignment)
    late: LatePolicy = field(default_factory=LatePolicy)
    lms: LmsSettings = field(default_factory=LmsSettings)
    problems: list[str] = field(default_factory=list)

    def for_lms(self, name: str | None) -> Course:
        """This course as graded for the command's ``LMS=``: the roster's id column then defaults to that LMS's."""
        return replace(self, lms=self.lms.model_copy(update={"name": name})) if name else self

    def due_for(self, student: str, assignment: str) -> datetime | None:
        """The student's due date of the assignment: their extension's, or everyone's."""
        due, extension = self.due.get(assignment), self.extensions.get((student, assignment))
        if isinstance(extension, datetime):
            return extension
        return due + extension if extension is not None and due is not None else due

    def check_students(self, students: set[str]) -> None:
        """Report extensions for students who are neither on the roster nor among the submissions."""
        for student in sorted({s for s, _ in self.extensions} - students):
            self.problems.append(f"{FILE}: an extension for {student!r}, who is not in this class (ignored)")
            self.extensions = {k: v for k, v in self.extensions.items() if k[0] != student}


def load(root: Path, assignments: list[str]) -> Course:
    """``root/course.toml`` checked against the course's assignments; a missing file is the defaults."""
    course, path = Course(), root / FILE
    if not path.is_file():
        return course
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, tomllib.TOMLDecodeError) as error:
        course.problems.append(f"{FILE} cannot be read ({error}): no due dates, penalties or LMS settings applied")
        return course
    found = _checked(data, course.problems)

    def known(where: str, assignment: str) -> bool:
        if assignment not in assignments:
            course.problems.append(f"{FILE}: {where}.{assignment}: no such assignment (ignored)")
        return assignment in assignments

    course.timezone = zone = ZoneInfo(found.timezone)
    course.late = found.late
    course.due = {a: _aware(when, zone) for a, when in found.due.items() if known("due", a)}
    for student, table in found.extensions.items():
        for a, value in table.items():
            if known(f"extensions.{student}", a):
                more = isinstance(value, (int, float))
                course.extensions[student, a] = timedelta(hours=value) if more else _aware(value, zone)
    columns = {a: column for a, column in found.lms.columns.items() if known("lms.columns", a)}
    roster = root / found.lms.roster if found.lms.roster else None
    course.lms = found.lms.model_copy(update={"roster": roster, "columns": columns})
    return course


def _checked(data: dict, problems: list[str]) -> _File:
    """``data`` as a :class:`_File`, each value pydantic refuses said and left out."""
    for _ in range(100):
        try:
            return _File.model_validate(data)
        except ValidationError as error:
            for e in error.errors():
                where = ".".join(map(str, e["loc"]))
                problems.append(f"{FILE}: {where}: {e['msg'].removeprefix('Value error, ')} (ignored)")
                parent = data  # the refused value is dropped from what is validated again
                for key in e["loc"][:-1]:
                    parent = parent.get(key) if isinstance(parent, dict) else None
                if isinstance(parent, dict):
                    parent.pop(e["loc"][-1], None)
    return _File()


def _aware(value: datetime | date, zone: ZoneInfo) -> datetime:
    """A TOML date-time (or date: the end of that day) as an aware date-time, in ``zone`` if it has no offset."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=zone)
    return datetime.combine(value, time(23, 59, 59), tzinfo=zone)
