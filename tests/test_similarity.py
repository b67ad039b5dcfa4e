"""`make similarity`: copies are flagged, independent correct answers are not (word2bert_grader.outputs.similarity).

A small class of exercise 1 is written into a copy of the course (nothing is graded: the report reads
submitted/): two students with different correct implementations of every function (the graders' fixtures,
tests/fixtures/grading/01-word2vec/correct/), one who copied the public solution and one who copied a
classmate, each copy disguised as students do it: every argument and local variable renamed, the functions in
another order, comments rewritten. A notebook that is not JSON is reported and the rest compared.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.grading import disguised

ROOT = Path(__file__).resolve().parents[1]
A = "01-word2vec"
CORRECT = ROOT / "tests" / "fixtures" / "grading" / A / "correct"

pytestmark = pytest.mark.slow  # no grading, but a minute on a loaded machine (make, copydetect's report)


def answer_ids() -> list[str]:
    nb = json.loads((ROOT / "exercises" / A / f"{A}.ipynb").read_text(encoding="utf-8"))
    meta = [c["metadata"].get("nbgrader", {}) for c in nb["cells"]]
    return [
        m["grade_id"] for m, c in zip(meta, nb["cells"], strict=True) if m.get("solution") and c["cell_type"] == "code"
    ]


def solution_answers() -> dict[str, str]:
    nb = json.loads((ROOT / "solutions" / A / f"{A}.ipynb").read_text(encoding="utf-8"))
    answers = {}
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution") and cell["cell_type"] == "code":
            lines = "".join(cell["source"]).split("\n")
            answers[meta["grade_id"]] = "\n".join(
                x for x in lines if "BEGIN SOLUTION" not in x and "END SOLUTION" not in x
            )
    return answers


def fixture_answers(k: int) -> dict[str, str]:
    """The k-th correct implementation of every function (a cell's grade id is its function's name)."""
    found: dict[str, list[Path]] = {}
    for path in sorted(CORRECT.glob("*.py")):
        found.setdefault(path.stem.split("__")[0], []).append(path)
    return {f: paths[k % len(paths)].read_text(encoding="utf-8") for f, paths in found.items()}


def write(root: Path, student: str, answers: dict[str, str] | None = None, text: str | None = None) -> None:
    folder = root / "submitted" / student / A
    folder.mkdir(parents=True)
    if text is None:
        nb = json.loads((ROOT / "exercises" / A / f"{A}.ipynb").read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            gid = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if gid in answers:
                cell["source"] = answers[gid]
        text = json.dumps(nb)
    (folder / f"{A}.ipynb").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name)
    ids = answer_ids()
    write(root, "correct-0", fixture_answers(0))
    write(root, "correct-1", fixture_answers(1))
    write(root, "copier", {gid: disguised(code, "my idea") for gid, code in solution_answers().items()})
    # a classmate's answers, renamed, and each function moved into another answer cell (reordered)
    classmate = [disguised(fixture_answers(0)[gid], "I thought hard here") for gid in ids]
    write(root, "copier2", dict(zip(ids, classmate[1:] + classmate[:1], strict=True)))
    write(root, "broken", text='{"cells": [ not json')
    run = subprocess.run(
        ["make", "-s", "similarity", f"COURSE={root}"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout + run.stderr
    with open(root / "reports" / "similarity.csv", encoding="utf-8", newline="") as stream:
        rows = list(csv.reader(stream))
    return root, rows, run.stdout


def test_planted_copies_are_flagged_and_independent_answers_are_not(report):
    _, rows, stdout = report
    assert rows[0] == ["assignment", "student_a", "student_b", "score"]
    pairs = {(a, b): float(score) for assignment, a, b, score in rows[1:] if assignment == A}
    assert set(pairs) == {("copier", "solutions"), ("copier2", "correct-0")}, (
        "the disguised copies, and nothing else: correct-0, correct-1 and the solution are written independently"
    )
    assert all(0.9 <= s <= 1 for s in pairs.values()), pairs
    scores = [float(r[3]) for r in rows[1:]]
    assert scores == sorted(scores, reverse=True), "highest first"
    assert "broken/01-word2vec: not compared" in stdout, "reported, and the class compared"
    assert "2 pair(s) flagged of 4 answers" in stdout


def test_the_html_report_shows_each_pair_side_by_side(report):
    root, _, _ = report
    page = (root / "reports" / "similarity.html").read_text(encoding="utf-8")
    for label in ("01-word2vec/copier", "01-word2vec/solutions", "01-word2vec/copier2", "01-word2vec/correct-0"):
        assert label in page
    assert "01-word2vec/correct-1" not in page, "a file in no flagged pair is not in the report"
    sides = page.split('<div class="side">')[1:]
    assert len(sides) == 4 and all('<mark class="match">' in side for side in sides), (
        "matched code marked on both sides"
    )
    assert "<script" not in page
    assert "my_" in page and "I thought hard here" in page, "the students' code as they wrote it"


def test_a_copied_class_whose_self_is_renamed_is_still_a_copy():
    """pygments lexes ``self`` as a builtin name, which copydetect keeps as text: renaming it must not hide a copy
    (exercises 2 and 5 are classes)."""
    from copydetect import compare_files
    from helpers.grading import solution_code

    from word2bert_grader.outputs import similarity

    settings = similarity.Settings()
    answers = solution_code("02-elmo").values()
    original = "\n\n".join(answers)
    copied = "\n\n".join(disguised(code, "mine") for code in answers)
    assert "my_self_" in copied
    fingerprint = similarity._fingerprint(copied, settings)
    tokens, shares, _ = compare_files(fingerprint, similarity._fingerprint(original, settings))
    assert min(shares) >= 0.9 and tokens >= settings.min_tokens, (tokens, shares)
    assert fingerprint.raw_code == copied, "the report shows the code as written"
