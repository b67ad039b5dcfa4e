"""Grades and feedback pages back to Canvas and Moodle, in their import formats (see :mod:`intake.lms`)."""

import csv
import io
import os
import re
import zipfile
from collections import namedtuple
from pathlib import Path

from word2bert_grader.intake.course import Course
from word2bert_grader.intake.lms import CANVAS_IDENTITY, MOODLE_IDENTITY, Person, Record, Roster, all_digits

Grade = namedtuple("Grade", "score raw penalty max_score late")  # a row of grades.csv: the score after the penalty


def read_grades(path: Path) -> tuple[dict[tuple[str, str], Grade], list[str]]:
    """The rows of ``grades.csv`` by (student, assignment); a row that does not read is said."""
    grades, problems = {}, []
    with open(path, encoding="utf-8", newline="") as stream:
        for number, row in enumerate(csv.DictReader(stream), start=2):
            try:
                score, late = float(row["score"]), row.get("late") or ""
                numbers = (float(row.get("raw_score") or score), float(row.get("late_penalty") or 0))
                grades[row["student"], row["assignment"]] = Grade(score, *numbers, float(row["max_score"]), late)
            except (KeyError, TypeError, ValueError) as e:
                problems.append(f"grades.csv line {number} does not read ({type(e).__name__}: {e}): not exported")
    return grades, problems


def export(root: Path, lms: str, course: Course, assignments: list[str], roster: Roster | None) -> list[str]:
    """``exports/<lms>-grades.csv`` and a feedback zip per assignment; returns what the instructor should know."""
    by, report = read_grades(root / "grades.csv")
    out = root / "exports"
    out.mkdir(exist_ok=True)
    graded, students = sorted({a for _, a in by} & set(assignments)), sorted({s for s, _ in by})
    people = roster.people if roster is not None and roster.people else []
    if not people:
        report.append(f"no usable {lms} roster: rows carry the student id only ({course.lms.id_column})")
        people = [Person(s, "", "", {course.lms.id_column or "SIS Login ID": s}) for s in students]
    outsiders = sorted(set(students) - {p.student for p in people})
    if outsiders:
        report.append(f"graded but on no roster row, not exported: {', '.join(outsiders)}")
    columns = {a: _lms_column(a, course, roster, lms) for a in graded}
    maxima = {a: max((g.max_score for (_, b), g in by.items() if b == a), default=0.0) for a in graded}
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
    text = io.StringIO(newline="")
    csv.writer(text).writerows([header, *([_cell(c) for c in row] for row in rows)])
    _write_bytes(out / f"{lms}-grades.csv", text.getvalue().encode("utf-8"))
    report.append(f"wrote exports/{lms}-grades.csv: {len(people)} students, {len(graded)} assignments")
    for a in graded:
        packed, missing = _feedback_zip(root, out / f"{lms}-feedback" / f"{a}.zip", lms, a, [p.student for p in people])
        report.append(f"wrote exports/{lms}-feedback/{a}.zip: {packed} feedback pages")
        if missing:
            report.append(f"  {a}: no {lms} download recorded, feedback not packed: {', '.join(missing)}")
    return report


def _lms_column(assignment: str, course: Course, roster: Roster | None, lms: str) -> str:
    """The gradebook column of an assignment: course.toml's, the roster's column named after it, or its name."""
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
    """Each student's feedback page under the name the LMS reads back: (packed, students without a download)."""
    path.parent.mkdir(exist_ok=True)
    packed, missing = 0, []
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for student in students:
            page = root / "feedback" / student / assignment / f"{assignment}.html"
            if not page.is_file() or page.is_symlink():
                continue
            record = Record.read(root / "submitted" / student / assignment)
            ids = (record.user, record.attachment or "0") if record is not None and record.lms == lms else ("",)
            if not all(map(all_digits, ids)):
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


def _cell(value: str) -> str:
    """A cell that no spreadsheet runs as a formula (the LMS's names are people's, not ours)."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") and not re.fullmatch(r"-?[0-9.]+", value) else value


def _write_bytes(path: Path, data: bytes) -> None:
    if path.is_symlink():
        path.unlink()
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_bytes(data)
    os.replace(tmp, path)
