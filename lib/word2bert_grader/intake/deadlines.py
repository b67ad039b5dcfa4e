"""When a submission came in (nbgrader's ``timestamp.txt``, Canvas's LATE mark, else the notebook's time), how late
it was, and what that costs under nbgrader's late-penalty semantics ("none", "zero", "per_hour")."""

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from word2bert_grader.intake.course import Course

TIMESTAMP = "timestamp.txt"  # nbgrader's name
LMS_RECORD = "lms.json"  # what the collector learnt from the LMS (lms.Record)
FUTURE_SLACK = timedelta(minutes=5)


@dataclass(frozen=True)
class Lateness:
    submitted: datetime | None  # aware; None where unknown
    source: str  # where the time came from
    due: datetime | None  # the student's own (extensions included); None: no due date
    seconds_late: float | None  # 0 when on time; None when late by an unknown amount (Canvas's LATE)
    method: str = "none"
    points_per_hour: float = 1.0
    note: str = ""  # for the instructor and the student: why no penalty, or what was odd

    @property
    def late(self) -> bool:
        return self.seconds_late is None or self.seconds_late > 0

    def penalty(self, score: float) -> float:
        """Points taken from ``score`` (nbgrader's semantics: clipped to [0, score])."""
        if self.due is None or not self.late or self.method == "none":
            return 0.0
        if self.method == "zero":
            return max(score, 0.0)
        if self.seconds_late is None:  # per hour, but by how many hours is unknown: said in the note
            return 0.0
        return min(max(self.points_per_hour * round(self.seconds_late / 3600, 0), 0.0), max(score, 0.0))

    def describe(self) -> str:
        """One line for grades.csv, the feedback page and the export."""
        if self.due is None:
            return ""
        when, due = _shown(self.submitted) if self.submitted else "at an unknown time", _shown(self.due)
        if self.seconds_late == 0:
            text = f"submitted {when}, by the due date {due}"
        elif self.seconds_late is None:
            text = f"late ({self.source}), due {due}"
        else:
            text = f"submitted {when}, {self.seconds_late / 3600:.1f} hours after the due date {due}"
        return text + (f"; {self.note}" if self.note else "")


def assess(course: Course, student: str, assignment: str, folder: Path, now: datetime | None = None) -> Lateness:
    """The lateness of ``folder`` (``submitted/<student>/<assignment>``) under the course's due dates."""
    due = course.due_for(student, assignment)
    submitted, source, flag = submission_time(folder, course)
    due = due.astimezone(course.timezone) if due else None
    submitted = submitted.astimezone(course.timezone) if submitted else None
    late = {"method": course.late.method, "points_per_hour": course.late.points_per_hour}
    seconds, note = 0.0, ""
    if due is None:
        return Lateness(submitted, source, None, 0.0, **late)
    if submitted is not None and submitted > (now or datetime.now(UTC)) + FUTURE_SLACK:
        note = f"its time {_shown(submitted)} ({source}) is in the future: taken as on time"
    elif submitted is None and flag:
        seconds = None
        if course.late.method == "per_hour":
            note = (
                "Canvas gives no time in its downloads: no per-hour penalty applied (write the time into "
                f"submitted/{student}/{assignment}/{TIMESTAMP} to apply one)"
            )
    elif submitted is None and flag is None:
        note = "its time is unknown: taken as on time"
    elif submitted is not None:
        seconds = max((submitted - due).total_seconds(), 0.0)
    return Lateness(submitted, source, due, seconds, note=note, **late)


def submission_time(folder: Path, course: Course) -> tuple[datetime | None, str, bool | None]:
    """(time or None, where it came from, Canvas's LATE mark or None) of a submission folder."""
    try:
        record = json.loads((folder / LMS_RECORD).read_text(encoding="utf-8"))
        flag = record.get("late") if isinstance(record, dict) and isinstance(record.get("late"), bool) else None
    except (OSError, ValueError):
        flag = None
    stamp = folder / TIMESTAMP
    if stamp.is_file() and not stamp.is_symlink():
        when = parse_time(stamp.read_text(encoding="utf-8", errors="replace")[:200], course)
        if when is not None:
            return when, TIMESTAMP, flag
    if flag is not None:
        return None, "Canvas's LATE mark" if flag else "Canvas's download name", flag
    try:
        mtime = os.stat(next(folder.glob("*.ipynb")), follow_symlinks=False).st_mtime
    except (StopIteration, OSError):
        return None, "unknown", None
    return datetime.fromtimestamp(mtime, UTC), "the file's time", None


def parse_time(text: str, course: Course) -> datetime | None:
    """nbgrader's timestamp: ISO 8601, perhaps then a zone name; without an offset, in the course's zone."""
    text, zone = text.strip(), course.timezone
    head, _, tail = text.rpartition(" ")
    try:
        if head and ("/" in tail or tail in ("UTC", "GMT")):
            zone, text = ZoneInfo(tail), head
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=zone)


def _shown(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M %Z").strip()
