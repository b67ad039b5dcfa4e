"""The graders, through the real pipeline: `python -m word2bert.grading autograde` (nbgrader inside).

One class of submissions is graded once, in parallel (module fixture), then examined:
- every solutions/ notebook gets full marks, the untouched release zero on every test cell;
- the alternative correct implementations in tests/fixtures/grading/<assignment>/correct/ get full
  marks, each known-wrong one in .../wrong/ loses points on its own function's test cells (a
  submission carries one wrong implementation per function; the others are the solution's);
- the fault cases (infinite loop, kernel crash, segfault, invalid JSON, deleted, edited and duplicated
  test cells, megabytes of output) are scored and reported, and never stop the batch;
- feedback shows failures but never the source of hidden tests;
- the committed exercises/ is what `release` generates.
"""

from __future__ import annotations

import copy
import csv
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "grading"
ASSIGNMENTS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
# An answer that may call another student function: its tests also fail when that one is wrong.
DEPENDS = {"build_pair_input": {"truncate_pair"}}
FAULT_ASSIGNMENT = "01-word2vec"

pytestmark = pytest.mark.slow


def fixtures(assignment: str, kind: str) -> dict[str, list[Path]]:
    """function name -> implementation files, from <function>__<variant>.py."""
    found: dict[str, list[Path]] = {}
    for path in sorted((FIXTURES / assignment / kind).glob("*.py")):
        found.setdefault(path.stem.split("__")[0], []).append(path)
    return found


def release_nb(assignment: str):
    return nbformat.read(str(ROOT / "exercises" / assignment / f"{assignment}.ipynb"), as_version=4)


def solution_nb(assignment: str):
    return nbformat.read(str(ROOT / "solutions" / assignment / f"{assignment}.ipynb"), as_version=4)


def grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def solution_code(assignment: str) -> dict[str, str]:
    """The full solution of every answer cell, without the nbgrader markers."""
    answers = {}
    for cell in solution_nb(assignment).cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            answers[grade_id(cell)] = "\n".join(
                line for line in cell.source.split("\n") if "### BEGIN SOLUTION" not in line
                and "### END SOLUTION" not in line)
    return answers


def submission(assignment: str, answers: dict[str, str]):
    """The release notebook with the given answer cells filled in."""
    nb = release_nb(assignment)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


def grade_cells(assignment: str) -> dict[str, float]:
    return {grade_id(c): c.metadata.nbgrader["points"] for c in release_nb(assignment).cells
            if c.get("metadata", {}).get("nbgrader", {}).get("grade")}


def cells_of(function: str, cells) -> list[str]:
    return [c for c in cells if c.startswith(f"test_{function}_")]


def write(root: Path, student: str, assignment: str, nb=None, text: str | None = None) -> None:
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{assignment}.ipynb"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    else:
        nbformat.write(nb, str(path))


def fault_submissions(root: Path) -> dict[str, str]:
    """Broken submissions of FAULT_ASSIGNMENT; returns student -> what the summary must mention."""
    a = FAULT_ASSIGNMENT
    answers = solution_code(a)
    first = next(iter(answers))  # skipgram_pairs
    wrong = fixtures(a, "wrong")[first][0].read_text(encoding="utf-8")

    def with_answer(extra: str):
        return submission(a, {**answers, first: extra + "\n" + answers[first]})

    write(root, "fault-loop", a, with_answer("while True:\n    pass"))
    write(root, "fault-exit", a, with_answer("import os\nos._exit(1)"))
    write(root, "fault-segfault", a, with_answer("import ctypes\nctypes.string_at(0)"))
    write(root, "fault-not-json", a, text='{"cells": [ this is not json')
    write(root, "fault-many-lines", a, with_answer("for i in range(300_000):\n    print(i)"))
    write(root, "fault-huge-line", a, with_answer("print('x' * 5_000_000)"))
    deleted = submission(a, answers)
    deleted.cells = [c for c in deleted.cells if not c.metadata.get("nbgrader", {}).get("grade")]
    write(root, "fault-deleted-tests", a, deleted)
    edited = submission(a, {**answers, first: wrong})
    for cell in edited.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = "pass"
    write(root, "fault-edited-tests", a, edited)
    duplicated = submission(a, answers)
    tests = [c for c in duplicated.cells if c.metadata.get("nbgrader", {}).get("grade")]
    duplicated.cells += [copy.deepcopy(tests[0]), copy.deepcopy(tests[-1])]
    write(root, "fault-duplicated", a, duplicated)
    return {"fault-loop": "s limit", "fault-exit": "kernel crashed", "fault-segfault": "kernel crashed",
            "fault-not-json": "not a valid notebook", "fault-many-lines": "output truncated",
            "fault-huge-line": "output truncated", "fault-deleted-tests": "deleted test cells",
            "fault-edited-tests": "edited test cells", "fault-duplicated": "duplicated cells"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Build the class, grade it once with the real CLI, return (root, plan, grades, cells, stdout)."""
    root = tmp_path_factory.mktemp("course")
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name)
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
        for k in range(max(map(len, correct.values()))):
            chosen = {f: files[k % len(files)].read_text(encoding="utf-8") for f, files in correct.items()}
            write(root, f"correct-{k}", a, submission(a, chosen))
            plan["full"].append((f"correct-{k}", a))
        for k in range(max(map(len, wrong.values()))):
            chosen = {f: files[k] for f, files in wrong.items() if k < len(files)}
            code = {f: p.read_text(encoding="utf-8") for f, p in chosen.items()}
            write(root, f"wrong-{k}", a, submission(a, {**answers, **code}))
            plan["wrong"][(f"wrong-{k}", a)] = {f: p.name for f, p in chosen.items()}
    plan["faults"] = fault_submissions(root)
    run = subprocess.run([sys.executable, "-m", "word2bert.grading", "--root", str(root), "autograde",
                          "--jobs", "2"], capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    with open(root / "grades.csv", encoding="utf-8") as stream:
        grades = {(r["student"], r["assignment"]): r for r in csv.DictReader(stream)}
    cells: dict[tuple[str, str], dict[str, float]] = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "word2bert") as gb:  # the merged gradebook
        for a in ASSIGNMENTS:
            for sub in gb.find_assignment(a).submissions:
                cells[(sub.student.id, a)] = {g.name: g.auto_score for g in sub.notebooks[0].grades}
    return root, plan, grades, cells, run.stdout


def test_every_submission_has_a_row(graded):
    root, plan, grades, cells, _ = graded
    expected = set(plan["full"]) | set(plan["zero"]) | set(plan["wrong"])
    expected |= {(s, FAULT_ASSIGNMENT) for s in plan["faults"]}
    assert set(grades) == expected
    assert set(cells) == expected, "every submission, failed or not, is in the course gradebook"


def test_solutions_and_correct_implementations_get_full_marks(graded):
    _, plan, grades, cells, _ = graded
    for key in plan["full"]:
        row = grades[key]
        assert row["status"] == "graded" and float(row["score"]) == float(row["max_score"]), (key, row)
        assert cells[key] == grade_cells(key[1]), key


def test_untouched_release_scores_zero_on_every_test_cell(graded):
    _, plan, grades, cells, _ = graded
    for key in plan["zero"]:
        assert float(grades[key]["score"]) == 0
        assert cells[key] == dict.fromkeys(grade_cells(key[1]), 0.0), key


def test_each_wrong_implementation_loses_points_on_its_own_tests(graded):
    _, plan, _, cells, _ = graded
    for (student, assignment), chosen in plan["wrong"].items():
        points, got = grade_cells(assignment), cells[(student, assignment)]
        for function, name in chosen.items():
            ids = cells_of(function, points)
            assert ids and sum(got[c] for c in ids) < sum(points[c] for c in ids), (
                f"{assignment}/wrong/{name} kept full marks")
        broken = set(chosen) | {f for f, needs in DEPENDS.items() if needs & set(chosen)}
        for cell, value in got.items():
            if not any(cell.startswith(f"test_{f}_") for f in broken):
                assert value == points[cell], f"{student}/{assignment}: {cell} lost points it should not"


def test_fault_cases_are_scored_and_reported(graded):
    root, plan, grades, cells, stdout = graded
    points = grade_cells(FAULT_ASSIGNMENT)
    for student, reason in plan["faults"].items():
        row = grades[(student, FAULT_ASSIGNMENT)]
        assert reason in row["reason"], (student, row)
        assert any(student in line and reason in line for line in stdout.splitlines()), student
    score = {s: float(grades[(s, FAULT_ASSIGNMENT)]["score"]) for s in plan["faults"]}
    full = sum(points.values())
    for student in ("fault-exit", "fault-segfault", "fault-not-json"):
        assert grades[(student, FAULT_ASSIGNMENT)]["status"] == "failed" and score[student] == 0
    for student in ("fault-many-lines", "fault-huge-line", "fault-deleted-tests", "fault-duplicated"):
        assert score[student] == full, student
    first = cells_of("skipgram_pairs", points)
    assert all(cells[("fault-loop", FAULT_ASSIGNMENT)][c] == 0 for c in first)
    assert score["fault-loop"] == full - sum(points[c] for c in first), "the rest is graded after a timeout"
    assert score["fault-edited-tests"] < full, "edited tests are restored, so the wrong answer loses points"
    for student in ("fault-many-lines", "fault-huge-line"):
        graded_nb = root / "autograded" / student / FAULT_ASSIGNMENT / f"{FAULT_ASSIGNMENT}.ipynb"
        assert graded_nb.stat().st_size < 500_000, "output is truncated in the autograded notebook"


def _text(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def test_feedback_shows_failures_but_never_hidden_tests(graded):
    root, plan, _, _, _ = graded
    hidden, public = set(), set()
    for a in ASSIGNMENTS:
        public |= {line.strip() for cell in release_nb(a).cells for line in cell.source.split("\n")}
        inside = False
        for cell in solution_nb(a).cells:
            for line in cell.source.split("\n"):
                if "BEGIN HIDDEN TESTS" in line:
                    inside = True
                elif "END HIDDEN TESTS" in line:
                    inside = False
                elif inside and len(line.strip()) > 20 and not re.search("[\"']", line):
                    hidden.add(line.strip())
                elif not inside:
                    public.add(line.strip())
    public |= {line.strip() for p in FIXTURES.rglob("*.py") for line in p.read_text(encoding="utf-8").split("\n")}
    hidden -= public  # lines that visible tests or answers share are no secret
    pages = sorted((root / "feedback").glob("*/*/*.html"))
    assert len(pages) == len(plan["full"]) + len(plan["zero"]) + len(plan["wrong"]) + len(plan["faults"])
    for page in pages:
        text = _text(page)
        assert "BEGIN HIDDEN" not in text and "END HIDDEN" not in text, page
        leaked = hidden & {line.strip() for line in text.split("\n")}
        assert not leaked, f"{page} shows hidden test source: {sorted(leaked)[:3]}"
    wrong = _text(root / "feedback" / "wrong-0" / "01-word2vec" / "01-word2vec.html")
    assert "the traceback of hidden tests is not shown" in wrong
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
    subprocess.run([sys.executable, "-m", "word2bert.grading", "--root", str(tmp_path), "release"],
                   check=True, capture_output=True, timeout=300)
    generated = sorted(p.relative_to(tmp_path / "exercises") for p in (tmp_path / "exercises").rglob("*")
                       if p.is_file())
    committed = sorted(p.relative_to(ROOT / "exercises") for p in (ROOT / "exercises").rglob("*")
                       if p.is_file())
    assert generated == committed, "exercises/ is out of date: run `make release`"
    for rel in generated:
        if rel.suffix == ".ipynb":
            assert _normalised(tmp_path / "exercises" / rel) == _normalised(ROOT / "exercises" / rel), (
                f"exercises/{rel} differs from its release: run `make release`")


def test_solutions_are_stored_without_outputs():
    for a in ASSIGNMENTS:
        for folder in ("solutions", "exercises"):
            nb = nbformat.read(str(ROOT / folder / a / f"{a}.ipynb"), as_version=4)
            assert all(not c.get("outputs") and not c.get("execution_count") for c in nb.cells
                       if c.cell_type == "code"), f"{folder}/{a} has outputs"
            assert nb.metadata.kernelspec.name == "python3"


def test_forbid_library_calls_catches_calls_into_word2bert():
    from word2bert import device
    from word2bert.grading import forbid_library_calls

    with pytest.raises(AssertionError, match="word2bert.device.resolve"):
        with forbid_library_calls("answer"):
            device.resolve("cpu")
    with forbid_library_calls("answer"):
        sum(range(10))


def test_downloads_are_collected_zip_collect_style(tmp_path):
    import zipfile

    from word2bert.grading import collect_downloads, find_submissions

    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, tmp_path / name)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    release = ROOT / "exercises" / "02-elmo" / "02-elmo.ipynb"
    shutil.copy(release, downloads / "alice_02-elmo.ipynb")
    with zipfile.ZipFile(downloads / "bob.zip", "w") as archive:
        archive.write(release, "bob_attempt_2026-01-05-10-00-00_01-word2vec.ipynb")
    shutil.copy(release, downloads / "notes.txt")
    collect_downloads(tmp_path, downloads)
    assert find_submissions(tmp_path) == [("alice", "02-elmo"), ("bob", "01-word2vec")]
