"""What crosses between the pipeline and the graders' processes, as pydantic models: a :class:`Submission` out, a
:class:`Result` back, validated (strict types, valid text) before it is kept. It imports nothing heavy."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from word2bert_grader.assignment import Assignment, Kind, meta, valid_text
from word2bert_grader.sandbox.bwrap import Limits


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: float = 20.0  # seconds per cell
    cell_timeouts: dict[str, float] = {}  # longer limits by grade id
    limits: Limits = Limits()
    unsafe: bool = False  # no bubblewrap (--unsafe-no-sandbox)
    max_restarts: int = 8
    feedback: bool = True
    student_seconds: float = 120.0  # the time the student's own cells beyond the answers may take together
    replay_seconds: float = 240.0  # replays after restarts, in all (8 of slow cells would outlast the backstop)

    def limit(self, grade_id: str | None) -> float:
        return float(self.cell_timeouts.get(grade_id, self.timeout))

    def of(self, assignment: Assignment) -> Settings:
        """These settings with only this assignment's time limits (another's limit changed regrades nothing here)."""
        ids = {meta(c).get("grade_id") for c in assignment.cells}
        return self.model_copy(update={"cell_timeouts": {k: v for k, v in self.cell_timeouts.items() if k in ids}})

    def backstop(self, assignment: Assignment) -> float:
        """Seconds a whole submission may take: every cell's limit twice, the budgets, start-ups and the pages."""
        runs = (Kind.SETUP, Kind.ANSWER, Kind.TEST)
        cells = sum(self.limit(s.grade_id) for s in assignment.plan(assignment.cells).steps if s.kind in runs)
        return 120 + 2 * self.student_seconds + self.replay_seconds + 2 * cells


class Submission(BaseModel):
    """One notebook to grade against its assignment, with the settings it is graded under."""

    model_config = ConfigDict(frozen=True, ser_json_bytes="base64", val_json_bytes="base64")

    student: str
    assignment: Assignment
    notebook: bytes
    settings: Settings

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment.name


class Result(BaseModel):
    """What grading one submission gave; written answers' points (``written``) and texts (``answers``) apart."""

    model_config = ConfigDict(strict=True, extra="forbid")

    student: str
    assignment: str
    cells: dict[str, float] = {}  # grade id of a test -> points earned
    max_score: float = 0.0
    written: dict[str, float] = {}  # grade id of a written answer -> its points
    answers: dict[str, str] = {}  # grade id of a written answer -> the student's text
    score: float = 0.0
    failure: str = ""  # why the submission could not be graded ("": it was)
    notes: list[str] = []
    tampering: list[str] = []
    seconds: float = 0.0
    feedback: str = ""  # the feedback page (HTML)
    autograded: str = ""  # the graded notebook (JSON)
    # the failure was the grading machinery's (a worker died), not the submission's: not cached, tried again
    transient: bool = False

    @classmethod
    def failed(cls, student: str, assignment: Assignment, reason: str, transient: bool = False) -> Result:
        """The result of a submission that could not be graded (yet): zero on every test, with the reason."""
        points, written = assignment.points, dict(assignment.written)
        zero = {"cells": dict.fromkeys(points, 0.0), "max_score": sum(points.values()), "written": written}
        return cls(student=student, assignment=assignment.name, failure=reason, transient=transient, **zero)

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment

    @classmethod
    def checked(cls, data) -> Result | None:
        """The result ``data`` holds, its strings made valid text; None where it is not one."""
        try:
            return cls.model_validate(valid_data(data))
        except ValidationError:
            return None

    def valid(self) -> Result | None:
        """This result with every string made valid text (student code may print lone surrogates)."""
        return Result.checked(self.model_dump())


def valid_data(value):
    """``value`` (dicts, lists, strings, numbers) with every string made valid text."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_data(k): valid_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_data(v) for v in value]
    return value
