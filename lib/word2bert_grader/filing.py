"""What both collectors of downloads (:mod:`word2bert_grader.downloads`, :mod:`word2bert_grader.lms_collect`)
share: their :class:`Problem` reports, the checks on ids and zip members, files and members read under a cap and
never through a link, and notebooks written atomically under ``submitted/<student>/<assignment>/``.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import zipfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

MAX_MEMBER_BYTES = 50 * 2**20  # one notebook, decompressed
MAX_MEMBERS = 1000  # members of one zip
MAX_ARCHIVE_BYTES = 200 * 2**20  # one zip, all members decompressed (and the zip file itself)

_ID = re.compile(r"[A-Za-z0-9._@-]+")
_FOLLOW_NOTHING = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


@dataclass
class Problem:
    source: str  # the download's file name (and member, e.g. "bob.zip:../x.ipynb")
    reason: str  # for the instructor, one line
    student: str | None = None  # set when the pair got nothing collected and needs a failed row
    assignment: str | None = None


@dataclass
class Collected:
    student: str
    assignment: str
    source: str


class Refused(Exception):
    """A download (or member) that is not collected; the message is the reason."""


# --- Ids and sizes -------------------------------------------------------------------------------


def checked_assignments(assignments: Collection[str]) -> list[str]:
    # Assignment names become folder names: the caller's, but checked like ids all the same.
    if isinstance(assignments, str):
        raise TypeError("assignments: a collection of names, not one string")
    names = sorted(set(assignments), key=len, reverse=True)  # longest first: most specific suffix
    for name in names:
        if id_problem(name):
            raise ValueError(f"assignment name {name!r}: {id_problem(name)}")
    return names


def id_problem(student: str) -> str | None:
    if not _ID.fullmatch(student):
        return "has characters other than letters, digits and . _ @ -"
    if student[0] in "-.":
        return f"begins with {student[0]!r}"
    if student[0] == "@":  # grades.csv's row would start with it, and a spreadsheet reads "@A1-B1" as a formula
        return "begins with '@', which a spreadsheet reads as a formula"
    return None


def size_problem(size: int, cap: int) -> str | None:
    if size == 0:
        return "an empty file"
    if size > cap:
        return f"{size} bytes, more than the {cap}-byte limit"
    return None


# --- Zip members ---------------------------------------------------------------------------------


def path_problem(name: str) -> str | None:
    """Why a member's path could land outside the folder it is extracted to, if it could."""
    if "\\" in name:  # a separator on Windows: "..\\x" or "C:\\x" there
        return "a backslash in its path"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "an absolute path"
    if ".." in name.split("/"):
        return "'..' in its path"
    return None


def type_problem(member: zipfile.ZipInfo) -> str | None:
    mode = member.external_attr >> 16  # Unix mode; 0 from zippers that record none (Windows)
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        return "not a regular file"
    return None


# --- Reading and writing notebooks ----------------------------------------------------------------


def open_regular(path: Path, follow_links: bool = False):
    """``path`` opened for binary reading, refused if it has become a symlink (unless ``follow_links``: an
    instructor's file) or a special file (a FIFO, whose reading would wait for a writer for ever)."""
    flags = os.O_NONBLOCK if follow_links else _FOLLOW_NOTHING
    f = open(path, "rb", opener=lambda p, more: os.open(p, more | flags))
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        raise Refused("not a regular file")
    return f


def read_file(path: Path, cap: int) -> bytes:
    with open_regular(path) as f:
        return _read_capped(f, cap)


def read_member(path: Path, member: zipfile.ZipInfo, cap: int) -> bytes:
    with open_regular(path) as f, zipfile.ZipFile(f) as archive, archive.open(member) as data:
        return _read_capped(data, cap)


def _read_capped(f, cap: int) -> bytes:
    # Count what decompression actually yields: a header may lie about the size.
    data = f.read(cap + 1)
    if len(data) > cap:
        raise Refused(f"more than the {cap}-byte limit once decompressed")
    return data


def checked(data: bytes) -> bytes:
    if not data:
        raise Refused("an empty file")
    return data


def write_notebook(
    submitted: Path,
    student: str,
    assignment: str,
    data: bytes,
    beside: dict[str, bytes] | None = None,
    mtime: float | None = None,
) -> None:
    """The notebook (with ``mtime``, the download's time, if given), and the files ``beside`` it (the LMS's
    metadata: :mod:`word2bert_grader.lms`), each written atomically."""
    submitted.mkdir(parents=True, exist_ok=True)
    folder = _own_folder(_own_folder(submitted, student, student), assignment, f"{student}/{assignment}")
    for name, content in (beside or {}).items():
        _write_file(folder, name, content)
    _write_file(folder, f"{assignment}.ipynb", data, mtime)


def _write_file(folder: Path, name: str, data: bytes, mtime: float | None = None) -> None:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from a grader run as another user
        if mtime is not None:
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, folder / name)  # replaces a symlink there, never follows
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _own_folder(parent: Path, name: str, shown: str) -> Path:
    """``parent/name`` as a real folder of exactly that name, made if missing; never a symlink."""
    path = parent / name
    with contextlib.suppress(FileExistsError):
        path.mkdir()
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        raise Refused(f"submitted/{shown} is a symlink (not written through)")
    if not stat.S_ISDIR(mode):
        raise Refused(f"submitted/{shown} exists and is not a folder")
    # On a case-insensitive file system "Alice" would land in alice's folder.
    if name not in os.listdir(parent):
        raise Refused(f"submitted/{shown} exists under another spelling (another student's?)")
    return path


def describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
