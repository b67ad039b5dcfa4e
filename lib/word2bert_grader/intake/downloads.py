"""Downloads collected into ``submitted/<student>/<assignment>/``: what every format shares, and the plain format
(README.md, "Downloads"; Canvas's and Moodle's are :mod:`.lms`'s)."""

import contextlib
import csv
import functools
import hashlib
import io
import os
import re
import stat
import tempfile
import zipfile
from collections import namedtuple
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

MAX_MEMBER_BYTES = 50 * 2**20  # one notebook, decompressed
MAX_MEMBERS = 1000  # members of one student's zip
MAX_ARCHIVE_BYTES = 200 * 2**20  # one student's zip, all members decompressed (and the zip file itself)
_ID = re.compile(r"[A-Za-z0-9._@-]+")
_TIMESTAMP = r"(?P<timestamp>[0-9]+(?:-[0-9]+)*)"
# Lazy ids: "<id>_attempt_<ts>_..." reads as an attempt, not as the id "<id>_attempt_<ts>".
_ZIP_ATTEMPT = re.compile(rf"(?P<student>.+?)_attempt_{_TIMESTAMP}_.*\.zip", re.DOTALL)
_ID_FIELDS = ("id", "student_id", "student")  # roster CSV columns, first found wins


@dataclass
class Problem:
    source: str  # the download's file name (and member, e.g. "bob.zip:../x.ipynb")
    reason: str  # for the instructor, one line: "ignored: ", "refused: ", "superseded: " or "conflict: ", then why
    student: str | None = None  # set when the pair got nothing collected and needs a failed row
    assignment: str | None = None


Collected = namedtuple("Collected", "student assignment source")  # a notebook filed under submitted/


class Refused(Exception):
    """A download (or member) that is not collected; the message is the reason."""


@dataclass
class Candidate:
    """A notebook a download offers for (student, assignment), read only when it is chosen."""

    student: str
    assignment: str
    source: str
    order: tuple | None  # the newest wins (an attempt timestamp, Canvas's attachment id); None: no order
    read: Callable[[int], bytes]  # max bytes -> the notebook; raises Refused (or zipfile's errors)
    mtime: float | None = None  # the download's time: the notebook keeps it (deadlines.py reads it)
    named: bool = True  # named for its assignment: preferred to the student's other notebooks
    beside: dict[str, bytes] = field(default_factory=dict)  # files written beside it (lms.json, timestamp.txt)
    name: str = ""  # the path a platform gave it in its download (lms.py)
    size: int = 0  # its bytes, as its folder or zip says


def checked_assignments(assignments: Collection[str]) -> list[str]:
    """Assignment names, checked like ids (they become folder names), longest first (the most specific suffix)."""
    if isinstance(assignments, str):
        raise TypeError("assignments: a collection of names, not one string")
    names = sorted(set(assignments), key=len, reverse=True)
    for name in names:
        if id_problem(name):
            raise ValueError(f"assignment name {name!r}: {id_problem(name)}")
    return names


def id_problem(student: str) -> str | None:
    if not _ID.fullmatch(student):
        return "has characters other than letters, digits and . _ @ -"
    if student[0] == "@":  # grades.csv's row would start with it, and a spreadsheet reads "@A1-B1" as a formula
        return "begins with '@', which a spreadsheet reads as a formula"
    return f"begins with {student[0]!r}" if student[0] in "-." else None


def size_problem(size: int, cap: int) -> str | None:
    if size == 0:
        return "an empty file"
    return f"{size} bytes, more than the {cap}-byte limit" if size > cap else None


def member_problem(member: zipfile.ZipInfo, name: str) -> str | None:
    """Why a zip member is not read ("refused: ...", "ignored: ..."); "" for a folder; None: read it."""
    base, mode = name.rsplit("/", 1)[-1], member.external_attr >> 16  # Unix mode; 0 from zippers that record none
    if "\\" in name:  # a separator on Windows: "..\\x" or "C:\\x" there
        return "refused: a backslash in its path"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "refused: an absolute path"
    if ".." in name.split("/"):
        return "refused: '..' in its path"
    if member.is_dir():
        return ""
    if stat.S_ISLNK(mode) or stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        return "refused: a symlink" if stat.S_ISLNK(mode) else "refused: not a regular file"
    if name.startswith("__MACOSX/") or base.startswith("._") or base == ".DS_Store":
        return "ignored: macOS metadata"
    if base.lower().endswith(".zip"):
        return "ignored: a zip inside the zip (not opened)"
    return "refused: encrypted" if member.flag_bits & 0x1 else None


def describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def open_regular(path: Path):
    """``path`` opened for binary reading, refused if it is a symlink or a special file (a FIFO would block)."""
    f = open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW | os.O_NONBLOCK))
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
    data = f.read(cap + 1)  # what decompression yields is counted: a header may lie about the size
    if len(data) > cap:
        raise Refused(f"more than the {cap}-byte limit once decompressed")
    if not data:
        raise Refused("an empty file")
    return data


def write_notebook(submitted: Path, c: Candidate, data: bytes) -> None:
    """The notebook and the files beside it, atomically, in folders that are never a link or another spelling."""
    submitted.mkdir(parents=True, exist_ok=True)
    folder = submitted
    for name, shown in ((c.student, c.student), (c.assignment, f"{c.student}/{c.assignment}")):
        folder = folder / name
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
        mode = folder.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise Refused(f"submitted/{shown} is a symlink (not written through)")
        if not stat.S_ISDIR(mode):
            raise Refused(f"submitted/{shown} exists and is not a folder")
        if name not in os.listdir(folder.parent):  # "Alice" would land in alice's folder
            raise Refused(f"submitted/{shown} exists under another spelling (another student's?)")
    files = [(name, content, None) for name, content in c.beside.items()]
    for name, content, mtime in [*files, (f"{c.assignment}.ipynb", data, c.mtime)]:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from a grader run as another user
            if mtime is not None:
                os.utime(tmp, (mtime, mtime))
            os.replace(tmp, folder / name)  # replaces a symlink there, never follows it
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def settle(
    candidates: list[Candidate], problems: list[Problem], submitted: Path, cap: int, copies_once: bool = False
) -> tuple[list[Collected], list[Problem]]:
    """One notebook per (student, assignment): the newest named for it, or none (a conflict); the rest are problems."""
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in candidates:
        groups.setdefault((c.student, c.assignment), []).append(c)
    collected = []
    for (student, assignment), group in groups.items():
        named = [c for c in group if c.named] or group
        if len(named) < len(group):
            why = f"superseded: another file is named {assignment}.ipynb"
            problems += [Problem(c.source, why, student, assignment) for c in group if not c.named]
        if copies_once and len(named) > 1:
            copies: dict[str, Candidate] = {}
            for c in named:
                try:
                    digest = hashlib.sha256(c.read(cap)).hexdigest()
                except Exception as e:  # damaged, oversized once decompressed, unreadable
                    problems.append(Problem(c.source, f"refused: {reason(e, 'read')}", student, assignment))
                    continue
                if digest not in copies or (c.order or ()) > (copies[digest].order or ()):
                    copies[digest] = c
            named = list(copies.values())
        if not named:
            continue
        ranked = sorted(named, key=lambda c: c.order or ())
        orders = [c.order for c in ranked]
        if len(ranked) > 1 and (None in orders or orders.count(orders[-1]) > 1):
            why = f"{len(ranked)} notebooks for {student}/{assignment} that cannot be told apart"
            sources = ", ".join(c.source for c in named)
            problems.append(Problem(sources, f"conflict: {why}; none collected", student, assignment))
            continue
        winner, why = ranked[-1], f"superseded: {ranked[-1].source} is newer"
        problems += [Problem(c.source, why, student, assignment) for c in ranked[:-1]]
        doing = "read"
        try:
            data, doing = winner.read(cap), "write"
            write_notebook(submitted, winner, data)
        except Exception as e:  # damaged or oversized once decompressed; a failed write, or a folder that is a link
            problems.append(Problem(winner.source, f"refused: {reason(e, doing)}", student, assignment))
        else:
            collected.append(Collected(student, assignment, winner.source))
    done = {(c.student, c.assignment) for c in collected}
    for p in problems:
        if (p.student, p.assignment) in done:
            p.student = p.assignment = None
    return sorted(collected, key=lambda c: (c.student, c.assignment)), problems


def reason(e: Exception, doing: str) -> str:
    return str(e) if isinstance(e, Refused) else f"cannot {doing} it ({describe(e)})"


def collect(
    downloads: Path, submitted: Path, assignments: Collection[str], roster=None, max_member_bytes=MAX_MEMBER_BYTES
):
    """File every download of the plain format in ``downloads`` under ``submitted``: (collected, problems)."""
    names = checked_assignments(assignments)
    candidates, problems = [], []
    for path in sorted(Path(downloads).iterdir()):
        try:
            found, refused = _scan(path, names, roster, max_member_bytes)
        except Exception as e:  # a hostile file can make zipfile raise almost anything
            found, refused = [], [Problem(path.name, f"refused: cannot read it ({describe(e)})")]
        candidates += found
        problems += refused
    return settle(candidates, problems, Path(submitted), max_member_bytes)


def read_roster(path: Path) -> set[str]:
    """Student ids: one per line (``#`` comments), or a CSV with a column ``id``, ``student_id`` or ``student``."""
    if not Path(path).is_file():  # the instructor's file: one plain check (a FIFO would be waited on for ever)
        raise ValueError(f"{path} is not a file")
    text = Path(path).read_text(encoding="utf-8").removeprefix("\ufeff")  # spreadsheets write a byte-order mark
    ids = [i for i in (line.split("#", 1)[0].strip() for line in text.splitlines()) if i]
    if Path(path).suffix.lower() != ".csv" and not (ids and "," in ids[0]):
        return set(ids)
    rows = csv.DictReader(io.StringIO(text, newline=""))
    fields = {(name or "").strip().lower(): name for name in rows.fieldnames or []}
    column = next((fields[f] for f in _ID_FIELDS if f in fields), None)
    if column is None:
        raise ValueError(f"{path}: a roster CSV needs a column named one of {', '.join(_ID_FIELDS)}")
    return {i for i in ((row.get(column) or "").strip() for row in rows) if i}


def _scan(path: Path, names: list[str], roster: set[str] | None, cap: int) -> tuple[list[Candidate], list[Problem]]:
    """The candidates one entry of the downloads folder offers, and its problems."""
    name, info = path.name, path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return [], [Problem(name, "refused: a symlink (downloads must be plain files)")]
    if stat.S_ISDIR(info.st_mode):
        return [], [Problem(name, "ignored: a subfolder (only the folder's own files count)")]
    if not stat.S_ISREG(info.st_mode):
        return [], [Problem(name, "refused: not a regular file")]
    assignment = None
    if name.endswith(".ipynb"):
        known = "|".join(re.escape(a) for a in names) or "(?!)"
        form = rf"(?P<student>.+?)_(?:attempt_{_TIMESTAMP}_)?(?P<assignment>{known})\.ipynb"
        match = re.fullmatch(form, name, re.DOTALL)
        if match is None:
            why = "ignored: not named <student>_[attempt_<timestamp>_]<assignment>.ipynb for a known assignment"
            return [], [Problem(name, why)]
        student, stamp, assignment = match.group("student", "timestamp", "assignment")
    elif name.endswith(".zip") and name != ".zip":
        try:
            student, stamp = _zip_owner(name, roster)
        except Refused as e:
            return [], [Problem(name, f"refused: {e}")]
    else:
        return [], [Problem(name, "ignored: neither a notebook nor a zip")]
    why = id_problem(student) or (None if roster is None or student in roster else "is not on the roster")
    if why:
        return [], [Problem(name, f"refused: student id {student!r} {why}")]
    order = tuple(int(part) for part in stamp.split("-")) if stamp else None
    if assignment is None:
        return _scan_zip(path, student, order, names, cap, info.st_mtime)
    if why := size_problem(info.st_size, cap):
        return [], [Problem(name, f"refused: {why}", student, assignment)]
    return [Candidate(student, assignment, name, order, functools.partial(read_file, path), info.st_mtime)], []


def _zip_owner(name: str, roster: set[str] | None) -> tuple[str, str | None]:
    """(student, timestamp or None) of a zip's name: ids may hold "_", and a roster may tell which prefix."""
    attempt = _ZIP_ATTEMPT.fullmatch(name)
    if attempt:
        return attempt["student"], attempt["timestamp"]
    stem = name.removesuffix(".zip")
    prefixes = [stem[:i] for i, ch in enumerate(stem) if ch == "_" and i] + [stem]
    known = [p for p in prefixes if roster is not None and p in roster]
    if len(known) > 1:
        raise Refused(f"whose download? the roster has {', '.join(map(repr, known))}")
    return (known or prefixes)[0], None


def _scan_zip(
    path: Path, student: str, order: tuple | None, names: list[str], cap: int, mtime: float
) -> tuple[list[Candidate], list[Problem]]:
    """A student's zip: its notebooks, all the student's, whatever their names say (nothing is read yet)."""
    if path.stat().st_size > MAX_ARCHIVE_BYTES:  # before zipfile reads its whole directory
        return [], [Problem(path.name, f"refused: a zip of more than {MAX_ARCHIVE_BYTES} bytes")]
    try:
        with open_regular(path) as f, zipfile.ZipFile(f) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile as e:
        return [], [Problem(path.name, f"refused: not a valid zip ({e})")]
    if len(members) > MAX_MEMBERS:
        return [], [Problem(path.name, f"refused: {len(members)} members, more than {MAX_MEMBERS}")]
    total = sum(m.file_size for m in members)
    if total > MAX_ARCHIVE_BYTES:
        return [], [Problem(path.name, f"refused: {total} bytes uncompressed, more than {MAX_ARCHIVE_BYTES}")]
    candidates, problems = [], []
    for member in members:
        source, base = f"{path.name}:{member.filename}", re.split(r"[/\\]", member.filename)[-1]
        # the member's name says the assignment (A.ipynb or <anything>_A.ipynb), never the student
        assignment = next((a for a in names if base == f"{a}.ipynb" or base.endswith(f"_{a}.ipynb")), None)
        why = member_problem(member, member.filename)
        if why is None and assignment is None:
            why = "ignored: not a notebook of a known assignment"
        if why is None and size_problem(member.file_size, cap):
            why = f"refused: {size_problem(member.file_size, cap)}"
        if why is None:
            read = functools.partial(read_member, path, member)
            candidates.append(Candidate(student, assignment, source, order, read, mtime))
        elif why:  # a notebook of the student's that fails gets a row
            row = (student, assignment) if assignment and why.startswith("refused") else (None, None)
            problems.append(Problem(source, why, *row))
    return candidates, problems
