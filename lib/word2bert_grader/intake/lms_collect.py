"""Collect Canvas's and Moodle's downloads into ``submitted/``: every file of a download folder and its zips read
safely, each notebook's owner found (:mod:`intake.lms_formats`), one notebook chosen per student; the
rules are :mod:`intake.lms`'s."""

from __future__ import annotations

import functools
import hashlib
import json
import stat
import zipfile
from collections.abc import Collection
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from word2bert_grader.intake import filing
from word2bert_grader.intake.course import Course
from word2bert_grader.intake.deadlines import LMS_RECORD, TIMESTAMP
from word2bert_grader.intake.filing import Collected, Problem
from word2bert_grader.intake.lms_formats import (
    SEVERAL_USERS,
    Entry,
    Found,
    canvas_notebooks,
    canvas_owner,
    moodle_notebooks,
    moodle_owner,
)
from word2bert_grader.intake.lms_roster import Roster

MAX_DEPTH = 4  # folders below an assignment's download folder
# One assignment's download holds the whole class: a thousand students, each with a notebook and other files. Its
# limits are per student (the files the LMS names as one student's, or as no one's): one student's thousand
# uploads cost that student's files, never the class's zip. The class's own limits bound what is kept of a class
# of many students (each owner's files beyond their limits are set aside as they are read) and the zip's size.
MAX_OWNER_FILES = filing.MAX_MEMBERS
MAX_OWNER_BYTES = filing.MAX_ARCHIVE_BYTES  # decompressed
MAX_ENTRIES = 200_000  # files and members of one assignment's download kept (each owner's within their limits)
MAX_CLASS_ZIP_BYTES = 32 * 2**30  # the LMS's zip itself (read a member at a time, each within its own limit)


def collect(
    downloads_dir: Path,
    submitted: Path,
    assignments: Collection[str],
    lms: str,
    roster: Roster | None,
    course: Course,
    max_member_bytes: int = filing.MAX_MEMBER_BYTES,
) -> tuple[list[Collected], list[Problem]]:
    """Collect ``downloads_dir/<assignment>/`` of every assignment into ``submitted``; see the module's rules."""
    names = filing.checked_assignments(assignments)
    problems: list[Problem] = []
    found: list[Found] = []
    for path in sorted(Path(downloads_dir).iterdir()):
        if path.name not in names or path.is_symlink() or not path.is_dir():
            problems.append(Problem(path.name, f"ignored: not a folder named after an assignment ({', '.join(names)})"))
            continue
        owner = canvas_owner if lms == "canvas" else moodle_owner
        entries, trouble = _entries(path, path.name, max_member_bytes, course, owner)
        problems += trouble
        reader = canvas_notebooks if lms == "canvas" else moodle_notebooks
        more, trouble = reader(path.name, entries, roster, course, path)
        found += more
        problems += trouble
    collected = []
    for (student, assignment), group in _grouped(found).items():
        winner, data, lost = _choose(group, max_member_bytes)
        problems += lost
        if winner is None:
            continue
        beside = {LMS_RECORD: json.dumps(asdict(winner.record), ensure_ascii=False).encode()}
        if winner.submitted is not None:
            beside[TIMESTAMP] = winner.submitted.isoformat(sep=" ").encode()
        try:
            filing.write_notebook(Path(submitted), student, assignment, data, beside, winner.entry.mtime)
        except Exception as e:  # a failed write, or a folder that is a symlink: refused
            problems.append(
                Problem(winner.entry.source, f"refused: cannot write it ({filing.describe(e)})", student, assignment)
            )
        else:
            collected.append(Collected(student, assignment, winner.entry.source))
    done = {(c.student, c.assignment) for c in collected}
    for p in problems:
        if (p.student, p.assignment) in done:
            p.student = p.assignment = None
    return sorted(collected, key=lambda c: (c.student, c.assignment)), problems


def _entries(folder: Path, shown: str, cap: int, course: Course, owner) -> tuple[list[Entry], list[Problem]]:
    """Every file of one assignment's download: plain files (in folders, to MAX_DEPTH) and the members of the
    LMS's zips at its top; never following a link, never opening a zip inside a zip, nor a student's own zip (one
    that the LMS's name gives an ``owner``: a student's upload, in an unpacked download), whose members' names
    the student chose and would be read as the LMS's, another student's included."""
    entries: list[Entry] = []
    problems: list[Problem] = []
    read: dict[tuple[str | None, bool], int] = {}  # (owner, notebook or not) -> how many read

    def keep(entry: Entry) -> None:
        """An owner's notebooks beyond MAX_OWNER_FILES, and their other files beyond it, are never within their
        limits (:func:`_within_owner_limits`): set aside as they are read, so that one student's files, however
        many, cost no one else theirs (MAX_ENTRIES then only bounds a class of many owners)."""
        key = (owner(entry.name), entry.name.endswith(".ipynb"))
        read[key] = read.get(key, 0) + 1
        if read[key] > MAX_OWNER_FILES:
            problems.append(_beyond(entry, key[0]))
        elif len(entries) >= MAX_ENTRIES:
            problems.append(Problem(entry.source, f"ignored: more than {MAX_ENTRIES} files in one download"))
        else:
            entries.append(entry)

    def walk(path: Path, rel: str, depth: int) -> None:
        for child in sorted(path.iterdir()):
            name = f"{rel}/{child.name}" if rel else child.name
            source = f"{shown}/{name}"
            mode = child.lstat().st_mode
            if stat.S_ISLNK(mode):
                problems.append(Problem(source, "refused: a symlink (downloads must be plain files)"))
            elif stat.S_ISDIR(mode):
                if depth < MAX_DEPTH:
                    walk(child, name, depth + 1)
                else:
                    problems.append(Problem(source, f"ignored: folders nested more than {MAX_DEPTH} deep"))
            elif not stat.S_ISREG(mode):
                problems.append(Problem(source, "refused: not a regular file"))
            elif child.name.lower().endswith(".zip"):
                if depth == 0 and owner(name) is not None:
                    problems.append(Problem(source, "ignored: a student's uploaded zip (not opened)"))
                elif depth == 0:
                    problems.extend(_zip_entries(child, source, cap, course, keep))
                else:
                    problems.append(Problem(source, "ignored: a zip inside the download (not opened)"))
            else:
                info = child.lstat()
                keep(Entry(source, name, info.st_mtime, functools.partial(filing.read_file, child), info.st_size))

    walk(folder, "", 0)
    kept, beyond = _within_owner_limits(entries, owner)
    return kept, problems + beyond


def _within_owner_limits(entries: list[Entry], owner_of) -> tuple[list[Entry], list[Problem]]:
    """Each owner's entries (whose the LMS's name says they are, ``owner_of``; those it names as no one's together)
    within MAX_OWNER_FILES and MAX_OWNER_BYTES: notebooks first, then in name order."""
    kept, problems, used = [], [], {}
    order = sorted(range(len(entries)), key=lambda i: not entries[i].name.endswith(".ipynb"))  # stable
    for i in order:
        entry = entries[i]
        owner = owner_of(entry.name)
        files, size = used.get(owner, (0, 0))
        if files >= MAX_OWNER_FILES or size + entry.size > MAX_OWNER_BYTES:
            problems.append(_beyond(entry, owner))
            continue
        used[owner] = (files + 1, size + entry.size)
        kept.append(i)
    return [entries[i] for i in sorted(kept)], problems


def _beyond(entry: Entry, owner: str | None) -> Problem:
    whose = {None: "files named as no one's", SEVERAL_USERS: "files named as several users"}.get(owner)
    whose = whose or f"user {owner}'s files"
    limit = f"{MAX_OWNER_FILES} files, {MAX_OWNER_BYTES} bytes"
    return Problem(entry.source, f"ignored: {whose} pass one student's limit in a download ({limit})")


def _zip_entries(path: Path, shown: str, cap: int, course: Course, keep) -> list[Problem]:
    """The LMS's zip's members, each given to ``keep``; returns the problems of the others."""
    if path.stat().st_size > MAX_CLASS_ZIP_BYTES:
        return [Problem(shown, f"refused: a zip of more than {MAX_CLASS_ZIP_BYTES} bytes")]
    try:
        with filing.open_regular(path) as f, zipfile.ZipFile(f) as archive:
            members = archive.infolist()
    except Exception as e:  # a hostile file can make zipfile raise almost anything
        return [Problem(shown, f"refused: not a readable zip ({filing.describe(e)})")]
    problems = []
    for member in members:
        name = _member_name(member)
        source = f"{shown}:{name}"
        why = filing.path_problem(name) or (None if member.is_dir() else filing.type_problem(member))
        if why:
            problems.append(Problem(source, f"refused: {why}"))
            continue
        base = name.rsplit("/", 1)[-1]
        if member.is_dir() or name.startswith("__MACOSX/") or base.startswith("._") or base == ".DS_Store":
            continue
        if base.lower().endswith(".zip"):
            problems.append(Problem(source, "ignored: a zip inside the zip (not opened)"))
            continue
        if member.flag_bits & 0x1:
            problems.append(Problem(source, "refused: encrypted"))
            continue
        why = filing.size_problem(member.file_size, cap)
        if why and base.endswith(".ipynb"):
            problems.append(Problem(source, f"refused: {why}"))
            continue
        try:  # a zip's times are local times without a zone: the course's
            mtime = datetime(*member.date_time, tzinfo=course.timezone).timestamp()
        except ValueError:
            mtime = None
        keep(Entry(source, name, mtime, functools.partial(filing.read_member, path, member), member.file_size))
    return problems


def _member_name(member: zipfile.ZipInfo) -> str:
    """A member's name as its zipper meant it: without the UTF-8 flag, zipfile reads the bytes as CP437, but
    Moodle's and most zippers' bytes are UTF-8 (non-ASCII names would not match the roster otherwise)."""
    name = member.filename
    if not member.flag_bits & 0x800:
        try:
            return name.encode("cp437").decode("utf-8")
        except UnicodeError:
            return name
    return name


# --- Choosing one notebook per student ------------------------------------------------------------


def _grouped(found: list[Found]) -> dict[tuple[str, str], list[Found]]:
    groups: dict[tuple[str, str], list[Found]] = {}
    for f in found:
        groups.setdefault((f.student, f.assignment), []).append(f)
    return groups


def _choose(group: list[Found], cap: int) -> tuple[Found | None, bytes, list[Problem]]:
    """The one notebook of a student's group, its bytes, and the problems of the others."""
    student, assignment = group[0].student, group[0].assignment
    named = [f for f in group if f.named] or group
    problems = [
        Problem(f.entry.source, f"superseded: another file is named {assignment}.ipynb", student, assignment)
        for f in group
        if f not in named
    ]
    contents: dict[str, tuple[Found, bytes]] = {}
    for f in named:
        try:
            data = filing.checked(f.entry.read(cap))
        except Exception as e:  # damaged, oversized once decompressed, unreadable
            problems.append(
                Problem(f.entry.source, f"refused: cannot read it ({filing.describe(e)})", student, assignment)
            )
            continue
        digest = hashlib.sha256(data).hexdigest()
        best = contents.get(digest)
        if best is None or (f.order or 0) > (best[0].order or 0):  # identical copies count once
            contents[digest] = (f, data)
    if not contents:
        return None, b"", problems
    ranked = sorted(contents.values(), key=lambda c: c[0].order if c[0].order is not None else -1)
    orders = [c[0].order for c in ranked]
    if len(ranked) > 1 and (None in orders or orders.count(orders[-1]) > 1):
        problems.append(
            Problem(
                ", ".join(c[0].entry.source for c in ranked),
                f"conflict: {len(ranked)} different notebooks for {student}/{assignment} that cannot be told apart; "
                "none collected",
                student,
                assignment,
            )
        )
        return None, b"", problems
    winner, data = ranked[-1]
    problems += [
        Problem(c[0].entry.source, f"superseded: {winner.entry.source} is a newer upload", student, assignment)
        for c in ranked[:-1]
    ]
    return winner, data, problems
