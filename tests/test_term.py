"""An instructor's term through the real pipeline: `make autograde` from Canvas's and Moodle's downloads with
due dates, an extension and a late penalty, regrades after a hidden test is fixed (all, then a subset), hand
scores that survive them, and `make export` to both LMSs.

The class is small (exercises 1 and 3; one full solution, the rest untouched releases, which grade fast) and
graded once in full; every later run grades only what changed. Bad input rides along and must be reported
while the class is graded: a roster row without an id, a download of someone on no roster row, an extension
for a student who does not exist, a submission time in the future.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "lms"
A1, A3 = "01-word2vec", "03-gpt"

pytestmark = pytest.mark.slow

COURSE = """
timezone = "Europe/Berlin"
[late]
policy = "per_hour"
points_per_hour = 1
[due]
01-word2vec = 2026-02-06T23:59:00
03-gpt = 2026-03-06T23:59:00
[extensions.jmuller]
01-word2vec = 2
[extensions.ghost]
03-gpt = 24
[lms]
name = "canvas"
roster = "roster.csv"
"""


def make(root: Path, *args: str) -> str:
    run = subprocess.run(
        ["make", "-s", *args, f"COURSE={root}", "JOBS=2"], cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def grades(root: Path) -> dict[tuple[str, str], dict]:
    with open(root / "grades.csv", encoding="utf-8", newline="") as stream:
        return {(r["student"], r["assignment"]): r for r in csv.DictReader(stream)}


def notebook_bytes(folder: str, assignment: str) -> bytes:
    return (ROOT / folder / assignment / f"{assignment}.ipynb").read_bytes()


def fix_hidden_test(root: Path, assignment: str) -> None:
    """An instructor fixes a hidden test: one more line in the first hidden block of the source."""
    path = root / "solutions" / assignment / f"{assignment}.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        lines = cell["source"] if isinstance(cell["source"], list) else cell["source"].splitlines(True)
        for i, line in enumerate(lines):
            if "BEGIN HIDDEN TESTS" in line:
                cell["source"] = lines[: i + 1] + ["assert True  # fixed\n"] + lines[i + 1 :]
                path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
                return
    raise AssertionError(f"no hidden tests in {assignment}")


def written_answer(assignment: str) -> str:
    nb = json.loads(notebook_bytes("solutions", assignment))
    return next(
        c["metadata"]["nbgrader"]["grade_id"]
        for c in nb["cells"]
        if c["cell_type"] == "markdown" and c["metadata"].get("nbgrader", {}).get("grade")
    )


def set_hand_score(root: Path, student: str, assignment: str, score: float) -> None:
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "word2bert") as gb:
        grade = gb.find_grade(written_answer(assignment), assignment, assignment, student)
        grade.manual_score = score
        gb.db.commit()


def hand_score(root: Path, student: str, assignment: str) -> float | None:
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "word2bert") as gb:
        return gb.find_grade(written_answer(assignment), assignment, assignment, student).manual_score


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name)
    (root / "course.toml").write_text(COURSE, encoding="utf-8")
    roster = (FIXTURES / "canvas" / "gradebook-export.csv").read_text(encoding="utf-8")
    (root / "roster.csv").write_text(roster + '"Nobody, No",1005,,,Section B,,,,\n', encoding="utf-8")
    down = root / "canvas-downloads"
    for assignment in (A1, A3):
        (down / assignment).mkdir(parents=True)
    with zipfile.ZipFile(down / A1 / "submissions.zip", "w") as archive:
        archive.writestr(f"lovelaceada_1001_5001_{A1}.ipynb", notebook_bytes("exercises", A1))
        archive.writestr(f"müllerjürgen_LATE_1002_5003_{A1}-1.ipynb", notebook_bytes("solutions", A1))
        archive.writestr(f"hoppergrace_1004_5006_{A1}.ipynb", notebook_bytes("solutions", A1))
    (down / A3 / f"lovelaceada_1001_5011_{A3}.ipynb").write_bytes(notebook_bytes("exercises", A3))
    # Canvas gives no time: the instructor writes jmuller's into nbgrader's timestamp.txt (5 h 20 min after the
    # due date, 3 h 20 min after his extension), and a wrong clock put ada's exercise 3 in the future
    for student, assignment, stamp in (
        ("jmuller", A1, "2026-02-07 05:19:00+01:00"),
        ("ada", A3, "2099-01-01 00:00:00 Europe/Berlin"),
    ):
        (root / "submitted" / student / assignment).mkdir(parents=True)
        (root / "submitted" / student / assignment / "timestamp.txt").write_text(stamp, encoding="utf-8")
    first = make(root, "autograde", f"DOWNLOADS={down}")
    return root, first


def test_canvas_downloads_are_graded_with_the_late_penalty(term):
    root, stdout = term
    rows = grades(root)
    assert set(rows) == {("ada", A1), ("jmuller", A1), ("ada", A3)}
    late = rows["jmuller", A1]
    full = float(late["raw_score"]) + float(late["to_grade_by_hand"]) == float(late["max_score"])
    assert late["status"] == "graded" and full, late
    assert float(late["late_penalty"]) == 3 and float(late["score"]) == float(late["raw_score"]) - 3, (
        "3 h 20 min after the extended due date: round(3.33) hours at 1 point per hour"
    )
    assert late["late"].startswith("submitted 2026-02-07 05:19 CET, 3.3 hours after the due date 2026-02-07 01:59 CET")
    assert "in the future: taken as on time" in rows["ada", A3]["late"] and rows["ada", A3]["late_penalty"] == "0"
    page = (root / "feedback" / "jmuller" / A1 / f"{A1}.html").read_text(encoding="utf-8")
    assert "Late penalty: 3 points; score after the penalty:" in page
    assert json.loads((root / "submitted" / "jmuller" / A1 / "lms.json").read_text(encoding="utf-8"))["late"] is True
    for reported in (
        "roster.csv line 7 (Nobody, No): the id has no SIS Login ID: left out",
        "an extension for 'ghost', who is not in this class (ignored)",
        f"hoppergrace_1004_5006_{A1}.ipynb: not collected: Canvas user 1004 is on no roster row",
        "jmuller/01-word2vec: late, submitted 2026-02-07 05:19 CET",
    ):
        assert reported in stdout, reported


def test_a_fixed_hidden_test_regrades_only_its_assignment_and_hand_scores_survive(term):
    root, _ = term
    set_hand_score(root, "ada", A1, 1.5)
    fix_hidden_test(root, A3)
    stdout = make(root, "autograde")
    assert "2 submission(s) unchanged since an earlier run: their results were reused" in stdout, stdout
    rows = grades(root)
    assert float(rows["ada", A1]["score"]) == 1.5, "the hand score counts in grades.csv"
    assert hand_score(root, "ada", A1) == 1.5
    fix_hidden_test(root, A1)
    stdout = make(root, "autograde", "STUDENTS=ada", f"ASSIGNMENTS={A1}")
    assert f"jmuller/{A1}: changed since it was graded, kept as graded then" in stdout.replace("\n  ", " ")
    assert "submission(s) unchanged" not in stdout, "ada's exercise 1 was regraded, nothing else was graded"
    rows = grades(root)
    assert set(rows) == {("ada", A1), ("jmuller", A1), ("ada", A3)}, "every row is still there"
    assert float(rows["jmuller", A1]["late_penalty"]) == 3, "kept rows keep their penalty"
    assert hand_score(root, "ada", A1) == 1.5 and float(rows["ada", A1]["score"]) == 1.5, "a regrade keeps it"


def test_canvas_export(term):
    root, _ = term
    stdout = make(root, "export", "LMS=canvas")
    with open(root / "exports" / "canvas-grades.csv", encoding="utf-8", newline="") as stream:
        rows = list(csv.reader(stream))
    rows_now = grades(root)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01-word2vec (101)", "03-gpt (103)"]
    assert rows[1][0] == "    Points Possible" and rows[1][5] == rows_now["ada", A1]["max_score"]
    by_login = {r[3]: r for r in rows[2:]}
    assert by_login["jmuller"][5] == rows_now["jmuller", A1]["score"], "the score after the penalty"
    assert by_login["ada"][5:] == ["1.5", "0"] and by_login["aturing"][5:] == ["", ""]
    with zipfile.ZipFile(root / "exports" / "canvas-feedback" / f"{A1}.zip") as archive:
        assert sorted(archive.namelist()) == [
            f"lovelaceada_1001_5001_{A1}-feedback.html",
            f"müllerjürgen_1002_5003_{A1}-feedback.html",
        ]
    assert "wrote exports/canvas-grades.csv: 3 students, 2 assignments" in stdout


def test_moodle_downloads_and_export(term):
    root, _ = term
    text = COURSE.replace('name = "canvas"\nroster = "roster.csv"', 'name = "moodle"\nroster = "moodle.csv"')
    (root / "course.toml").write_text(text + 'student_id = "ID number"\n', encoding="utf-8")
    shutil.copy(FIXTURES / "moodle" / "grades-export.csv", root / "moodle.csv")
    down = root / "moodle-downloads" / A1
    for name, data in (
        (f"Ada Lovelace_4242_assignsubmission_file_/{A1}.ipynb", notebook_bytes("exercises", A1)),
        (f"Jürgen Müller_4243_assignsubmission_file_/{A1}.ipynb", notebook_bytes("solutions", A1)),
    ):
        (down / name).parent.mkdir(parents=True)
        (down / name).write_bytes(data)
    shutil.copy(FIXTURES / "moodle" / "grading-worksheet.csv", down / "worksheet.csv")
    stdout = make(root, "autograde", f"DOWNLOADS={down.parent}")
    assert "2 submission(s) unchanged since an earlier run" in stdout, (
        "the same notebooks: only jmuller's exercise 1 is graded, whose hidden test was fixed while he was not in "
        "the regrade"
    )
    late = grades(root)["jmuller", A1]
    assert late["late"].startswith("submitted 2026-02-07 03:10 CET, 1.2 hours after"), "Moodle's worksheet time"
    assert float(late["late_penalty"]) == 1
    make(root, "export", "LMS=moodle")
    with open(root / "exports" / "moodle-grades.csv", encoding="utf-8", newline="") as stream:
        rows = list(csv.reader(stream))
    assert rows[0][:6] == [
        "First name",
        "Surname",
        "ID number",
        "Email address",
        "Assignment: 01-word2vec (Real)",
        "Feedback: Assignment: 01-word2vec (Real)",
    ]
    jurgen = next(r for r in rows if r[2] == "jmuller")
    assert jurgen[4] == late["score"] and "late penalty 1" in jurgen[5]
    with zipfile.ZipFile(root / "exports" / "moodle-feedback" / f"{A1}.zip") as archive:
        assert sorted(archive.namelist()) == [
            f"Ada Lovelace_4242_assignfeedback_file_/{A1}-feedback.html",
            f"Jürgen Müller_4243_assignfeedback_file_/{A1}-feedback.html",
        ]
