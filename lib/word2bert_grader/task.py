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
        """These settings for one assignment: only its own cells' time limits, so that a changed limit of another
        assignment regrades nothing of this one (the settings are part of the cache key)."""
        ids = {meta(c).get("grade_id") for c in assignment.cells}
        return self.model_copy(update={"cell_timeouts": {k: v for k, v in self.cell_timeouts.items() if k in ids}})

    def backstop(self, assignment: Assignment) -> float:
        """Seconds the whole grading of a submission may take: every source cell's limit twice, the student's own
        cells' budget, the replays' budget, start-ups and the feedback (student cells cannot stretch it: their count
        and time are capped, and so are replays and the sizes of what the pages show)."""
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
    """What grading one submission gave: scores by test cell, what went wrong, the pages to write. Written answers
    are graded by hand: their points are counted apart (``written``), their texts kept (``answers``)."""

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
    # the cause of a failure was the grading machinery (a worker died), not the submission: not cached, so that
    # the next run tries again
    transient: bool = False

    @classmethod
    def failed(cls, student: str, assignment: Assignment, reason: str, transient: bool = False) -> Result:
        """The result of a submission that could not be graded (yet): zero on every test, with the reason."""
        return cls(
            student=student,
            assignment=assignment.name,
            cells=dict.fromkeys(assignment.points, 0.0),
            max_score=sum(assignment.points.values()),
            written=dict(assignment.written),
            failure=reason,
            transient=transient,
        )

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment

    @classmethod
    def checked(cls, data) -> Result | None:
        """The result that ``data`` holds (every string made valid text), or None where it is not one (a damaged
        or foreign cache entry, a bug of the grader's: the submission is graded again or failed)."""
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
