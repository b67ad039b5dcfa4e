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


def _run(path: Path, tests: list[str], scribble: list[int] | None = None) -> dict[str, str]:
    """The test cells ``tests`` run on the fixture at ``path``: grade id -> the error ("" where it passed). With
    ``scribble`` ([calls so far, the call to overwrite or -1 for all]), the fixture overwrites what it is handed."""
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
                if scribble is not None:
                    namespace[function] = _scribbling(namespace[function], scribble)
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


def _scribbling(answer, calls: list[int]):
    """``answer`` (a function, or a module's class), right, that then overwrites every tensor and list it was handed,
    in place, as an answer that rewrites a test's inputs would: on every call (``calls[1]`` = -1) or on the call
    ``calls[1]`` alone (``calls[0]`` counts them). What it returns, and tensors sharing its memory, are left alone."""
    g = torch.Generator().manual_seed(0)  # its own stream: the test's random numbers are the test's

    def overwrite(value, keep: set) -> None:
        if isinstance(value, torch.Tensor) and value.numel() and value.untyped_storage().data_ptr() not in keep:
            with torch.no_grad():
                if value.dtype == torch.bool:
                    value.logical_not_()
                elif value.is_floating_point():
                    value.copy_(torch.randn(value.shape, generator=g) * 3)
                else:
                    value.add_(1)
        elif isinstance(value, list) and value:
            value.reverse()
            value.append(value[0])
        if isinstance(value, (list, tuple)):
            for item in value:
                overwrite(item, keep)

    def call(run, args, kwargs):
        result = run(*args, **kwargs)
        calls[0] += 1
        if calls[1] in (-1, calls[0] - 1):
            results = result if isinstance(result, (tuple, list)) else [result]
            keep = {r.untyped_storage().data_ptr() for r in results if isinstance(r, torch.Tensor)}
            module = getattr(run, "__self__", None)  # a module's answer: its own parameters too (mirrored back)
            for value in [*args, *kwargs.values(), *(module.parameters() if module is not None else [])]:
                overwrite(value, keep)
        return result

    if isinstance(answer, type):
        return type(
            answer.__name__, (answer,), {"forward": lambda self, *a, **k: call(answer.forward.__get__(self), a, k)}
        )
    return functools.wraps(answer)(lambda *args, **kwargs: call(answer, args, kwargs))


def _one_correct_fixture_per_function(heavy: bool) -> list:
    found = {}
    for param in _fixtures(heavy):
        path, correct, _ = param.values
        if correct:
            found.setdefault((path.parts[-3], path.stem.split("__")[0]), param)
    return list(found.values())


def _misled(outcome: dict[str, str]) -> dict[str, str]:
    return {test: error for test, error in outcome.items() if error and "modif" not in error}


SCRIBBLED = """these tests read what they handed the answer after the call (take what you expect, and what you hand the
next call, from copies made before it; or check first that the answer left its inputs alone): """


@pytest.mark.parametrize(("path", "correct", "tests"), _one_correct_fixture_per_function(heavy=False))
def test_no_test_reads_what_it_handed_an_answer(path, correct, tests):
    """The grader writes an answer's in-place changes back into the test's tensors, as Python would. So a test that
    reads a tensor or list after handing it to the answer can be fooled: a wrong answer that also rewrites its input
    can make the test's expectation agree (a red team scored 3 points on top_p_filter so; five other tests before).
    A correct answer that overwrites what it was handed, on every call, must pass every test or be told that it
    modified its inputs."""
    assert not (misled := _misled(_run(path, tests, scribble=[0, -1]))), SCRIBBLED + str(misled)


@pytest.mark.slow
@pytest.mark.parametrize(("path", "correct", "tests"), _one_correct_fixture_per_function(heavy=False))
def test_no_test_reads_what_it_handed_an_answer_on_any_one_call(path, correct, tests):
    """As above, the answer overwriting its inputs on one call alone, each call in turn: a rewriting answer chooses
    the inputs it rewrites (the red team's top_p_filter rewrote only the rows of one section, after the section that
    checks for changes). The training cells, seconds each, are checked on every call at once only."""
    calls = [0, -2]
    _run(path, tests, scribble=calls)
    for k in range(calls[0]):
        misled = _misled(_run(path, tests, scribble=[0, k]))
        assert not misled, f"call {k + 1} of {calls[0]}: " + SCRIBBLED + str(misled)


@pytest.mark.slow
@pytest.mark.parametrize(("path", "correct", "tests"), _one_correct_fixture_per_function(heavy=True))
def test_no_training_cell_reads_what_it_handed_an_answer(path, correct, tests):
    assert not (misled := _misled(_run(path, tests, scribble=[0, -1]))), SCRIBBLED + str(misled)
