"""nbgrader's gradebook as the record: rebuilt from ``solutions/`` every run, written by the grader only.

``nbgrader export`` and formgrader read ``gradebook.db``; this module keeps it theirs. The
assignments (notebooks, cells, points) are registered from the source notebooks on every run; a
gradebook holding anything nbgrader itself would not make (a trigger, a view, a table of its own)
is refused rather than written to, since such things can change scores behind the grader's back.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from word2bert_grader.task import Result


class RefusedGradebook(RuntimeError):
    pass


_MOVE_IT_AWAY = "Move it away (keep a copy to inspect) and grade again: the grades are rebuilt."


def _api(root: Path, db: Path, release_directory: Path | None = None):
    """nbgrader's Python API on course ``root`` (its nbgrader_config.py applies), gradebook ``db``."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{db}"
    if release_directory is not None:
        config.CourseDirectory.release_directory = str(release_directory)
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def generate(root: Path, names: list[str], db: Path, release_directory: Path | None = None) -> None:
    """``nbgrader generate_assignment`` of every name, in this process (one start-up for all)."""
    api = _api(root, db, release_directory)
    for name in names:
        outcome = api.generate_assignment(name, force=True, create=True)
        if not outcome["success"]:
            sys.exit(f"nbgrader generate_assignment {name} failed:\n{outcome.get('log', '')}{outcome.get('error', '')}")


def _schema(db: Path) -> set[tuple[str, str, str]]:
    """Every table, index, view and trigger, with its SQL (a redefined column is a change too); a database whose pages
    are damaged past its schema raises, as nbgrader would once it wrote to it."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        damage = [row for (row,) in connection.execute("PRAGMA quick_check") if row != "ok"]
        if damage:
            raise sqlite3.DatabaseError(f"damaged: {'; '.join(damage[:3])}")
        return {
            (kind, name, " ".join((sql or "").split()))
            for kind, name, sql in connection.execute("SELECT type, name, sql FROM sqlite_master")
        }
    finally:
        connection.close()


def _check_unlocked(db: Path) -> None:
    """Raises where another program holds a write lock on ``db`` (another run, formgrader saving a score), which
    nbgrader would wait for and then fail on with its traceback; takes the lock and lets it go, writing nothing."""
    connection = sqlite3.connect(db, timeout=5)
    try:
        connection.execute("BEGIN IMMEDIATE")
    finally:
        connection.close()


def prepare(root: Path, names: list[str], db: Path) -> None:
    """Check ``db`` against an empty gradebook that nbgrader makes now, then register the assignments.

    The schema is nbgrader's alone (assignments add rows, not tables), so the template needs none of them."""
    from nbgrader.api import Gradebook

    with tempfile.TemporaryDirectory(prefix="word2bert-gradebook-") as tmp:
        if db.is_symlink() or (db.exists() and not db.is_file()):  # a link to no file yet too: not a first run
            raise RefusedGradebook(f"{db} is not a plain file")
        if db.exists():
            template = Path(tmp) / "template.db"
            with Gradebook(f"sqlite:///{template}"):
                pass
            try:
                extra = _schema(db) - _schema(template)
            except sqlite3.Error as error:  # no database, or one that only a write could make readable (a journal)
                raise RefusedGradebook(f"{db} cannot be read as a gradebook ({error}). {_MOVE_IT_AWAY}") from None
            if extra:
                listed = ", ".join(sorted({f"{kind} {name}" for kind, name, _ in extra}))
                tampered = f"{db} holds what nbgrader does not make ({listed}); it may have been tampered with."
                raise RefusedGradebook(f"{tampered} {_MOVE_IT_AWAY}")
            try:
                _check_unlocked(db)
            except sqlite3.Error as error:
                raise RefusedGradebook(
                    f"{db} is being written by another program ({error}): grade again once it is done (another make "
                    "autograde, formgrader saving a score)."
                ) from None
        generate(root, names, db, Path(tmp) / "release")


@dataclass
class Recorded:
    """What :func:`record` found in the gradebook."""

    reset: int  # manual scores or extra credit on test cells, reset (for the summary)
    # (student, assignment) -> grade id of a written answer -> the instructor's score, or None while it waits
    manual: dict[tuple[str, str], dict[str, float | None]] = field(default_factory=dict)


def record(db: Path, results: list[Result], regrade: set[tuple[str, str, str]] = frozenset()) -> Recorded:
    """Write every result's scores into the gradebook, from this one process.

    The gradebook then says what grades.csv says: a manual score or extra credit on a test cell is
    reset (every test here is graded by the grader; nothing but a run of it sets a score).

    A written answer is the instructor's to grade, in formgrader: its manual score stays, unless the
    answer is in ``regrade`` ((student, assignment, grade id): a text not recorded before this run).
    Returns how many scores were reset and the hand scores of every result's written answers.
    """
    from nbgrader.api import Gradebook

    recorded = Recorded(0)
    with Gradebook(f"sqlite:///{db}", "word2bert") as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's API
        for r in results:
            gb.update_or_create_student(r.student)
            submission = gb.update_or_create_submission(r.assignment, r.student)
            manual = recorded.manual[r.key] = {}
            for nb in submission.notebooks:
                for grade in nb.grades:
                    if grade.name in r.written:
                        # A failed run (perhaps only a loaded machine) leaves the hand score alone: the text it
                        # was given for is still the recorded one, and counts again once the run succeeds.
                        if not r.failure and (r.student, r.assignment, grade.name) in regrade:
                            grade.manual_score = grade.extra_credit = None
                        grade.auto_score = None
                        grade.needs_manual_grade = grade.manual_score is None and not r.failure
                        manual[grade.name] = None if r.failure else grade.manual_score
                        continue
                    recorded.reset += grade.manual_score is not None or grade.extra_credit not in (None, 0)
                    grade.auto_score = r.cells.get(grade.name, 0.0)
                    grade.manual_score = None
                    grade.extra_credit = None
                    grade.needs_manual_grade = False
            gb.db.commit()
    return recorded
