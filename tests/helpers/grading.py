"""Submissions for the graders' tests and the load benchmark: the release and the solutions as notebooks, a
submission made of chosen answers, the fixtures' alternative implementations, broken submissions of each fault
kind, a course folder to grade them in, what `make autograde` wrote there, and disguised copies (for the
similarity report's test and benchmark)."""

from __future__ import annotations

import ast
import csv
import random
import re
import shutil
from pathlib import Path

import nbformat

from helpers import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "grading"
ASSIGNMENTS = ["01-word2vec", "02-elmo", "03-gpt", "04-bert-pretraining", "05-bert-finetuning"]
# What breaks a submission, each handled by the grader in its own way: a wrong answer, a cell that kills its
# process, a cell that never ends, and a file that is no notebook.
FAULT_KINDS = ("wrong", "crash", "loop", "garbage")


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
    """The full solution of every code answer cell, without the nbgrader markers (written answers are not code)."""
    answers = {}
    for cell in solution_nb(assignment).cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell.cell_type == "code":
            answers[grade_id(cell)] = "\n".join(
                line
                for line in cell.source.split("\n")
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
            )
    return answers


def submission(assignment: str, answers: dict[str, str]):
    """The release notebook with the given answer cells filled in."""
    nb = release_nb(assignment)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


def grade_cells(assignment: str, written: bool = False) -> dict[str, float]:
    """The test cells' points (the grader's), or the written answers' (graded by hand)."""
    return {
        grade_id(c): c.metadata.nbgrader["points"]
        for c in release_nb(assignment).cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade") and (c.cell_type == "markdown") == written
    }


def full_before_hand_grading(row: dict) -> bool:
    """Every test passed; the written answers wait for the instructor (their points are in the maximum)."""
    return float(row["score"]) + float(row["to_grade_by_hand"]) == float(row["max_score"])


def write(root: Path, student: str, assignment: str, nb=None, text: str | None = None) -> None:
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{assignment}.ipynb"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    else:
        nbformat.write(nb, str(path))


def course(root: Path) -> Path:
    """A course folder to grade in: a copy of the course's nbgrader_config.py, solutions/ and exercises/."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name)
    return root


def grades(root: Path) -> dict[tuple[str, str], dict]:
    """The rows of ``root``'s grades.csv by (student, assignment); one row per submission."""
    with open(root / "grades.csv", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    keyed = {(r["student"], r["assignment"]): r for r in rows}
    assert len(keyed) == len(rows), "exactly one row per submission"
    return keyed


def faulty(kind: str, a: str, rng: random.Random):
    """A broken submission of assignment ``a``, as (notebook, None), or (None, text) for a file that is no notebook:
    one of the fixtures' wrong answers, a crash, a loop or a garbage file."""
    answers = solution_code(a)
    first = next(iter(answers))
    if kind == "wrong":
        wrong = {f: files[0].read_text(encoding="utf-8") for f, files in fixtures(a, "wrong").items()}
        pick = rng.choice(sorted(wrong))
        return submission(a, {**answers, pick: wrong[pick]}), None
    if kind == "crash":
        return submission(a, {**answers, first: "import os\nos._exit(3)\n" + answers[first]}), None
    if kind == "loop":
        return submission(a, {**answers, first: "while True:\n    pass\n" + answers[first]}), None
    assert kind == "garbage", kind
    return None, rng.choice(['{"cells": [', "\x00\x01 not a notebook", ""])


def mixed_class(root: Path, kinds: dict[str, list[str]], seed: int = 0) -> dict[tuple[str, str], str]:
    """Writes one submission under ``root/submitted`` per entry of ``kinds[assignment]``: "honest" (the solution)
    or one of FAULT_KINDS; returns (student, assignment) -> kind."""
    rng = random.Random(seed)
    plan = {}
    for a, entries in kinds.items():
        for k, kind in enumerate(entries):
            student = f"{a[:2]}-{k:03d}"
            if kind == "honest":
                write(root, student, a, solution_nb(a))
            else:
                write(root, student, a, *faulty(kind, a, rng))
            plan[student, a] = kind
    return plan


def failed_tests(root: Path, student: str, assignment: str) -> dict[str, str]:
    """The test cells that raised in the autograded notebook `make autograde` left under ``root``, with the error."""
    path = root / "autograded" / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return {}
    return {
        grade_id(cell): f"{out['ename']}: {out.get('evalue', '')[:300]}"
        for cell in nbformat.read(str(path), as_version=4).cells
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error" and (grade_id(cell) or "").startswith("test_")
    }


def check_mixed_class(root: Path, plan: dict[tuple[str, str], str]) -> None:
    """Every submission has its row in ``root``'s grades.csv; honest work has full marks (or the failed tests are
    named, with their errors), every faulty submission less; garbage failed, saying why."""
    rows = grades(root)
    assert set(rows) == set(plan), "every submission has exactly one row"
    for key, kind in plan.items():
        row = rows[key]
        if kind == "honest":
            assert row["status"] == "graded" and full_before_hand_grading(row), (key, row, failed_tests(root, *key))
        else:
            assert float(row["score"]) < float(row["max_score"]), (key, kind, row)
        if kind == "garbage":
            assert row["status"] == "failed" and "not a valid notebook" in row["reason"], (key, row)


class _Rename(ast.NodeTransformer):
    """Every argument and local variable renamed, as a student hiding a copy would."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def visit_arg(self, node):
        node.arg = self.names.setdefault(node.arg, f"my_{node.arg}_{len(self.names)}")
        return node

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store) or node.id in self.names:
            node.id = self.names.setdefault(node.id, f"my_{node.id}_{len(self.names)}")
        return node


def disguised(code: str, comment: str) -> str:
    tree = ast.parse(code)
    renamed = ast.unparse(_Rename().visit(tree))  # comments are dropped on the way
    return "\n".join(f"{line}  # {comment}" if line.endswith(":") else line for line in renamed.split("\n"))


def hidden_lines() -> set[str]:
    """Lines of the hidden tests that no student sees elsewhere (the release, the answers, the fixtures): what
    feedback must never show."""
    hidden, public = set(), set()
    for a in sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()):
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
    return hidden - public
