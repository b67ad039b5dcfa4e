"""The local executor's bookkeeping when a grading process dies, and the gradebook's hand scores through a failed
run: one submission that kills its worker must cost the others nothing (a stand-in grades here, in the pool's
real processes; `tests/test_hostile.py` grades the attack that used to do it through `make autograde`)."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import psutil
import pytest

from word2bert_grader import executors
from word2bert_grader.assignment import assignments
from word2bert_grader.outputs import gradebook
from word2bert_grader.task import Result, Settings, Submission

ROOT = Path(__file__).resolve().parents[1]
SOURCE = assignments(ROOT)["03-gpt"]
# Slow: real pool processes from a forkserver that imports torch, restarted after each death (the killer test took
# 23 s on the shared 2-core machine at load 6, its first result after 10 s), and nbgrader's generate_assignment
# (6.6 CPU-seconds).
pytestmark = pytest.mark.slow


def stand_in(task: Submission) -> Result:
    """Grades in a pool process: "killer" kills it, as a grader that ran out of memory is killed; "stuck" never
    returns and no signal reaches it (as in a C call that does not return: the grader's own alarm cannot stop it)."""
    if task.student.startswith("killer"):
        os._exit(9)
    if task.student.startswith("stuck"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM, signal.SIGINT})
        while True:
            time.sleep(1)
    time.sleep(0.3)  # long enough that several run together
    return Result.failed(task.student, task.assignment, "").model_copy(update={"score": 1.0})


def test_a_worker_killed_by_one_submission_costs_the_others_nothing():
    students = ["a", "killer", "b", "c", "d", "e", "killer-2", "f"]
    tasks = [Submission(student=s, assignment=SOURCE, notebook=b"", settings=Settings()) for s in students]
    start = time.monotonic()
    results = list(executors.local(tasks, 2, grade_one=stand_in))
    by_student = {r.student: r for r in results}
    assert sorted(by_student) == sorted(students) and len(results) == len(students), "one row per submission"
    for s in students:
        if s.startswith("killer"):
            assert by_student[s].failure == "the grader's worker process died 3 times while grading it"
        else:  # unsafe: every submission still queued was charged the killer's deaths, and failed after three
            assert not by_student[s].failure and by_student[s].score == 1.0, by_student[s]
    assert time.monotonic() - start < 120


def test_a_worker_past_its_wall_clock_limit_is_stopped_and_only_its_submission_is_charged(monkeypatch):
    monkeypatch.setattr(executors, "deadline", lambda task: 6.0)  # the grader's backstop + a margin, made short
    students = ["a", "stuck", "b", "c", "d"]
    tasks = [Submission(student=s, assignment=SOURCE, notebook=b"", settings=Settings()) for s in students]
    start = time.monotonic()
    results = list(executors.local(tasks, 2, grade_one=stand_in))
    by_student = {r.student: r for r in results}
    assert sorted(by_student) == sorted(students) and len(results) == len(students), "one row per submission"
    # unsafe: the run waits for the stuck worker forever; or it is charged to the classmates graded beside it
    assert by_student["stuck"].failure == "grading was stopped after 6 s, its limit in all"
    assert not by_student["stuck"].transient, "kept: the next run would only be stopped again"
    for s in students[:1] + students[2:]:
        assert not by_student[s].failure and by_student[s].score == 1.0, by_student[s]
    assert time.monotonic() - start < 60
    # unsafe: the stuck process goes on (forked by the forkserver, it shares its command line)
    left = [p.cmdline() for p in psutil.Process().children(recursive=True) if "forkserver" in " ".join(p.cmdline())]
    assert len(left) <= 1, left


def test_a_failed_run_keeps_the_hand_score_of_an_unchanged_written_answer(tmp_path):
    root = tmp_path / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name)
    db = root / "gradebook.db"
    gradebook.generate(root, ["03-gpt"], db)
    graded = Result.failed("bob", SOURCE, "").model_copy(update={"answers": {"written_mask": "It hides the future."}})
    written = sorted(graded.written)
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
    failed = Result.failed("bob", SOURCE, "the grader's worker process died 3 times", transient=True)
    recorded = gradebook.record(db, [failed])
    assert recorded.manual[failed.key] == dict.fromkeys(written), "a failed row counts no hand score"
    # unsafe: the failed run erased the instructor's score for good (the text stays recorded, so nothing asks
    # for it again)
    assert hand_scores() == dict.fromkeys(written, 2.0)
    again = graded.model_copy(update={"failure": ""})
    recorded = gradebook.record(db, [again])
    assert recorded.manual[again.key] == dict.fromkeys(written, 2.0), "the next good run counts it again"


@pytest.fixture(autouse=True)
def _path_for_nbgrader(monkeypatch):
    monkeypatch.setenv("PATH", f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}")  # nbgrader runs alembic
