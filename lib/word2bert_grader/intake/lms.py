"""Canvas and Moodle, in their own formats: rosters and submission downloads in, grades and feedback out.

**Rosters** are the LMS's gradebook export, read by :func:`read_roster`:

- Canvas (Grades, Export): ``Student,ID,SIS User ID,SIS Login ID,Section,<assignments...>``, then the row
  ``Points Possible``; ``ID`` is Canvas's user id, the one in its download names;
- Moodle (Grades, Export, Plain text file): ``First name,Surname,ID number,Institution,Department,
  Email address,<grade items...>``.

One column holds the course's student ids (``course.toml``'s ``[lms] student_id``: "SIS Login ID" and
"Email address" by default). A row without a usable id, or with one another row has, is reported and left out.

**Downloads** (``make autograde DOWNLOADS=dir LMS=canvas|moodle``): ``dir/<assignment>/`` holds what the LMS
gave for that assignment, its zip as downloaded or unpacked (or both: identical copies count once):

- Canvas ("Download Submissions"): flat files named ``<name>_<user id>_<attachment id>_<file>``,
  ``<name>_LATE_<user id>_<attachment id>_<file>``, ``anon_<id>_...`` under anonymous grading; a file
  uploaded again under the same name is renamed ``<file>-1``, ``-2``... The user id finds the student.
- Moodle ("Download all submissions"): a folder per participant, ``<Full Name>_<participant id>_
  assignsubmission_file_`` (without the last ``_`` since Moodle 4.1; or flat files with the folder's name as
  a prefix). Participant ids differ per assignment: the assignment's grading worksheet (Download grading
  worksheet, a CSV with ``Identifier``, ``Full name``, ``Email address`` and ``Last modified (submission)``),
  put in the same folder, gives whose each is and when it was submitted (a CSV that Moodle names as a
  participant's file is a student's upload, never read as the worksheet); without it, the full name is looked
  up on the roster.

The student comes from the LMS's identifiers only, never from a file's content. The safety rules of
:mod:`intake.downloads` hold here too: nothing is extracted, paths that could escape, links,
encrypted and oversized members (counted as they decompress) are refused, zips inside the download are not
opened, nor is a zip the LMS names as a student's file (a student's upload, in an unpacked download: the names
inside it are the student's, and would be read as the LMS's names of another student's files), and one bad file
never stops the others. A download's limits are each student's (the files the LMS names as theirs, notebooks
first): one student's thousand uploads never cost the class's zip. A Canvas name that reads as two users (the
display name and the file's name are the student's, and may hold another user's ids) is collected for neither,
and reported. Several notebooks for one student: those named for the
assignment (``<assignment>.ipynb``, with Canvas's ``-1`` suffixes) count; of those, Canvas's newest upload (the
largest attachment id) wins. Copies with the same bytes are one. Notebooks that cannot be told apart are a
conflict: none is collected, and the student gets a failed row that says so. A file whose owner is on no
roster row is reported and left where it is. Besides the notebook, the collector writes ``lms.json``
(:class:`Record`: the LMS's ids, to pack the feedback) and, where the LMS gave a time, nbgrader's
``timestamp.txt``; the notebook keeps the download's time (:mod:`intake.deadlines`).

**Exports** (``make export LMS=canvas|moodle``, :func:`export`), from ``grades.csv`` and ``feedback/``:

- ``exports/canvas-grades.csv``, Canvas's gradebook import: its five identity columns, the ``Points Possible``
  row, one column per assignment (named as in the roster export, where it has one); and
  ``exports/canvas-feedback/<assignment>.zip`` for the assignment's Re-Upload Submissions, each page named
  ``<name>_<user id>_<attachment id>_<file>``, which Canvas reads back (its first two all-digit fields) to attach
  the page to that submission;
- ``exports/moodle-grades.csv`` for Moodle's CSV grade import: the roster's identity columns, and a grade and a
  ``Feedback:`` column per assignment; and ``exports/moodle-feedback/<assignment>.zip`` for Upload multiple
  feedback files in a zip: ``<Full Name>_<participant id>_assignfeedback_file_/<file>``.

The parts: :mod:`intake.lms_roster` reads the rosters, :mod:`intake.lms_formats` Canvas's and
Moodle's download names and worksheets, :mod:`intake.lms_collect` collects, and
:mod:`outputs.exports` exports. This module gives them one name, and reads the roster and collects the
downloads for ``make autograde`` (:func:`intake`).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from word2bert_grader.intake import downloads
from word2bert_grader.intake.course import Course
from word2bert_grader.intake.filing import Problem
from word2bert_grader.intake.lms_collect import collect
from word2bert_grader.intake.lms_formats import CanvasName, MoodleName, Record, parse_canvas, parse_moodle
from word2bert_grader.intake.lms_roster import Person, Roster, read_roster
from word2bert_grader.outputs.exports import Grade, export, read_grades

__all__ = [
    "CanvasName",
    "Grade",
    "Intake",
    "MoodleName",
    "Person",
    "Record",
    "Roster",
    "collect",
    "export",
    "intake",
    "parse_canvas",
    "parse_moodle",
    "read_grades",
    "read_roster",
]


@dataclass
class Intake:
    """What ``make autograde`` learns before grading: who may be graded, what the downloads gave, what to say."""

    allowed: set[str] | None  # the roster's students; None: no roster
    problems: list[Problem]  # the collection's, as :func:`intake.downloads.collect` reports them
    notes: list[str]  # about the roster


def intake(
    root: Path, assignments: list[str], downloads_dir: Path | None, roster: Path | None, lms: str | None, course: Course
) -> Intake:
    """Read the roster and collect the downloads, in the LMS's formats (``lms``) or the plain ones."""
    notes: list[str] = []
    people = None
    if lms:
        people = read_roster(roster, lms, course.lms.id_column or "") if roster else None
        notes += people.problems if people else [f"no {lms} roster given: every download's owner is taken as is"]
        allowed = people.students if people and people.people else None
    else:
        try:
            allowed = downloads.read_roster(roster) if roster else None
        except (OSError, UnicodeError, ValueError, csv.Error) as error:
            notes.append(f"roster {roster} cannot be read ({error}): every student is graded")
            allowed = None
    problems: list[Problem] = []
    if downloads_dir is not None:
        submitted = root / "submitted"
        if lms:
            _, problems = collect(downloads_dir.resolve(), submitted, assignments, lms, people, course)
        else:
            _, problems = downloads.collect(downloads_dir.resolve(), submitted, assignments, allowed)
    return Intake(allowed, problems, notes)
