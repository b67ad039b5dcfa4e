"""The graders, through the real pipeline: `make autograde COURSE=<a copy of the course>`.

One class of submissions is graded once (module fixture), each in its sandbox, on a Dask cluster of two
workers (`make autograde SCHEDULER=...`), one of which is killed mid-run and started again; then examined:
- every solutions/ notebook gets full marks, the untouched release zero on every test cell;
- the first alternative correct implementation of each function in
  tests/fixtures/grading/<assignment>/correct/ gets full marks (one submission holds one per function),
  and the first known-wrong one in .../wrong/ loses points on its own function's test cells (one
  submission holds one per function; the others are the solution's): through the sandbox and the data-only
  wire, what tests/test_exercises.py cannot show; every fixture is run against its function's tests there,
  in process;
- the fault cases (infinite loop, a cell that kills its process or segfaults, invalid JSON, deleted,
  edited and duplicated test cells, megabytes of output) are scored and reported, and never stop the
  batch; a bad cell costs only the tests of what it should have defined, checked per cell;
- feedback shows failures but never the source of hidden tests (written for the submissions that
  fail tests, FEEDBACK_STUDENTS);
- Dask's smoke test: every fault kind of exercises 1-3 (a wrong answer, a crash, a loop, garbage) beside honest
  work of every exercise, graded while a worker is killed: nothing is lost, no process of the killed worker is
  left, and a re-run grades only the submission that changed;
- the committed exercises/ is what `release` generates.
(The local pool grades through `make autograde` in tests/test_hostile.py, test_term.py and test_formgrader.py.)
"""

from __future__ import annotations

import copy
import dataclasses
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers.dask import KilledRun, autograde_killing_a_worker, still_running, wait_for_workers
from helpers.dask import cluster as dask_cluster
from helpers.grading import (
    FAULT_KINDS,
    check_mixed_class,
    course,
    fixtures,
    full_before_hand_grading,
    grade_cells,
    grade_id,
    grades,
    hidden_lines,
    mixed_class,
    release_nb,
    solution_code,
    solution_nb,
    submission,
    write,
)
from nbgrader.api import Gradebook

from word2bert_grader.pipeline import settings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "grading"
ASSIGNMENTS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
# An answer that may call another student function: its tests also fail when that one is wrong. A key
# need not be an answer: test_gpt_writes_... is exercise 3's text from three answers, test_pretraining_run
# exercise 4's with two, test_skipgram_training_... exercise 1's vectors from three.
DEPENDS = {
    "skipgram_training": {"skipgram_pairs", "noise_distribution", "sgns_loss"},
    "build_pair_input": {"truncate_pair"},
    "gpt_writes": {"multi_head_causal_attention", "sample_next_token", "top_p_filter"},
    "pretraining": {"mask_tokens", "make_nsp_pairs"},
}
FAULT_ASSIGNMENT = "01-word2vec"
# Whose HTML feedback is written: every test of the release fails (hidden ones included), wrong-0 fails
# with the graders' messages, the two faults fail to grade or time out.
FEEDBACK_STUDENTS = ("release", "wrong-0", "fault-not-json", "fault-runaway")
FEEDBACK_ARGS = f"--feedback-for {' '.join(FEEDBACK_STUDENTS)}"  # whose feedback is asked for is part of a result

pytestmark = pytest.mark.slow


def cells_of(function: str, cells) -> list[str]:
    return [c for c in cells if c.startswith(f"test_{function}_")]


def affected(functions: set[str]) -> set[str]:
    """The functions, and those whose tests use them (DEPENDS): whose test cells may lose points."""
    return set(functions) | {f for f, needs in DEPENDS.items() if needs & set(functions)}


def fault_submissions(root: Path) -> dict[str, list[str]]:
    """Broken submissions of FAULT_ASSIGNMENT; returns student -> what the summary must mention.

    fault-runaway loops in the first answer cell and prints megabytes from the other two;
    fault-tests deletes the first function's tests, edits the second's (over a wrong answer) and
    duplicates the third's. The kernel-killing and unreadable ones stand alone.
    """
    a = FAULT_ASSIGNMENT
    answers = solution_code(a)
    first, second, third, *_ = answers  # skipgram_pairs, noise_distribution, sgns_loss, ...

    def prefixed(extra: dict[str, str]):
        return submission(a, {**answers, **{f: code + "\n" + answers[f] for f, code in extra.items()}})

    write(
        root,
        "fault-runaway",
        a,
        prefixed(
            {
                first: "while True:\n    pass",
                second: "for i in range(300_000):\n    print(i)",
                third: "print('x' * 5_000_000)",
            }
        ),
    )
    write(root, "fault-exit", a, prefixed({first: "import os\nos._exit(1)"}))
    write(root, "fault-segfault", a, prefixed({second: "import ctypes\nctypes.string_at(0)"}))
    write(root, "fault-not-json", a, text='{"cells": [ this is not json')
    wrong = fixtures(a, "wrong")[second][0].read_text(encoding="utf-8")
    tampered = submission(a, {**answers, second: wrong})
    for cell in tampered.cells:
        if grade_id(cell) in cells_of(second, grade_cells(a)):
            cell.source = "pass"
    duplicates = [copy.deepcopy(c) for c in tampered.cells if grade_id(c) in cells_of(third, grade_cells(a))]
    tampered.cells = [c for c in tampered.cells if grade_id(c) not in cells_of(first, grade_cells(a))]
    tampered.cells += duplicates
    write(root, "fault-tests", a, tampered)
    return {
        "fault-runaway": ["s limit", "output truncated"],
        "fault-exit": ["stopped the sandbox"],
        "fault-segfault": ["segmentation fault"],
        "fault-not-json": ["not a valid notebook"],
        "fault-tests": ["deleted test cells", "edited test cells", "duplicated cells"],
    }


# Beside the class above, every fault kind of exercises 2 and 3 (exercise 1's are the fault cases above, with the
# wrong-0 submissions): with the class's honest work, the smoke test of grading on Dask (issue 36).
SMOKE_FAULTS = {a: list(FAULT_KINDS) for a in ("02-elmo", "03-gpt")}


@dataclasses.dataclass
class Graded:
    root: Path
    plan: dict
    grades: dict[tuple[str, str], dict]
    cells: dict[tuple[str, str], dict[str, float]]
    run: KilledRun


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1, as an instructor starts them."""
    with dask_cluster(tmp_path_factory.mktemp("dask") / "log") as running:
        yield running


@pytest.fixture(scope="module")
def graded(cluster, tmp_path_factory) -> Graded:
    """Build the class and grade it once with the real CLI on a Dask cluster of two workers, one of which is killed
    mid-run (SIGKILL) and started again, as an instructor would."""
    address, workers = cluster
    root = course(tmp_path_factory.mktemp("course"))
    plan = {"full": [], "zero": [], "wrong": {}}
    for a in ASSIGNMENTS:
        write(root, "solution", a, solution_nb(a))
        write(root, "release", a, release_nb(a))
        plan["full"].append(("solution", a))
        plan["zero"].append(("release", a))
        answers = solution_code(a)
        correct, wrong = fixtures(a, "correct"), fixtures(a, "wrong")
        assert set(correct) == set(answers), f"{a}: every function needs correct fixtures"
        assert all(len(v) >= 2 for v in correct.values()), f"{a}: two correct implementations each"
        write(
            root,
            "correct-0",
            a,
            submission(a, {f: files[0].read_text(encoding="utf-8") for f, files in correct.items()}),
        )
        plan["full"].append(("correct-0", a))
        write(
            root,
            "wrong-0",
            a,
            submission(a, {**answers, **{f: files[0].read_text(encoding="utf-8") for f, files in wrong.items()}}),
        )
        plan["wrong"][("wrong-0", a)] = {f: files[0].name for f, files in wrong.items()}
    plan["faults"] = fault_submissions(root)
    plan["smoke"] = mixed_class(root, SMOKE_FAULTS)
    run = autograde_killing_a_worker(root, address, workers, after=5, timeout=3000, args=FEEDBACK_ARGS)
    wait_for_workers(address, 2)  # for the re-run at the end of this module
    cells: dict[tuple[str, str], dict[str, float]] = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "word2bert") as gb:  # the merged gradebook
        for a in ASSIGNMENTS:
            for sub in gb.find_assignment(a).submissions:
                cells[(sub.student.id, a)] = {
                    g.name: g.auto_score for g in sub.notebooks[0].grades if g.name not in grade_cells(a, written=True)
                }
    return Graded(root, plan, grades(root), cells, run)


def kinds(plan: dict) -> dict[tuple[str, str], str]:
    """Every submission of the class as ``check_mixed_class`` sees it: honest, or a fault kind."""
    faults = {"fault-runaway": "loop", "fault-exit": "crash", "fault-segfault": "crash", "fault-not-json": "garbage"}
    return (
        dict.fromkeys(plan["full"], "honest")
        | dict.fromkeys(plan["zero"], "empty")
        | dict.fromkeys(plan["wrong"], "wrong")
        | {(s, FAULT_ASSIGNMENT): faults.get(s, "wrong") for s in plan["faults"]}
        | plan["smoke"]
    )


def test_every_submission_has_a_row(graded):
    expected = set(kinds(graded.plan))
    assert set(graded.grades) == expected
    assert set(graded.cells) == expected, "every submission, failed or not, is in the course gradebook"


def test_a_class_with_every_fault_kind_is_graded_while_a_worker_is_killed(graded):
    """Dask's smoke test: every row is present, honest work has full marks, every faulty submission less, and no
    process of the killed worker is left."""
    check_mixed_class(graded.root, kinds(graded.plan))
    assert "reused" not in graded.run.stdout, "a first run grades every submission"
    left = still_running(graded.run.killed)
    assert not left, f"processes of the killed worker still run: {[p.cmdline()[:3] for p in left]}"
    print(f"\n{len(graded.grades)} submissions in {graded.run.seconds:.0f} s\n{graded.run.stdout[-600:]}")


def test_solutions_and_correct_implementations_get_full_marks(graded):
    plan, grades, cells = graded.plan, graded.grades, graded.cells
    for key in plan["full"]:
        row = grades[key]
        assert row["status"] == "graded" and full_before_hand_grading(row), (key, row)
        assert float(row["to_grade_by_hand"]) == sum(grade_cells(key[1], written=True).values()) > 0, (key, row)
        assert cells[key] == grade_cells(key[1]), key


def test_untouched_release_scores_zero_on_every_test_cell(graded):
    plan, grades, cells = graded.plan, graded.grades, graded.cells
    for key in plan["zero"]:
        assert float(grades[key]["score"]) == 0
        assert cells[key] == dict.fromkeys(grade_cells(key[1]), 0.0), key


def test_each_wrong_implementation_loses_points_on_its_own_tests(graded):
    plan, cells = graded.plan, graded.cells
    for (student, assignment), chosen in plan["wrong"].items():
        points, got = grade_cells(assignment), cells[(student, assignment)]
        for function, name in chosen.items():
            ids = cells_of(function, points)
            assert ids and sum(got[c] for c in ids) < sum(points[c] for c in ids), (
                f"{assignment}/wrong/{name} kept full marks"
            )
        broken = affected(set(chosen))
        for cell, value in got.items():
            if not any(cell.startswith(f"test_{f}_") for f in broken):
                assert value == points[cell], f"{student}/{assignment}: {cell} lost points it should not"


def test_fault_cases_are_scored_and_reported(graded):
    root, plan, grades, cells, stdout = graded.root, graded.plan, graded.grades, graded.cells, graded.run.stdout
    points = grade_cells(FAULT_ASSIGNMENT)
    for student, reasons in plan["faults"].items():
        row = grades[(student, FAULT_ASSIGNMENT)]
        for reason in reasons:
            assert reason in row["reason"], (student, reason, row)
            assert any(student in line and reason in line for line in stdout.splitlines()), (student, reason)
    row = grades[("fault-not-json", FAULT_ASSIGNMENT)]
    assert row["status"] == "failed" and float(row["score"]) == 0
    first, second, third, *_ = solution_code(FAULT_ASSIGNMENT)
    for student, bad in (("fault-runaway", first), ("fault-exit", first), ("fault-segfault", second)):
        got = cells[(student, FAULT_ASSIGNMENT)]
        assert grades[(student, FAULT_ASSIGNMENT)]["status"] == "graded", student
        assert all(got[c] == 0 for c in cells_of(bad, points)), f"{student}: the bad cell's tests get nothing"
        spared = [c for c in points if not any(c in cells_of(f, points) for f in affected({bad}))]
        assert all(got[c] == points[c] for c in spared), (
            f"{student}: the rest is graded after a time-out or a crash, and printing a lot costs no points"
        )
    assert grades[("fault-runaway", FAULT_ASSIGNMENT)]["reason"].count("output truncated") == 2, (
        "many lines and one huge line: both outputs are truncated"
    )
    graded_nb = root / "autograded" / "fault-runaway" / FAULT_ASSIGNMENT / f"{FAULT_ASSIGNMENT}.ipynb"
    assert graded_nb.stat().st_size < 500_000, "output is truncated in the autograded notebook"
    tampered = cells[("fault-tests", FAULT_ASSIGNMENT)]
    assert all(tampered[c] == points[c] for c in cells_of(first, points)), "deleted tests are restored and run"
    assert sum(tampered[c] for c in cells_of(second, points)) < sum(points[c] for c in cells_of(second, points)), (
        "edited tests are restored, so the wrong answer loses points"
    )
    assert all(tampered[c] == points[c] for c in cells_of(third, points)), "a duplicated test counts once"


def test_cells_that_train_get_their_own_time_limit():

    config = settings(ROOT)
    seen = set()
    for a in ASSIGNMENTS:
        for cell in solution_nb(a).cells:
            if grade_id(cell) in config.cell_timeouts:
                seen.add(grade_id(cell))
                assert config.limit(grade_id(cell)) == config.cell_timeouts[grade_id(cell)] > config.timeout
            elif cell.cell_type == "code":
                assert config.limit(grade_id(cell)) == config.timeout
    assert seen == set(config.cell_timeouts), (
        f"cell_timeouts names cells no notebook has: {set(config.cell_timeouts) - seen}"
    )


def _text(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def test_feedback_shows_failures_but_never_hidden_tests(graded):
    root = graded.root
    hidden = hidden_lines()
    pages = sorted((root / "feedback").glob("*/*/*.html"))
    students = {p.relative_to(root / "feedback").parts[0] for p in pages}
    assert students == set(FEEDBACK_STUDENTS), "feedback is written for the students asked for, and only them"
    assert {p.parent.name for p in pages if p.parts[-3] == "wrong-0"} == set(ASSIGNMENTS)
    for page in pages:
        text = _text(page)
        assert "BEGIN HIDDEN" not in text and "END HIDDEN" not in text, page
        leaked = hidden & {line.strip() for line in text.split("\n")}
        assert not leaked, f"{page} shows hidden test source: {sorted(leaked)[:3]}"
    wrong = _text(root / "feedback" / "wrong-0" / "01-word2vec" / "01-word2vec.html")
    assert "hidden tests ran here" in wrong
    assert "AssertionError" in wrong, "the student sees which tests failed and why"
    failed = _text(root / "feedback" / "fault-not-json" / FAULT_ASSIGNMENT / f"{FAULT_ASSIGNMENT}.html")
    assert "not a valid notebook" in failed


def _normalised(path: Path) -> dict:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        cell.pop("id", None)
        cell.pop("execution_count", None)
    return nb


def test_committed_exercises_are_the_release_of_solutions(tmp_path):
    for name in ("nbgrader_config.py", "solutions"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, tmp_path / name)
    subprocess.run(
        [sys.executable, "-m", "word2bert_grader", "--root", str(tmp_path), "release"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    generated = sorted(
        p.relative_to(tmp_path / "exercises") for p in (tmp_path / "exercises").rglob("*") if p.is_file()
    )
    committed = sorted(p.relative_to(ROOT / "exercises") for p in (ROOT / "exercises").rglob("*") if p.is_file())
    assert generated == committed, "exercises/ is out of date: run `make release`"
    for rel in generated:
        if rel.suffix == ".ipynb":
            assert _normalised(tmp_path / "exercises" / rel) == _normalised(ROOT / "exercises" / rel), (
                f"exercises/{rel} differs from its release: run `make release`"
            )


def test_solutions_are_stored_without_outputs():
    for a in ASSIGNMENTS:
        for folder in ("solutions", "exercises"):
            nb = nbformat.read(str(ROOT / folder / a / f"{a}.ipynb"), as_version=4)
            assert all(
                not c.get("outputs") and not c.get("execution_count") for c in nb.cells if c.cell_type == "code"
            ), f"{folder}/{a} has outputs"
            assert nb.metadata.kernelspec.name == "python3"


def test_forbid_library_calls_catches_calls_into_word2bert():
    from word2bert import device
    from word2bert.testing import forbid_library_calls

    with pytest.raises(AssertionError, match="word2bert.device.resolve"):
        with forbid_library_calls("answer"):
            device.resolve("cpu")
    with forbid_library_calls("answer"):
        sum(range(10))


def test_randomise_parameters_gives_the_tests_own_weights_whatever_the_initialisation():
    import torch
    from torch import nn

    from word2bert.testing import randomise_parameters

    zero, default = nn.Linear(3, 4), nn.Linear(3, 4)
    nn.init.zeros_(zero.weight)
    nn.init.zeros_(zero.bias)
    randomise_parameters(zero, 0)
    randomise_parameters(default, 0)
    assert all(torch.equal(a, b) for a, b in zip(zero.parameters(), default.parameters()))
    assert all((p != 0).all() for p in zero.parameters())


def test_a_rerun_grades_only_what_changed(cluster, graded):
    """The same class graded again, by the same command, after one student hands in again: only that submission is
    graded; the others' results come from the resume cache. (Last in this module: it changes the class the tests
    above read.)"""
    address, _ = cluster
    student, a = "correct-0", "02-elmo"
    write(graded.root, student, a, release_nb(a))
    again = subprocess.run(
        ["make", "-s", "autograde", f"COURSE={graded.root}", f"SCHEDULER={address}", f"ARGS={FEEDBACK_ARGS}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    unchanged = len(graded.grades) - 1
    assert f"{unchanged} submission(s) unchanged since an earlier run: their results were reused" in again.stdout
    rows = grades(graded.root)
    assert rows[student, a]["score"] == "0", rows[student, a]
    check_mixed_class(graded.root, {**kinds(graded.plan), (student, a): "empty"})
