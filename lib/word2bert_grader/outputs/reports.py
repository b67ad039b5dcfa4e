"""What a grading run writes for the instructor: the feedback pages and graded notebooks, ``grades.csv``, and the
summary printed at the end."""

import csv
import shutil
from pathlib import Path

from word2bert_grader.assignment import printable
from word2bert_grader.outputs.feedback import failure_page
from word2bert_grader.outputs.gradebook import Recorded
from word2bert_grader.task import Result

UNSAFE_BANNER = "WARNING: --unsafe-no-sandbox: student code ran WITHOUT confinement, as this user, with network, files "
UNSAFE_BANNER += (
    "and processes in reach. Scores still come from the grader's own process, but these grades are not safe "
)
UNSAFE_BANNER += "to put on a transcript."


def write_outputs(root: Path, results: list[Result]) -> list[Result]:
    """Feedback pages and graded notebooks; a result whose files cannot be written becomes a failed row."""
    written = []
    for r in results:
        try:
            _write_files(root, r)
        except (OSError, UnicodeError, ValueError) as error:
            reason = f"its feedback could not be written ({type(error).__name__}: {str(error)[:200]})"
            r = r.model_copy(update={"cells": dict.fromkeys(r.cells, 0.0), "score": 0.0, "failure": reason})
            r.autograded, r.feedback = "", failure_page(r)
            _write_files(root, r.model_copy(update={"feedback": ""}))  # nothing half-written is left behind
        written.append(r)
    return written


def _write_files(root: Path, r: Result) -> None:
    for step, name, text in (
        ("feedback", f"{r.assignment}.html", r.feedback),
        ("autograded", f"{r.assignment}.ipynb", r.autograded),
    ):
        folder = root / step / r.student / r.assignment
        if folder.is_symlink():
            folder.unlink()
        shutil.rmtree(folder, ignore_errors=True)
        if text:
            folder.mkdir(parents=True)
            (folder / name).write_text(text, encoding="utf-8")


def total(r: Result, recorded: Recorded | None = None) -> tuple[float, float, float]:
    """(score, max_score, written points still to grade), the instructor's hand scores counted."""
    manual = recorded.manual.get(r.key, {}) if recorded else {}
    given = sum(score for score in manual.values() if score is not None)
    waiting = sum(p for gid, p in r.written.items() if manual.get(gid) is None)
    return r.score + given, r.max_score + sum(r.written.values()), 0.0 if r.failure else waiting


# grades.csv's columns, in order (exports and instructors' scripts read them by name)
GRADES_COLUMNS = "student assignment raw_score late_penalty score max_score status reason to_grade_by_hand late".split()


def write_grades(path: Path, results: list[Result], late: dict | None = None, recorded: Recorded | None = None) -> None:
    """grades.csv: a row per submission, before and after the late penalty, with what waits for a hand grade."""
    late = late or {}
    with open(path, "w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(GRADES_COLUMNS)
        for r in sorted(results, key=lambda r: r.key):
            score, max_score, waiting = total(r, recorded)
            lateness = late.get(r.key)
            penalty = lateness.penalty(score) if lateness else 0.0
            numbers = (score, penalty, score - penalty, max_score)
            status, reason = "failed" if r.failure else "graded", printable(r.failure or "; ".join(r.notes))
            late_text = lateness.describe() if lateness else ""
            writer.writerow([*r.key, *(f"{n:g}" for n in numbers), status, reason, f"{waiting:g}", late_text])


def summary(
    results: list[Result], unsafe: bool, ignored: list[str], reused: int, notes: list[str], recorded: Recorded | None
) -> str:
    """What the instructor reads at the end of a run: the class's scores, then what needs their eyes."""
    names, by = sorted({r.assignment for r in results}), {r.key: r for r in results}
    students = sorted({r.student for r in results})
    width = max([len("student"), *map(len, students)])
    lines = [UNSAFE_BANNER, ""] if unsafe else []
    lines.append("  ".join([f"{'student':<{width}}", *(f"{n:>20}" for n in names)]))
    for s in students:
        cells = ["{:g}/{:g}".format(*total(by[s, n], recorded)[:2]) if (s, n) in by else "-" for n in names]
        lines.append("  ".join([f"{s:<{width}}", *(f"{c:>20}" for c in cells)]))

    def section(title: str, items: list[str]) -> None:
        lines.extend(["", title, *(f"  {printable(item)}" for item in items)] if items else [])

    failed = [f"{r.student}/{r.assignment}: {r.failure}" for r in results if r.failure]
    section(f"{len(failed)} submission(s) failed to grade (scored 0):", failed)
    tampered = [f"{'/'.join(r.key)}: {'; '.join(r.tampering)}" for r in results if r.tampering]
    section("Tampering suspected (the student's kernel passed tests that the grader failed):", tampered)
    handled = [f"{'/'.join(r.key)}: {'; '.join(r.notes)}" for r in results if not r.failure and r.notes]
    section("Handled while grading:", handled)
    section("Downloads not collected:", ignored)
    if reused:
        lines += ["", f"{reused} submission(s) unchanged since an earlier run: their results were reused"]
    section("Course, roster, regrade and late submissions:", notes)
    waiting = [total(r, recorded)[2] for r in results if total(r, recorded)[2]]
    if waiting:
        lines += ["", "Written answers to grade by hand in formgrader (Manual Grading), then run again: "]
        lines[-1] += f"{len(waiting)} submission(s), {sum(waiting):g} points in all"
    timed = {n: sorted(r.seconds for r in results if r.assignment == n and r.seconds) for n in names}
    median = (f"{n} {t[len(t) // 2]:.1f}, {t[-1]:.1f}" for n, t in timed.items() if t)
    lines += ["", "Seconds per submission (median, slowest): " + ", ".join(median)]
    return "\n".join(lines + (["", UNSAFE_BANNER] if unsafe else []))
