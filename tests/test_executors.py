"""The local executor's bookkeeping when a grading process dies, and the gradebook's hand scores through a failed
run: one submission that kills its worker must cost the others nothing (a stand-in grades here, in the pool's
real processes; `tests/test_hostile.py` grades the attack that used to do it through `make autograde`)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from word2bert_grader import executors, gradebook, pipeline
from word2bert_grader.harness import failed_result

ROOT = Path(__file__).resolve().parents[1]
SOURCE = pipeline.source(ROOT, "03-gpt")
# Slow: real pool processes from a forkserver that imports torch, restarted after each death (the killer test took
# 23 s on the shared 2-core machine at load 6, its first result after 10 s), and nbgrader's generate_assignment
# (6.6 CPU-seconds).
pytestmark = pytest.mark.slow


def stand_in(student, assignment, submission, source, settings) -> dict:
    """Grades in a pool process: "killer" kills it, as a grader that ran out of memory is killed."""
    if student.startswith("killer"):
        os._exit(9)
    time.sleep(0.3)  # long enough that several run together
    return {**failed_result(student, assignment, source, ""), "score": 1.0}


def test_a_worker_killed_by_one_submission_costs_the_others_nothing():
    students = ["a", "killer", "b", "c", "d", "e", "killer-2", "f"]
    tasks = [(s, "03-gpt", b"", SOURCE, {}) for s in students]
    start = time.monotonic()
    results = list(executors.local(tasks, 2, grade_one=stand_in))
    by_student = {r["student"]: r for r in results}
    assert sorted(by_student) == sorted(students) and len(results) == len(students), "one row per submission"
    for s in students:
        if s.startswith("killer"):
            assert by_student[s]["failed"] == "the grader's worker process died 3 times while grading it"
        else:  # unsafe: every submission still queued was charged the killer's deaths, and failed after three
            assert not by_student[s]["failed"] and by_student[s]["score"] == 1.0, by_student[s]
    assert time.monotonic() - start < 120


def test_a_failed_run_keeps_the_hand_score_of_an_unchanged_written_answer(tmp_path):
    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name)
    db = root / "gradebook.db"
    gradebook.generate(root, ["03-gpt"], db)
    graded = {**failed_result("bob", "03-gpt", SOURCE, ""), "answers": {"written_mask": "It hides the future."}}
    written = sorted(graded["written"])
    assert written, "exercise 3 has a written answer"
    gradebook.record(db, [graded], regrade={("bob", "03-gpt", gid) for gid in written})

    from nbgrader.api import Gradebook

    def hand_scores() -> dict:
        with Gradebook(f"sqlite:///{db}", "word2bert") as gb:
            nb = gb.find_submission_notebook("03-gpt", "03-gpt", "bob")
            return {g.name: g.manual_score for g in nb.grades if g.name in written}

    with Gradebook(f"sqlite:///{db}", "word2bert") as gb:
        for grade in gb.find_submission_notebook("03-gpt", "03-gpt", "bob").grades:
            if grade.name in written:
                grade.manual_score = 2.0  # the instructor, in formgrader
        gb.db.commit()
    # a run in which bob's grading failed (a worker died, the machine was loaded): nothing is said of his text
    failed = failed_result("bob", "03-gpt", SOURCE, "the grader's worker process died 3 times", transient=True)
    gradebook.record(db, [failed])
    assert failed["manual"] == dict.fromkeys(written), "a failed row counts no hand score"
    # unsafe: the failed run erased the instructor's score for good (the text stays recorded, so nothing asks
    # for it again)
    assert hand_scores() == dict.fromkeys(written, 2.0)
    again = {**graded, "failed": ""}
    gradebook.record(db, [again])
    assert again["manual"] == dict.fromkeys(written, 2.0), "the next good run counts it again"


@pytest.fixture(autouse=True)
def _path_for_nbgrader(monkeypatch):
    monkeypatch.setenv("PATH", f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}")  # nbgrader runs alembic
