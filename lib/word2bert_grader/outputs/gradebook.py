"""nbgrader's ``gradebook.db``, for ``nbgrader export`` and formgrader: the assignments registered from ``solutions/``
every run, the scores written by this process only. The instructor's file: one check, that it reads."""

import sqlite3
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from word2bert_grader.task import Result


class RefusedGradebook(RuntimeError):
    pass


def generate(root: Path, names: list[str], db: Path, release_directory: Path | None = None) -> None:
    """``nbgrader generate_assignment`` of every name, with the course's config, in this process (one start-up)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{db}"
    if release_directory is not None:
        config.CourseDirectory.release_directory = str(release_directory)
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    for name in names:
        outcome = api.generate_assignment(name, force=True, create=True)
        if not outcome["success"]:
            sys.exit(f"nbgrader generate_assignment {name} failed:\n{outcome.get('log', '')}{outcome.get('error', '')}")


def check(db: Path) -> None:
    """The one check of the instructor's ``gradebook.db`` (trusted, see README.md): it reads whole as SQLite."""
    if not db.exists():
        return
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            damage = [row for (row,) in connection.execute("PRAGMA quick_check") if row != "ok"]
        finally:
            connection.close()
    except sqlite3.Error as error:
        damage = [str(error)]
    if damage:
        fix = "Move it away (keep a copy to inspect) and grade again: the grades are rebuilt."
        raise RefusedGradebook(f"{db} cannot be read as a gradebook ({'; '.join(damage[:3])}). {fix}")


def prepare(root: Path, names: list[str], db: Path) -> None:
    """Check ``db`` (:func:`check`), then register the assignments from ``solutions/``."""
    check(db)
    with tempfile.TemporaryDirectory(prefix="word2bert-gradebook-") as tmp:
        generate(root, names, db, Path(tmp) / "release")


@dataclass
class Recorded:
    """What :func:`record` found in the gradebook."""

    reset: int  # manual scores or extra credit on test cells, reset (for the summary)
    # (student, assignment) -> grade id of a written answer -> the instructor's score, or None while it waits
    manual: dict[tuple[str, str], dict[str, float | None]] = field(default_factory=dict)


def record(db: Path, results: list[Result], regrade: set[tuple[str, str, str]] = frozenset()) -> Recorded:
    """Scores into the gradebook (test cells as grades.csv says; hand scores of unchanged written answers kept)."""
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
                        # a failed run (a loaded machine?) leaves it alone: it counts again once a run succeeds
                        if not r.failure and (r.student, r.assignment, grade.name) in regrade:
                            grade.manual_score = grade.extra_credit = None
                        grade.auto_score = None
                        grade.needs_manual_grade = grade.manual_score is None and not r.failure
                        manual[grade.name] = None if r.failure else grade.manual_score
                        continue
                    recorded.reset += grade.manual_score is not None or grade.extra_credit not in (None, 0)
                    grade.auto_score, grade.manual_score, grade.extra_credit = r.cells.get(grade.name, 0.0), None, None
                    grade.needs_manual_grade = False
            gb.db.commit()
    return recorded
