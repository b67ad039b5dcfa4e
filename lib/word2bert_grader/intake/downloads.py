"""Collect a folder of LMS downloads into ``submitted/<student>/<assignment>/<assignment>.ipynb``.

Instructors download every submission from their learning-management system (LMS) into one folder;
:func:`collect` files each notebook under its student. It replaces ``nbgrader zip_collect``, which
collected nobody when one zip held a ``../`` member or one student had two files, and let a file
named after another student, inside a zip, replace that student's honest work.

Names, of the files in the downloads folder (the LMS chooses them)::

    <student>_<assignment>.ipynb      <student>_attempt_<timestamp>_<assignment>.ipynb
    <student>.zip   <student>_<anything>.zip   <student>_attempt_<timestamp>_<anything>.zip

``<assignment>`` is one of the caller's assignment names, matched as the suffix (names such as
``01-word2vec`` hold dashes); a timestamp is digits and dashes (``2026-01-05-10-00-00``). Student
ids are ``[A-Za-z0-9._@-]+`` and may not begin with ``-`` or ``.``. As an id may hold ``_``, in a
zip's name without ``_attempt_<timestamp>_`` the id ends at the first ``_``, unless the roster names
exactly one longer prefix (pass a roster when ids hold ``_``).

Rules. A download that breaks one is reported as a :class:`Problem` with its reason, and never stops
the others (reasons begin with ``ignored:``, ``refused:``, ``superseded:`` or ``conflict:``).

1. The student comes only from the outer file name, never from a name inside an archive: a member
   counts for assignment A if its base name is ``A.ipynb`` or ends with ``_A.ipynb``, whatever
   precedes it (``alice_A.ipynb`` inside ``bob_x.zip`` is Bob's A), in any safe subfolder.
2. Each zip is read on its own, in memory; nothing is extracted. A member whose path could escape a
   folder (a ``..`` part, an absolute or drive path, a backslash), a symlink or other non-regular
   file, an encrypted member, an empty one, or one bigger than ``max_member_bytes`` (checked on the
   decompressed bytes as they are read, not only on the header's claim: zip bombs) is refused, and
   the rest of its archive is still considered. A zip with more than :data:`MAX_MEMBERS` members or
   :data:`MAX_ARCHIVE_BYTES` in all, or that is no zip, is refused whole. Zips inside zips are not
   opened.
3. Files that match no name (``notes.txt``, ``.DS_Store``), subfolders of the downloads folder and
   macOS metadata inside zips are ignored; symlinks in the downloads folder are refused.
4. Several downloads for one (student, assignment): the newest attempt timestamp wins and the others
   are superseded. Without a single newest (a download without a timestamp, or a tie) none is
   collected: a conflict.
5. With a roster (:func:`read_roster`), ids not on it are refused.
6. Ids never reach a command line: this module is pure Python.
7. A notebook is written atomically (a temporary file in its folder, then ``os.replace``), with the download's time
   (the time of the file in the downloads folder, for a zip the zip's: :mod:`intake.deadlines` reads
   it as the time of the submission; a member's time inside a zip is whatever the zipper wrote), replacing
   an earlier download of the same (student, assignment); nothing else under ``submitted/`` is
   touched. A student or assignment folder that exists as a symlink, as a file, or under another
   spelling (a case-insensitive file system) is refused rather than written through. The notebook's
   JSON is not checked here: the grader reports invalid notebooks.

A Problem names ``student`` and ``assignment`` when it leaves that pair with nothing collected (a
conflict, a refused or unreadable notebook): the grade sheet must still show a failed row for it.

The checks, the capped reading and the atomic writing are :mod:`intake.filing`'s, shared with the
Canvas and Moodle collector.
"""

from __future__ import annotations

import csv
import functools
import io
import re
import stat
import zipfile
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from word2bert_grader.intake.filing import (
    MAX_ARCHIVE_BYTES,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    Collected,
    Problem,
    Refused,
    checked,
    checked_assignments,
    describe,
    id_problem,
    open_regular,
    path_problem,
    read_file,
    read_member,
    size_problem,
    type_problem,
    write_notebook,
)

_TIMESTAMP = r"(?P<timestamp>[0-9]+(?:-[0-9]+)*)"
# Lazy ids: "<id>_attempt_<ts>_..." reads as an attempt, not as the id "<id>_attempt_<ts>".
_ZIP_ATTEMPT = re.compile(rf"(?P<student>.+?)_attempt_{_TIMESTAMP}_.*\.zip", re.DOTALL)
_ID_FIELDS = ("id", "student_id", "student")  # roster CSV columns, first found wins


@dataclass
class _Candidate:
    student: str
    assignment: str
    source: str
    timestamp: tuple[int, ...] | None
    read: Callable[[int], bytes]  # max bytes -> the notebook; raises Refused (or zipfile's errors)
    mtime: float | None = None  # the download's time (a zip's own, for its members)


def collect(
    downloads: Path,
    submitted: Path,
    assignments: Collection[str],
    roster: set[str] | None = None,
    max_member_bytes: int = MAX_MEMBER_BYTES,
) -> tuple[list[Collected], list[Problem]]:
    """File every download in ``downloads`` under ``submitted``; see the module's rules.

    Returns what was collected (sorted by student, assignment) and every problem, ignored files
    included. Only a missing ``downloads`` folder or a bad assignment name raises.
    """
    names = checked_assignments(assignments)
    candidates: list[_Candidate] = []
    problems: list[Problem] = []
    for path in sorted(Path(downloads).iterdir()):
        try:
            found, refused = _scan_download(path, names, roster, max_member_bytes)
        except Exception as e:  # a hostile file can make zipfile raise almost anything
            found, refused = [], [Problem(path.name, f"refused: cannot read it ({describe(e)})")]
        candidates += found
        problems += refused
    winners, lost = _choose(candidates)
    problems += lost
    collected = []
    for c in winners:
        try:
            write_notebook(Path(submitted), c.student, c.assignment, checked(c.read(max_member_bytes)), mtime=c.mtime)
        except Refused as e:
            problems.append(Problem(c.source, f"refused: {e}", c.student, c.assignment))
        except Exception as e:  # a damaged member (bad CRC, broken deflate) or a failed write
            problems.append(
                Problem(c.source, f"refused: cannot read or write it ({describe(e)})", c.student, c.assignment)
            )
        else:
            collected.append(Collected(c.student, c.assignment, c.source))
    # Only pairs left with nothing collected need a failed row in the grade sheet.
    done = {(c.student, c.assignment) for c in collected}
    for p in problems:
        if (p.student, p.assignment) in done:
            p.student = p.assignment = None
    return sorted(collected, key=lambda c: (c.student, c.assignment)), problems


def read_roster(path: Path) -> set[str]:
    """Student ids of a roster: one id per line (blank lines and ``#`` comments ignored), or a CSV
    (a ``.csv`` file, or a first line with a comma) with a column ``id``, ``student_id`` or
    ``student``."""
    if not Path(path).is_file():  # the instructor's file: one plain check (a FIFO would be waited on for ever)
        raise ValueError(f"{path} is not a file")
    text = Path(path).read_text(encoding="utf-8").removeprefix("\ufeff")  # spreadsheets write a byte-order mark
    ids = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    ids = [i for i in ids if i]
    if Path(path).suffix.lower() == ".csv" or (ids and "," in ids[0]):
        return _read_csv_roster(text, path)
    return set(ids)


def _read_csv_roster(text: str, path: Path) -> set[str]:
    rows = csv.DictReader(io.StringIO(text, newline=""))
    fields = {(name or "").strip().lower(): name for name in rows.fieldnames or []}
    column = next((fields[f] for f in _ID_FIELDS if f in fields), None)
    if column is None:
        wanted = ", ".join(_ID_FIELDS)
        raise ValueError(f"{path}: a roster CSV needs a column named one of {wanted}")
    ids = ((row.get(column) or "").strip() for row in rows)
    return {i for i in ids if i}


# --- Reading the downloads folder -----------------------------------------------------------------
def _scan_download(
    path: Path, assignments: list[str], roster: set[str] | None, cap: int
) -> tuple[list[_Candidate], list[Problem]]:
    """The candidates one entry of the downloads folder offers, and its problems."""
    name = path.name
    info = path.lstat()
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return [], [Problem(name, "refused: a symlink (downloads must be plain files)")]
    if stat.S_ISDIR(mode):
        return [], [Problem(name, "ignored: a subfolder (only the folder's own files count)")]
    if not stat.S_ISREG(mode):
        return [], [Problem(name, "refused: not a regular file")]
    if name.endswith(".ipynb"):
        notebook = _notebook_name(assignments).fullmatch(name)
        if notebook is None:
            return [], [
                Problem(
                    name, "ignored: not named <student>_[attempt_<timestamp>_]<assignment>.ipynb for a known assignment"
                )
            ]
        student, stamp, assignment = notebook.group("student", "timestamp", "assignment")
    elif name.endswith(".zip") and name != ".zip":
        assignment = None  # the members say
        try:
            student, stamp = _zip_owner(name, roster)
        except Refused as e:
            return [], [Problem(name, f"refused: {e}")]
    else:
        return [], [Problem(name, "ignored: neither a notebook nor a zip")]
    why = id_problem(student) or _roster_problem(student, roster)
    if why:
        return [], [Problem(name, f"refused: student id {student!r} {why}")]
    timestamp = tuple(int(part) for part in stamp.split("-")) if stamp else None
    if assignment is None:
        found, problems = _scan_zip(path, student, timestamp, assignments, cap)
        for c in found:
            c.mtime = info.st_mtime
        return found, problems
    why = size_problem(info.st_size, cap)
    if why:
        return [], [Problem(name, f"refused: {why}", student, assignment)]
    read = functools.partial(read_file, path)  # later, and only if it wins
    return [_Candidate(student, assignment, name, timestamp, read, info.st_mtime)], []


def _notebook_name(assignments: list[str]) -> re.Pattern[str]:
    known = "|".join(re.escape(a) for a in assignments) or "(?!)"
    return re.compile(rf"(?P<student>.+?)_(?:attempt_{_TIMESTAMP}_)?(?P<assignment>{known})\.ipynb", re.DOTALL)


def _zip_owner(name: str, roster: set[str] | None) -> tuple[str, str | None]:
    """(student, timestamp or None) of a zip's name."""
    attempt = _ZIP_ATTEMPT.fullmatch(name)
    if attempt:
        return attempt["student"], attempt["timestamp"]
    stem = name.removesuffix(".zip")
    # "<student>.zip" or "<student>_<anything>.zip", and ids may hold "_": every prefix ending
    # before a "_" could be the id. The shortest is the LMS's convention; a roster may tell.
    prefixes = [stem[:i] for i, ch in enumerate(stem) if ch == "_" and i] + [stem]
    if roster is None:
        return prefixes[0], None
    known = [p for p in prefixes if p in roster]
    if len(known) > 1:
        raise Refused(f"whose download? the roster has {', '.join(map(repr, known))}")
    return (known or prefixes)[0], None


def _roster_problem(student: str, roster: set[str] | None) -> str | None:
    return None if roster is None or student in roster else "is not on the roster"


# --- Zips -----------------------------------------------------------------------------------------


def _scan_zip(
    path: Path, student: str, timestamp: tuple[int, ...] | None, assignments: list[str], cap: int
) -> tuple[list[_Candidate], list[Problem]]:
    """A zip's candidates (its notebooks, all the student's) and problems; nothing is read yet."""
    name = path.name
    if path.stat().st_size > MAX_ARCHIVE_BYTES:  # before zipfile reads its whole directory
        return [], [Problem(name, f"refused: a zip of more than {MAX_ARCHIVE_BYTES} bytes")]
    try:
        with open_regular(path) as f, zipfile.ZipFile(f) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile as e:
        return [], [Problem(name, f"refused: not a valid zip ({e})")]
    if len(members) > MAX_MEMBERS:
        return [], [Problem(name, f"refused: {len(members)} members, more than {MAX_MEMBERS}")]
    total = sum(m.file_size for m in members)
    if total > MAX_ARCHIVE_BYTES:
        return [], [Problem(name, f"refused: {total} bytes uncompressed, more than {MAX_ARCHIVE_BYTES}")]
    candidates, problems = [], []
    for member in members:
        found = _scan_member(path, member, student, timestamp, assignments, cap)
        if isinstance(found, _Candidate):
            candidates.append(found)
        elif found is not None:
            problems.append(found)
    return candidates, problems


def _scan_member(
    path: Path,
    member: zipfile.ZipInfo,
    student: str,
    timestamp: tuple[int, ...] | None,
    assignments: list[str],
    cap: int,
) -> _Candidate | Problem | None:
    """One member: a candidate, a problem, or None for a folder entry (nothing to collect)."""
    name = member.filename
    source = f"{path.name}:{name}"
    base = re.split(r"[/\\]", name)[-1]
    assignment = _member_assignment(base, assignments)

    def refused(why: str) -> Problem:  # a notebook of the student's that fails gets a row
        return Problem(source, f"refused: {why}", student if assignment else None, assignment)

    why = path_problem(name)
    if why:
        return refused(why)
    if member.is_dir():
        return None
    why = type_problem(member)
    if why:
        return refused(why)
    if name.startswith("__MACOSX/") or base.startswith("._"):
        return Problem(source, "ignored: macOS metadata")
    if base.lower().endswith(".zip"):
        return Problem(source, "ignored: a zip inside the zip (not opened)")
    if assignment is None:
        return Problem(source, "ignored: not a notebook of a known assignment")
    if member.flag_bits & 0x1:
        return refused("encrypted")
    why = size_problem(member.file_size, cap)
    if why:
        return refused(why)
    read = functools.partial(read_member, path, member)  # later, and only if it wins
    return _Candidate(student, assignment, source, timestamp, read)


def _member_assignment(base: str, assignments: list[str]) -> str | None:
    # assignments is longest first, so "x_a-b.ipynb" is a-b's rather than b's.
    for a in assignments:
        if base == f"{a}.ipynb" or base.endswith(f"_{a}.ipynb"):
            return a
    return None


# --- Choosing among several downloads -------------------------------------------------------------


def _choose(candidates: Iterable[_Candidate]) -> tuple[list[_Candidate], list[Problem]]:
    """One candidate per (student, assignment) that has a single newest; problems for the rest."""
    groups: dict[tuple[str, str], list[_Candidate]] = {}
    for c in candidates:
        groups.setdefault((c.student, c.assignment), []).append(c)
    winners, problems = [], []
    for (student, assignment), group in groups.items():
        newest, why = _newest(group)
        if newest is None:
            problems.append(
                Problem(
                    ", ".join(c.source for c in group),
                    f"conflict: {len(group)} downloads for {student}/{assignment} and {why}; none collected",
                    student,
                    assignment,
                )
            )
            continue
        winners.append(newest)
        problems += [
            Problem(c.source, f"superseded: {newest.source} is a newer attempt", student, assignment)
            for c in group
            if c is not newest
        ]
    return winners, problems


def _newest(group: list[_Candidate]) -> tuple[_Candidate | None, str]:
    if len(group) == 1:
        return group[0], ""
    stamps = [c.timestamp for c in group]
    if None in stamps:
        return None, "not all of them carry an attempt timestamp"
    if len({len(s) for s in stamps}) > 1:
        return None, "their attempt timestamps have different forms"
    top = max(stamps)
    if stamps.count(top) > 1:
        return None, "the newest attempt timestamp is shared"
    return group[stamps.index(top)], ""
