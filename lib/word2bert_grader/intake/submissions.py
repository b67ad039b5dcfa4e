"""The submissions on disk, ``submitted/<student>/<assignment>/<assignment>.ipynb``: found and read, never through a
link and within a size cap, for grading (:mod:`word2bert_grader.pipeline`) and for the similarity report."""

import os
from collections.abc import Collection
from pathlib import Path

from word2bert_grader.assignment import printable

MAX_NOTEBOOK_BYTES = 64 * 2**20


def find(
    root: Path, names: Collection[str], roster: set[str] | None = None
) -> tuple[list[tuple[str, str, Path]], list[tuple[str, str, str]]]:
    """(student, assignment, notebook path) of every submission, and (student, assignment, why) of those refused."""
    submitted, found, refused = root / "submitted", [], []
    for folder in sorted(submitted.iterdir()) if submitted.is_dir() else []:
        student = folder.name
        if student.startswith(".") or not folder.is_dir():
            continue  # .ipynb_checkpoints and stray files are nobody's submission
        for a in sorted(p for p in folder.iterdir() if p.name in names):
            if printable(student) != student:  # no file, page or CSV row could name it
                refused.append((printable(student), a.name, "refused: the folder's name is not text"))
            elif roster is not None and student not in roster:
                refused.append((student, a.name, "refused: not on the roster"))
            elif folder.is_symlink() or a.is_symlink():
                refused.append((student, a.name, "refused: the folder is a symlink"))
            else:
                found.append((student, a.name, a / f"{a.name}.ipynb"))
    return found, refused


def read(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes | str:
    """A submission's bytes, or why they cannot be read (never following a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return f"no {path.name} in the submission"
    except OSError as error:
        return f"cannot read {path.name} ({error.strerror})"
    with os.fdopen(fd, "rb") as stream:
        data = stream.read(limit + 1)
    return data if len(data) <= limit else f"{path.name} is larger than {limit // 2**20} MB"
