"""What crosses between the pipeline and the processes that grade: a :class:`Submission` out, a :class:`Result` back.

Both are plain data, so that they travel to a local worker, a Dask worker or a subprocess (as JSON) unchanged;
this module imports nothing heavy, so the pipeline reads and writes them without loading the harness.
"""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass, field, fields

from word2bert_grader import assignment as notebook
from word2bert_grader.sandbox.bwrap import Limits


@dataclass
class Settings:
    timeout: float = 20.0  # seconds per cell
    cell_timeouts: dict[str, float] = field(default_factory=dict)  # longer limits by grade id
    limits: Limits = field(default_factory=Limits)
    unsafe: bool = False  # no bubblewrap (--unsafe-no-sandbox)
    max_restarts: int = 8
    feedback: bool = True
    student_seconds: float = 120.0  # the time the student's own cells beyond the answers may take together
    # Replays after restarts, in all: each restart runs again every cell that finished before (each within its own
    # limit), so without a budget of their own 8 restarts of a notebook of slow cells outlast the whole submission's
    # limit (whose overtime is graded again on every run). Honest cells take seconds: this is many restarts' worth.
    replay_seconds: float = 240.0

    def limit(self, grade_id) -> float:
        return float(self.cell_timeouts.get(grade_id, self.timeout))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Settings:
        return cls(**{**d, "limits": Limits(**d["limits"])})


@dataclass(frozen=True)
class Submission:
    """One notebook to grade against its source notebook, with the settings it is graded under."""

    student: str
    assignment: str
    notebook: bytes
    source: bytes
    settings: Settings

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment

    def to_json(self) -> dict:
        return {
            "student": self.student,
            "assignment": self.assignment,
            "notebook": base64.b64encode(self.notebook).decode(),
            "source": base64.b64encode(self.source).decode(),
            "settings": self.settings.to_dict(),
        }

    @classmethod
    def from_json(cls, d: dict) -> Submission:
        return cls(
            d["student"],
            d["assignment"],
            base64.b64decode(d["notebook"]),
            base64.b64decode(d["source"]),
            Settings.from_dict(d["settings"]),
        )


@dataclass
class Result:
    """What grading one submission gave: scores by test cell, what went wrong, the pages to write.

    Written answers are graded by hand (formgrader): their points (``written``) are counted apart, and the
    pipeline adds the scores the instructor has given; ``answers`` holds the student's text of each, for that.
    """

    student: str
    assignment: str
    cells: dict[str, float] = field(default_factory=dict)  # grade id of a test -> points earned
    max_score: float = 0.0
    written: dict[str, float] = field(default_factory=dict)  # grade id of a written answer -> its points
    answers: dict[str, str] = field(default_factory=dict)  # grade id of a written answer -> the student's text
    score: float = 0.0
    failure: str = ""  # why the submission could not be graded ("": it was)
    notes: list[str] = field(default_factory=list)
    tampering: list[str] = field(default_factory=list)
    seconds: float = 0.0
    feedback: str = ""  # the feedback page (HTML)
    autograded: str = ""  # the graded notebook (JSON)
    sandbox: dict = field(default_factory=dict)  # what the sandbox said of itself (uid, pid, rlimits)
    # the cause of a failure was the grading machinery (a worker died), not the submission: not cached, so that
    # the next run tries again
    transient: bool = False

    @classmethod
    def failed(cls, student: str, assignment: str, source: bytes, reason: str, transient: bool = False) -> Result:
        """The result of a submission that could not be graded (yet): zero on every test, with the reason."""
        source_cells = notebook.read_cells(source)
        points = notebook.points(source_cells)
        return cls(
            student,
            assignment,
            cells=dict.fromkeys(points, 0.0),
            max_score=sum(points.values()),
            written=notebook.written_points(source_cells),
            failure=reason,
            transient=transient,
        )

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment

    def to_json(self) -> dict:
        data = asdict(self)
        data["failed"] = data.pop("failure")  # the key of the results cached before this class
        return data

    @classmethod
    def from_json(cls, data) -> Result | None:
        """The result that ``data`` holds (every string made valid text), or None where it is not one (a damaged
        or foreign cache entry: the submission is graded again)."""
        data = notebook.valid_data(data)
        if not isinstance(data, dict):
            return None
        values = {}
        for f in fields(cls):
            value = data.get("failed" if f.name == "failure" else f.name)
            if not _KINDS[f.name](value):
                return None
            values[f.name] = value
        return cls(**values)

    def valid(self) -> Result | None:
        """This result with every string made valid text (student code may print lone surrogates); None where a
        field holds what a result cannot (a bug of the grader's)."""
        return Result.from_json(self.to_json())


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _mapping(check):
    return lambda value: isinstance(value, dict) and all(isinstance(k, str) and check(v) for k, v in value.items())


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


_KINDS = {
    "student": lambda v: isinstance(v, str),
    "assignment": lambda v: isinstance(v, str),
    "cells": _mapping(_number),
    "max_score": _number,
    "written": _mapping(_number),
    "answers": _mapping(lambda v: isinstance(v, str)),
    "score": _number,
    "failure": lambda v: isinstance(v, str),
    "notes": _strings,
    "tampering": _strings,
    "seconds": _number,
    "feedback": lambda v: isinstance(v, str),
    "autograded": lambda v: isinstance(v, str),
    "sandbox": lambda v: isinstance(v, dict),
    "transient": lambda v: isinstance(v, bool),
}
