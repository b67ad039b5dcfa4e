"""The exercises' tests against the graders' fixtures, in this process: no sandbox, no Dask, no grading pipeline.

For every function students write, each implementation in tests/fixtures/grading/<assignment>/correct/ must pass
all its test cells, visible and hidden (a fair test), and each in .../wrong/ must fail one at least (a test that
catches the mistake). A fixture runs as the grader runs a notebook of it: the source's set-up cells and the
solution's answers, then the fixture's answer in place of the solution's, then its function's test cells, whole.

The cells that train a model (nbgrader_config.py's ``cell_timeouts``) take seconds each: they run for the correct
fixtures only, in `make test` (slow); the wrong ones show themselves on the light cells. What only the sandbox can
show (the library is not importable there, answers cross a data-only wire) is graded end to end by
tests/test_grading.py, on the first fixture of every function through `make autograde`.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
from pathlib import Path

import pytest
import torch

from word2bert_grader.assignment import Kind, assignments
from word2bert_grader.pipeline import settings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "grading"
HEAVY = set(settings(ROOT).cell_timeouts)


@functools.cache
def _plan(assignment: str):
    source = assignments(ROOT)[assignment]
    return source.plan(source.cells)


def _fixtures(heavy: bool) -> list:
    found = []
    for path in sorted(FIXTURES.glob("*/*/*.py")):
        assignment, kind, function = path.parts[-3], path.parts[-2], path.stem.split("__")[0]
        steps = _plan(assignment).steps
        tests = [s.grade_id for s in steps if s.kind is Kind.TEST and s.grade_id.startswith(f"test_{function}_")]
        chosen = [t for t in tests if (t in HEAVY) == heavy]
        if chosen and (kind == "correct" or not heavy):
            marks = [pytest.mark.slow] if heavy else []
            name = f"{assignment}/{kind}/{path.stem}"
            found.append(pytest.param(path, kind == "correct", chosen, id=name, marks=marks))
    return found


def _run(path: Path, tests: list[str]) -> dict[str, str]:
    """The test cells ``tests`` run on the fixture at ``path``: grade id -> the error ("" where it passed)."""
    plan, namespace = _plan(path.parts[-3]), {"__name__": "__main__"}
    function = path.stem.split("__")[0]
    outcome = {}
    torch.manual_seed(0)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for step in plan.steps:
            if step.kind in (Kind.SETUP, Kind.ANSWER):
                exec(compile(step.source, f"<{step.grade_id}>", "exec"), namespace)
            if step.kind is Kind.ANSWER and step.grade_id == function:  # an answer cell's id is its function's name
                exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
            if step.kind is Kind.TEST and step.grade_id in tests:
                try:
                    exec(compile(step.source, f"<{step.grade_id}>", "exec"), namespace)
                    outcome[step.grade_id] = ""
                except Exception as error:
                    outcome[step.grade_id] = f"{type(error).__name__}: {str(error)[:300]}"
    return outcome


@pytest.mark.parametrize(("path", "correct", "tests"), [*_fixtures(heavy=False), *_fixtures(heavy=True)])
def test_a_fixture_passes_its_functions_tests_if_and_only_if_it_is_correct(path, correct, tests):
    outcome = _run(path, tests)
    assert sorted(outcome) == sorted(tests), "every test cell of the function ran"
    if correct:
        assert not any(outcome.values()), f"a correct implementation fails: {outcome}"
    else:
        assert any(outcome.values()), "a wrong implementation passes every test of its function"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/correct/*.py")), ids=lambda p: f"{p.parts[-3]}/{p.stem}")
def test_a_correct_fixture_needs_nothing_the_sandbox_lacks(path):
    """The course library is not importable in the sandbox: a correct answer is the student's own code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in ("word2bert", "word2bert_grader")}, imported
