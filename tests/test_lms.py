"""Canvas and Moodle in and out (word2bert_grader.intake.lms), due dates and late penalties (course, deadlines).

The fixtures in tests/fixtures/lms/ are written from the LMSs' own documentation and source: Canvas's
gradebook export and the names of its "Download Submissions" zip (lib/content_zipper.rb), Moodle's grade export
(the header of grade/import/csv's own tests), grading worksheet and "Download all submissions" paths
(mod/assign/locallib.php). Each test builds a downloads folder from them in tmp_path, collects it and checks the
exact outcome; the exports are read back with the rules the LMSs use to read them. The whole round trip through
`make autograde` and `make export` is tests/test_term.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from word2bert_grader.intake import course, deadlines, lms
from word2bert_grader.outputs import exports
from word2bert_grader.outputs.reports import GRADES_COLUMNS

FIXTURES = Path(__file__).parent / "fixtures" / "lms"
A = "01-word2vec"
ASSIGNMENTS = ["01-word2vec", "03-gpt"]


def names(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def nb(tag: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {"tag": tag}, "nbformat": 4, "nbformat_minor": 5}).encode()


def calendar(tmp_path: Path, text: str = "") -> course.Course:
    (tmp_path / "course.toml").write_text(text, encoding="utf-8")
    return course.load(tmp_path, ASSIGNMENTS)


def problems_by_source(problems) -> dict[str, str]:
    return {p.source: p.reason for p in problems}


def test_canvas_download_names_are_read_as_canvas_reads_them():
    parsed = [lms.parse_canvas(n) for n in names(FIXTURES / "canvas" / "download-names.txt")]
    assert parsed[0] == lms.CanvasName("lovelaceada", False, "1001", "5001", "01-word2vec.ipynb")
    assert parsed[1].file == "01-word2vec-1.ipynb" and parsed[1].attachment == "5002", "a re-upload keeps its -1"
    assert parsed[2] == lms.CanvasName("müllerjürgen", True, "1002", "5003", "01-word2vec.ipynb"), "non-ASCII, LATE"
    assert parsed[-1] == lms.CanvasName("", True, "anon_x8Yq2", "5007", "01-word2vec.ipynb"), "anonymous grading"
    assert lms.parse_canvas("o_brienpat_1005_5010_my_work_v2.ipynb").file == "my_work_v2.ipynb", "'_' in names"
    assert lms.parse_canvas("alice_01-word2vec.ipynb") is None, "no ids: not a Canvas name"


def test_moodle_download_paths_are_read_as_moodles_feedback_import_reads_them():
    paths = names(FIXTURES / "moodle" / "download-paths.txt")
    assert lms.parse_moodle(paths[0]) == lms.MoodleName("Ada Lovelace", "4242", "file", "01-word2vec.ipynb")
    assert lms.parse_moodle(paths[2]).plugin == "onlinetext"
    assert lms.parse_moodle(paths[4]).file == "scratch/01-word2vec.ipynb"
    assert lms.parse_moodle("Ada Lovelace_4242_assignsubmission_file/01-word2vec.ipynb").participant == "4242", (
        "Moodle 4.1 and later: no trailing '_'"
    )
    assert lms.parse_moodle("Ada Lovelace_4242_assignsubmission_file_01-word2vec.ipynb").file == f"{A}.ipynb", "flat"
    assert lms.parse_moodle("unpacked/Ada Lovelace_4242_assignsubmission_file_/x.ipynb").participant == "4242"
    assert lms.parse_moodle("Ada_Lovelace.ipynb") is None


def test_rosters_map_each_lms_id_to_a_student_and_report_the_rows_they_cannot():
    canvas = lms.read_roster(FIXTURES / "canvas" / "gradebook-export.csv", "canvas", "SIS Login ID")
    assert [(p.student, p.name, p.lms_id) for p in canvas.people] == [
        ("ada", "Lovelace, Ada", "1001"),
        ("jmuller", "Müller, Jürgen", "1002"),
        ("aturing", "Turing, Alan", "1003"),
    ]
    assert canvas.problems == [
        "roster gradebook-export.csv line 6 (Student, Test): the id has no SIS Login ID: left out"
    ]
    moodle = lms.read_roster(FIXTURES / "moodle" / "grades-export.csv", "moodle", "ID number")
    assert [p.student for p in moodle.people] == ["ada", "jmuller", "aturing", "aturing2"]
    assert (
        moodle.people[1].name == "Jürgen Müller" and moodle.people[1].identity["Email address"] == "jurgen@example.com"
    )
    assert [p.student for p in moodle.find("name", "jürgen  MÜLLER")] == ["jmuller"], "names compared as people read"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "is empty"),
        ("Name,Email\nAda,ada@x\n", "is not Canvas's gradebook export: no column ID, SIS Login ID"),
        (  # the roster is the instructor's: only what makes an id unusable is said (ids become folder names)
            'Student,ID,SIS User ID,SIS Login ID,Section\n"A, B",1,,a b,S\n"C, D",2,,c,S\n"G",4\n',
            "line 2 (A, B): the id has characters other than letters, digits and . _ @ -: left out|"
            "line 4 (G): the id has no SIS Login ID: left out",
        ),
    ],
)
def test_malformed_rosters_are_reported_row_by_row(tmp_path, text, expected):
    (tmp_path / "r.csv").write_text(text, encoding="utf-8")
    roster = lms.read_roster(tmp_path / "r.csv", "canvas", "SIS Login ID")
    got = "|".join(p.removeprefix("roster r.csv ") for p in roster.problems)
    assert got == expected
    (tmp_path / "r.csv").write_bytes(b"\xff\xfe not utf-8")
    assert "cannot be read" in lms.read_roster(tmp_path / "r.csv", "canvas", "SIS Login ID").problems[0]


def canvas_downloads(tmp_path: Path) -> Path:
    """Canvas's zip of 01-word2vec, as downloaded, beside an unpacked copy of one file that differs."""
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "course-01-word2vec_submissions.zip", "w") as archive:
        for name in names(FIXTURES / "canvas" / "download-names.txt"):
            archive.writestr(name, nb(name))
        archive.writestr("../escape_1001_9999_01-word2vec.ipynb", nb("escape"))
    (folder / "turingalan_1003_5004_01-word2vec.ipynb").write_bytes(nb("turing, changed after unpacking"))
    (folder / "lovelaceada_1001_5001_01-word2vec.ipynb").write_bytes(nb("lovelaceada_1001_5001_01-word2vec.ipynb"))
    return tmp_path / "downloads"


def test_canvas_downloads_are_collected_under_the_rosters_ids_and_nothing_is_lost(tmp_path):
    roster = lms.read_roster(FIXTURES / "canvas" / "gradebook-export.csv", "canvas", "SIS Login ID")
    collected, problems = lms.collect(
        canvas_downloads(tmp_path), tmp_path / "submitted", ASSIGNMENTS, "canvas", roster, calendar(tmp_path)
    )
    zip_name = f"{A}/course-01-word2vec_submissions.zip"
    assert [(c.student, c.assignment, c.source) for c in collected] == [
        ("ada", A, f"{zip_name}:lovelaceada_1001_5002_01-word2vec-1.ipynb"),
        ("jmuller", A, f"{zip_name}:müllerjürgen_LATE_1002_5003_01-word2vec.ipynb"),
    ]
    ada = tmp_path / "submitted" / "ada" / A
    assert (ada / f"{A}.ipynb").read_bytes() == nb("lovelaceada_1001_5002_01-word2vec-1.ipynb"), "the newer upload"
    assert json.loads((ada / "lms.json").read_text(encoding="utf-8")) == {
        "lms": "canvas",
        "download": f"{zip_name}:lovelaceada_1001_5002_01-word2vec-1.ipynb",
        "user": "1001",
        "name": "lovelaceada",
        "attachment": "5002",
        "late": False,
    }
    assert lms.Record.read(tmp_path / "submitted" / "jmuller" / A).late is True
    reasons = problems_by_source(problems)
    assert reasons[f"{zip_name}:lovelaceada_1001_5001_01-word2vec.ipynb"].startswith("superseded: ")
    assert f"{A}/lovelaceada_1001_5001_01-word2vec.ipynb" not in reasons, "an identical unpacked copy counts once"
    conflict = next(p for p in problems if p.reason.startswith("conflict"))
    assert (conflict.student, conflict.assignment) == ("aturing", A), "a failed row for the student, with why"
    assert "2 notebooks for aturing/01-word2vec that cannot be told apart" in conflict.reason
    assert reasons[f"{zip_name}:turingalan_1003_5005_notes.txt"] == "ignored: not a notebook"
    assert reasons[f"{zip_name}:hoppergrace_1004_5006_01-word2vec.ipynb"] == (
        "not collected: Canvas user 1004 is on no roster row (kept in the downloads)"
    )
    assert "anonymous grading" in reasons[f"{zip_name}:LATE_anon_x8Yq2_5007_01-word2vec.ipynb"]
    assert reasons[f"{zip_name}:../escape_1001_9999_01-word2vec.ipynb"] == "refused: '..' in its path"
    assert sorted(p.name for p in (tmp_path / "submitted").iterdir()) == ["ada", "jmuller"]


@pytest.mark.parametrize(
    "lms_name, roster_file, column, honest, upload, forged",
    [
        pytest.param(
            "canvas",
            "canvas/gradebook-export.csv",
            "SIS Login ID",
            f"lovelaceada_1001_5001_{A}.ipynb",
            "hoppergrace_1004_6001_work.zip",
            f"lovelaceada_1001_99999_{A}.ipynb",  # a newer upload of Ada's, by its attachment id
            id="canvas",
        ),
        pytest.param(
            "moodle",
            "moodle/grades-export.csv",
            "ID number",
            f"Ada Lovelace_4242_assignsubmission_file_{A}.ipynb",
            "Grace Hopper_4245_assignsubmission_file_work.zip",
            f"Ada Lovelace_4242_assignsubmission_file_/{A}.ipynb",  # another notebook of Ada's: a conflict
            id="moodle",
        ),
    ],
)
def test_a_students_uploaded_zip_names_no_other_student(
    tmp_path, lms_name, roster_file, column, honest, upload, forged
):
    """An unpacked download holds what students uploaded as it is: a zip of a student's own is not the LMS's zip,
    and the names inside it are the student's, not the LMS's."""
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    (folder / honest).write_bytes(nb("ada's own work"))
    with zipfile.ZipFile(folder / upload, "w") as archive:
        archive.writestr(forged, nb("grace's forgery"))
    roster = lms.read_roster(FIXTURES / roster_file, lms_name, column)
    collected, problems = lms.collect(
        tmp_path / "downloads", tmp_path / "submitted", ASSIGNMENTS, lms_name, roster, calendar(tmp_path)
    )
    # unsafe: Grace's member, named as the LMS names Ada's files, replaces Ada's notebook (Canvas: the larger
    # attachment id wins) or leaves her with a conflict and no grade (Moodle)
    assert [(c.student, c.source) for c in collected] == [("ada", f"{A}/{honest}")], problems
    assert (tmp_path / "submitted" / "ada" / A / f"{A}.ipynb").read_bytes() == nb("ada's own work")
    assert problems_by_source(problems)[f"{A}/{upload}"] == "ignored: a student's uploaded zip (not opened)"


@pytest.mark.parametrize(
    "forged",
    [
        # Jürgen (1002) renamed himself "lovelaceada_1001_99999": Canvas reads Ada's ids first, and the larger
        # attachment id would make it her newest upload
        pytest.param(f"lovelaceada_1001_99999_1002_6001_{A}.ipynb", id="display-name"),
        pytest.param(f"lovelaceada_1001_1002_6001_{A}.ipynb", id="display-name-ending-in-digits"),
        # the same ids in the name of the file he uploaded
        pytest.param(f"müllerjürgen_1002_6001_x_1001_99999_{A}.ipynb", id="file-name"),
        # Grace (1004) is on no roster row: her own reading has no owner, Ada's has one
        pytest.param(f"lovelaceada_1001_99999_1004_6002_{A}.ipynb", id="off-roster"),
    ],
)
def test_a_canvas_name_holding_another_users_ids_gives_no_one_a_notebook(tmp_path, forged):
    """A Canvas name is ``<name>_<user id>_<attachment id>_<file>``, and the name and the file's name are the
    student's own: one that reads as two users is collected for neither, and said so."""
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    honest = f"lovelaceada_1001_5001_{A}.ipynb"
    (folder / honest).write_bytes(nb("ada's own work"))
    (folder / forged).write_bytes(nb("a forgery"))
    roster = lms.read_roster(FIXTURES / "canvas" / "gradebook-export.csv", "canvas", "SIS Login ID")
    for roster_or_none in (roster, None):
        out = tmp_path / ("submitted" if roster_or_none else "submitted-without-roster")
        collected, problems = lms.collect(
            tmp_path / "downloads", out, ASSIGNMENTS, "canvas", roster_or_none, calendar(tmp_path)
        )
        # unsafe: the forgery is collected as Ada's newest upload (its attachment id is larger) and replaces hers
        assert [c.source for c in collected] == [f"{A}/{honest}"], problems
        ada = "ada" if roster_or_none else "canvas-1001"
        assert (out / ada / A / f"{A}.ipynb").read_bytes() == nb("ada's own work")
        reason = problems_by_source(problems)[f"{A}/{forged}"]
        assert reason.startswith("not collected: the name reads as Canvas users 1001 and "), reason


def test_one_students_thousand_uploads_cost_only_their_own_files(tmp_path):
    """Canvas's zip of one assignment holds the whole class: the limits on what one download may hold are each
    student's, so a student who uploads more than a thousand files does not make the class's zip refused."""
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "submissions.zip", "w") as archive:
        archive.writestr(f"lovelaceada_1001_5001_{A}.ipynb", nb("ada"))
        for n in range(lms.MAX_OWNER_FILES + 5):
            archive.writestr(f"turingalan_1003_{6000 + n}_notes-{n:04d}.txt", "x")
        archive.writestr(f"turingalan_1003_9999_{A}.ipynb", nb("alan"))  # after his notes in the zip
        archive.writestr(f"müllerjürgen_1002_5003_{A}.ipynb", nb("jürgen"))
    roster = lms.read_roster(FIXTURES / "canvas" / "gradebook-export.csv", "canvas", "SIS Login ID")
    collected, problems = lms.collect(
        tmp_path / "downloads", tmp_path / "submitted", ASSIGNMENTS, "canvas", roster, calendar(tmp_path)
    )
    # unsafe: the zip's 1,008 members are over the limit of one zip, and the whole class's zip is refused
    assert sorted(c.student for c in collected) == ["ada", "aturing", "jmuller"], problems
    assert (tmp_path / "submitted" / "aturing" / A / f"{A}.ipynb").read_bytes() == nb("alan"), "notebooks first"
    beyond = [p for p in problems if "pass one student's limit" in p.reason]
    assert len(beyond) == 6 and all(p.source.startswith(f"{A}/submissions.zip:turingalan_1003_") for p in beyond)


def collect_canvas(tmp_path: Path, files: dict[str, bytes], zipped: bool):
    """Canvas's download of assignment A holding ``files`` (name -> bytes), unpacked or as Canvas's zip, collected
    with the Canvas roster."""
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    if zipped:
        with zipfile.ZipFile(folder / "submissions.zip", "w") as archive:
            for name, data in files.items():
                archive.writestr(name, data)
    else:
        for name, data in files.items():
            (folder / name).write_bytes(data)
    roster = lms.read_roster(FIXTURES / "canvas" / "gradebook-export.csv", "canvas", "SIS Login ID")
    return lms.collect(
        tmp_path / "downloads", tmp_path / "submitted", ASSIGNMENTS, "canvas", roster, calendar(tmp_path)
    )


@pytest.mark.parametrize("zipped", [False, True], ids=["unpacked", "zipped"])
def test_uploads_under_a_name_holding_another_users_ids_cost_that_user_nothing(tmp_path, monkeypatch, zipped):
    """Jürgen (1002) renamed himself "aaa_1001_1": his uploads read first as Ada's (1001) and sort before hers. They
    are collected for no one; nor may they count against Ada's limits, before her own notebook."""
    monkeypatch.setattr(lms, "MAX_OWNER_FILES", 3)
    files = {f"aaa_1001_1_1002_{6000 + n}_{A}-{n}.ipynb": nb(f"jürgen {n}") for n in range(3)}
    files[f"lovelaceada_1001_5001_{A}.ipynb"] = nb("ada's own work")
    collected, problems = collect_canvas(tmp_path, files, zipped)
    # unsafe: Jürgen's three notebooks filled user 1001's limit of 3 files, and Ada's was ignored: no grade for her
    assert [c.student for c in collected] == ["ada"], problems
    assert (tmp_path / "submitted" / "ada" / A / f"{A}.ipynb").read_bytes() == nb("ada's own work")
    assert not [p for p in problems if "limit" in p.reason], problems


@pytest.mark.parametrize("zipped", [False, True], ids=["unpacked", "zipped"])
@pytest.mark.parametrize(
    "upload",
    [
        pytest.param("aaa_1002_{n}_notes-{n}.txt", id="own-name"),
        # each name reads as Jürgen and as another made-up user: collected for no one, and counted as one group
        pytest.param("aaa_1002_{n}_x_{n}_1_notes.txt", id="several-users"),
    ],
)
def test_one_students_uploads_never_fill_the_class_download(tmp_path, monkeypatch, zipped, upload):
    """The class's own limit on one download's files (MAX_ENTRIES) is far above any one student's: a student's files
    beyond their own limits are set aside as they are read, and never count against it."""
    monkeypatch.setattr(lms, "MAX_OWNER_FILES", 3)
    monkeypatch.setattr(lms, "MAX_ENTRIES", 10)
    files = {upload.format(n=6000 + n): b"x" for n in range(11)}  # Jürgen, named to be read before Ada
    files[f"lovelaceada_1001_5001_{A}.ipynb"] = nb("ada's own work")
    collected, problems = collect_canvas(tmp_path, files, zipped)
    # unsafe: Jürgen's 11 files passed the download's limit of 10: the walk stopped before Ada's notebook, or the
    # class's zip was refused whole
    assert [c.student for c in collected] == ["ada"], problems
    assert len([p for p in problems if "pass one student's limit" in p.reason]) == 8, problems


def test_a_name_longer_than_canvas_makes_is_not_read_as_canvas_names(tmp_path):
    """A zip member's name may be 65,535 bytes long: made of "_1" groups, each place where two all-digit fields
    stand is a reading of it, and building each reading's file name made its reading quadratic (41 s for this
    name on the shared machine). Canvas's names are shorter: such a name is no Canvas name, and costs nothing."""
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "submissions.zip", "w") as archive:
        archive.writestr("x" + "_1" * 30_000 + f"_{A}.ipynb", nb("32,000 readings"))
        archive.writestr(f"lovelaceada_1001_5001_{A}.ipynb", nb("ada's own work"))
    long_name = "x" + "_1" * 30_000 + f"_{A}.ipynb"
    assert lms.parse_canvas(long_name) is None and lms.canvas_owner(long_name) is None
    collected, problems = lms.collect(
        tmp_path / "downloads", tmp_path / "submitted", ASSIGNMENTS, "canvas", None, calendar(tmp_path)
    )
    assert [c.student for c in collected] == ["canvas-1001"], problems
    assert problems_by_source(problems)[f"{A}/submissions.zip:{long_name}"].startswith("ignored: not named as Canvas")


def test_a_students_uploaded_csv_is_no_grading_worksheet(tmp_path):
    """Moodle's flat download (no folder per participant), unpacked: a CSV a student uploaded lies at the top of the
    folder beside the grading worksheet, under the name Moodle gives that student's files."""
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    (folder / "Grades-course-01-word2vec-77.csv").write_bytes(
        (FIXTURES / "moodle" / "grading-worksheet.csv").read_bytes()
    )
    (folder / f"Ada Lovelace_4242_assignsubmission_file_{A}.ipynb").write_bytes(nb("ada's own work"))
    upload = "Jürgen Müller_4243_assignsubmission_file_notes.csv"  # read after Moodle's worksheet, name by name
    (folder / upload).write_text(
        "Identifier,Full name,Email address,Last modified (submission)\n"
        '"Participant 4242",Jürgen Müller,jurgen@example.com,"Thursday, 1 January 2026, 10:00 AM"\n',
        encoding="utf-8",
    )
    roster = lms.read_roster(FIXTURES / "moodle" / "grades-export.csv", "moodle", "ID number")
    collected, problems = lms.collect(
        tmp_path / "downloads", tmp_path / "submitted", ASSIGNMENTS, "moodle", roster, calendar(tmp_path)
    )
    # unsafe: Jürgen's row for Ada's participant id gives him her notebook, with a submission time of his choosing
    assert [c.student for c in collected] == ["ada"], problems
    stamp = (tmp_path / "submitted" / "ada" / A / "timestamp.txt").read_text(encoding="utf-8")
    assert stamp.startswith("2026-02-05 22:00:00"), "the time is Moodle's worksheet's"
    assert problems_by_source(problems)[f"{A}/{upload}"].startswith("ignored: a student's uploaded file")


def moodle_downloads(tmp_path: Path, worksheet: bool) -> Path:
    folder = tmp_path / "downloads" / A
    folder.mkdir(parents=True)
    for path in names(FIXTURES / "moodle" / "download-paths.txt"):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(nb(path))
    if worksheet:
        (folder / "Grades-course-01-word2vec-77.csv").write_bytes(
            (FIXTURES / "moodle" / "grading-worksheet.csv").read_bytes()
        )
    return tmp_path / "downloads"


def test_moodle_downloads_are_matched_by_the_worksheet_and_keep_its_submission_time(tmp_path):
    roster = lms.read_roster(FIXTURES / "moodle" / "grades-export.csv", "moodle", "ID number")
    when = calendar(tmp_path, 'timezone = "Europe/Berlin"\n')
    collected, problems = lms.collect(
        moodle_downloads(tmp_path, worksheet=True), tmp_path / "submitted", ASSIGNMENTS, "moodle", roster, when
    )
    assert [(c.student, c.source) for c in collected] == [
        ("ada", f"{A}/Ada Lovelace_4242_assignsubmission_file_/01-word2vec.ipynb"),
        ("jmuller", f"{A}/Jürgen Müller_4243_assignsubmission_file_/01-word2vec.ipynb"),
    ]
    stamp = (tmp_path / "submitted" / "jmuller" / A / "timestamp.txt").read_text(encoding="utf-8")
    assert stamp == "2026-02-07 03:10:00+01:00", "Moodle's time, in the course's zone, with its offset"
    assert lms.Record.read(tmp_path / "submitted" / "ada" / A) == lms.Record(
        "moodle", f"{A}/Ada Lovelace_4242_assignsubmission_file_/01-word2vec.ipynb", "4242", "Ada Lovelace"
    )
    conflict = next(p for p in problems if p.reason.startswith("conflict"))
    assert conflict.student == "aturing", "the worksheet's e-mail tells the two Alan Turings apart"
    reasons = problems_by_source(problems)
    assert reasons[f"{A}/Grace Hopper_4245_assignsubmission_file_/01-word2vec.ipynb"] == (
        "not collected: 'Grace Hopper' (participant 4245) is on no roster row (kept in the downloads)"
    )
    assert reasons[f"{A}/Jürgen Müller_4243_assignsubmission_onlinetext_/onlinetext.html"] == "ignored: not a notebook"


def test_without_the_worksheet_moodle_names_are_looked_up_and_ambiguous_ones_reported(tmp_path):
    roster = lms.read_roster(FIXTURES / "moodle" / "grades-export.csv", "moodle", "ID number")
    collected, problems = lms.collect(
        moodle_downloads(tmp_path, worksheet=False),
        tmp_path / "submitted",
        ASSIGNMENTS,
        "moodle",
        roster,
        calendar(tmp_path),
    )
    assert [c.student for c in collected] == ["ada", "jmuller"], "the non-ASCII name is found on the roster"
    assert not (tmp_path / "submitted" / "ada" / A / "timestamp.txt").exists(), "no time from Moodle: the file's"
    turing = [p.reason for p in problems if "Alan Turing_4244" in p.source]
    assert (
        turing
        == [
            "not collected: 2 roster rows are named 'Alan Turing': put the grading worksheet beside the "
            "download (kept in the downloads)"
        ]
        * 2
    )


def test_downloads_outside_an_assignment_folder_and_links_are_reported(tmp_path):
    down = tmp_path / "downloads"
    (down / A).mkdir(parents=True)
    (down / "submissions.zip").write_bytes(b"PK")
    (down / A / "lovelaceada_1001_5001_01-word2vec.ipynb").symlink_to("/etc/passwd")
    (down / A / "broken.zip").write_bytes(b"not a zip")
    collected, problems = lms.collect(down, tmp_path / "submitted", ASSIGNMENTS, "canvas", None, calendar(tmp_path))
    assert collected == []
    assert problems_by_source(problems) == {
        "submissions.zip": "ignored: not a folder named after an assignment (01-word2vec, 03-gpt)",
        f"{A}/broken.zip": "refused: not a readable zip (BadZipFile: File is not a zip file)",
        f"{A}/lovelaceada_1001_5001_01-word2vec.ipynb": "refused: a symlink (downloads must be plain files)",
    }


COURSE = """
timezone = "Europe/Berlin"
[late]
policy = "per_hour"
points_per_hour = 2
[due]
01-word2vec = 2026-02-06T23:59:00
03-gpt = 2026-03-06T23:59:00Z
[extensions.ada]
01-word2vec = 48
[extensions.jmuller]
03-gpt = 2026-03-10T12:00:00
[extensions.ghost]
01-word2vec = 24
"""


def test_course_toml_due_dates_extensions_and_its_mistakes(tmp_path):
    c = calendar(tmp_path, COURSE)
    berlin = ZoneInfo("Europe/Berlin")
    assert c.due_for("bob", A) == datetime(2026, 2, 6, 23, 59, tzinfo=berlin)
    assert c.due_for("ada", A) == datetime(2026, 2, 8, 23, 59, tzinfo=berlin), "48 hours more"
    assert c.due_for("jmuller", "03-gpt") == datetime(2026, 3, 10, 12, tzinfo=berlin), "a date of their own"
    assert c.due_for("bob", "03-gpt") == datetime(2026, 3, 6, 23, 59, tzinfo=UTC), "an explicit offset stays"
    c.check_students({"ada", "jmuller", "bob"})
    assert c.problems == ["course.toml: an extension for 'ghost', who is not in this class (ignored)"]
    bad = calendar(
        tmp_path,
        'timezone = "Mars/Olympus"\nlate = 3\n[due]\n99-nothing = 2026-01-01T00:00:00\n01-word2vec = "soon"\n'
        "[extensions.ada]\n01-word2vec = true\n[lms]\nname = 'blackboard'\n",
    )
    assert bad.problems == [
        "course.toml: timezone: not an IANA time zone name (ignored)",
        "course.toml: late: Input should be a valid dictionary or instance of LatePolicy (ignored)",
        "course.toml: due.01-word2vec: not a date-time (ignored)",
        "course.toml: extensions.ada.01-word2vec: neither hours nor a date-time (ignored)",
        "course.toml: lms.name: Input should be 'canvas' or 'moodle' (ignored)",
        "course.toml: due.99-nothing: no such assignment (ignored)",
    ]
    assert bad.due == {} and bad.timezone == ZoneInfo("UTC")
    assert calendar(tmp_path, "due = [").problems[0].startswith("course.toml cannot be read")


def submission(tmp_path: Path, student: str, when: datetime | None = None, stamp: str | None = None, late=None):
    folder = tmp_path / "submitted" / student / A
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_bytes(nb(student))
    if when is not None:
        import os

        os.utime(folder / f"{A}.ipynb", (when.timestamp(), when.timestamp()))
    if stamp is not None:
        (folder / "timestamp.txt").write_text(stamp, encoding="utf-8")
    if late is not None:
        (folder / "lms.json").write_text(json.dumps({"lms": "canvas", "late": late}), encoding="utf-8")
    return folder


def test_late_penalties_follow_nbgraders_plugins(tmp_path):
    c = calendar(tmp_path, COURSE)
    due = datetime(2026, 2, 6, 23, 59, tzinfo=ZoneInfo("Europe/Berlin"))
    now = due + timedelta(days=30)
    # per hour: nbgrader's example plugin, round(hours late) points per hour (2 here), clipped to the score
    late = deadlines.assess(c, "bob", A, submission(tmp_path, "bob", due + timedelta(hours=3, minutes=20)), now)
    assert (late.seconds_late, late.source, late.penalty(10)) == (12_000, "the file's time", 6.0)
    assert late.penalty(4) == 4, "never more than the score"
    assert late.describe() == ("submitted 2026-02-07 03:19 CET, 3.3 hours after the due date 2026-02-06 23:59 CET")
    on_time = deadlines.assess(c, "ada", A, submission(tmp_path, "ada", due + timedelta(hours=40)), now)
    assert on_time.penalty(10) == 0 and not on_time.late, "within the extension"
    stamped = submission(tmp_path, "carl", due + timedelta(days=9), stamp="2026-02-06 23:29:00 America/New_York")
    assert deadlines.assess(c, "carl", A, stamped, now).seconds_late == 5.5 * 3600, (
        "timestamp.txt before the file's time; 23:29 in New York is 05:29 in Berlin"
    )
    future = deadlines.assess(c, "dora", A, submission(tmp_path, "dora", now + timedelta(days=1)), now)
    assert future.penalty(10) == 0 and "in the future" in future.note
    canvas = deadlines.assess(c, "eve", A, submission(tmp_path, "eve", now, late=True), now)
    assert canvas.seconds_late is None and canvas.penalty(10) == 0, "Canvas says LATE but not by how much"
    assert "Canvas gives no time in its downloads" in canvas.note
    not_late = deadlines.assess(c, "fay", A, submission(tmp_path, "fay", now, late=False), now)
    assert not not_late.late, "not LATE on Canvas: on time, whatever the zip's times say"
    zero = course.Course(due=c.due, extensions=c.extensions, late=course.LatePolicy(method="zero"))
    assert deadlines.assess(zero, "eve", A, tmp_path / "submitted" / "eve" / A, now).penalty(7.5) == 7.5
    assert deadlines.assess(zero, "ada", A, tmp_path / "submitted" / "ada" / A, now).penalty(7.5) == 0
    none = course.Course(due=c.due)
    assert deadlines.assess(none, "bob", A, tmp_path / "submitted" / "bob" / A, now).penalty(10) == 0
    assert deadlines.assess(c, "bob", "03-gpt", tmp_path / "x", now).due is not None


def read_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def graded_course(tmp_path: Path) -> Path:
    """A graded course as `make autograde` leaves it, for the exports: grades.csv, feedback pages, lms.json."""
    root = tmp_path / "course"
    rows = [
        GRADES_COLUMNS,
        ["ada", A, "20", "0", "20", "25", "graded", "", "0", ""],
        ["jmuller", A, "18.5", "2", "16.5", "25", "graded", "", "0", "submitted ..., 1.0 hours after ..."],
        ["zed", A, "3", "0", "3", "25", "graded", "", "0", ""],
    ]
    root.mkdir()
    with open(root / "grades.csv", "w", encoding="utf-8", newline="") as stream:
        csv.writer(stream).writerows(rows)
    for student, record in (
        ("ada", lms.Record("canvas", "x", "1001", "lovelaceada", "5002", False)),
        ("jmuller", lms.Record("moodle", "x", "4243", "Jürgen Müller")),
    ):
        (root / "feedback" / student / A).mkdir(parents=True)
        (root / "feedback" / student / A / f"{A}.html").write_text(f"<p>{student}</p>", encoding="utf-8")
        (root / "submitted" / student / A).mkdir(parents=True)
        (root / "submitted" / student / A / "lms.json").write_text(json.dumps(record.__dict__), encoding="utf-8")
    return root


def test_canvas_export_is_its_gradebook_import_format_and_feedback_names_read_back(tmp_path):
    root = graded_course(tmp_path)
    roster = lms.read_roster(FIXTURES / "canvas" / "gradebook-export.csv", "canvas", "SIS Login ID")
    report = exports.export(root, "canvas", calendar(root), ASSIGNMENTS, roster)
    assert read_csv(root / "exports" / "canvas-grades.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01-word2vec (101)"],
        ["    Points Possible", "", "", "", "", "25"],
        ["Lovelace, Ada", "1001", "S1001", "ada", "Section A", "20"],
        ["Müller, Jürgen", "1002", "S1002", "jmuller", "Section A", "16.5"],
        ["Turing, Alan", "1003", "S1003", "aturing", "Section B", ""],
    ]
    assert "graded but on no roster row, not exported: zed" in report
    with zipfile.ZipFile(root / "exports" / "canvas-feedback" / f"{A}.zip") as archive:
        members = archive.namelist()
        assert members == ["lovelaceada_1001_5002_01-word2vec-feedback.html"]
        assert archive.read(members[0]) == b"<p>ada</p>"
    # Canvas's infer_comment_context_from_filename: the first two all-digit fields are the user and attachment ids
    digits = [part for part in members[0].split("_") if part.isdigit()][:2]
    assert digits == ["1001", "5002"]
    assert any("jmuller" in line and "feedback not packed" in line for line in report), "a Moodle record: not Canvas"


def test_moodle_export_has_an_identifier_column_and_the_feedback_zip_moodle_imports(tmp_path):
    root = graded_course(tmp_path)
    roster = lms.read_roster(FIXTURES / "moodle" / "grades-export.csv", "moodle", "ID number")
    exports.export(root, "moodle", calendar(root, '[lms]\nstudent_id = "ID number"\n'), ASSIGNMENTS, roster)
    rows = read_csv(root / "exports" / "moodle-grades.csv")
    assert rows[0] == [
        "First name",
        "Surname",
        "ID number",
        "Email address",
        "Assignment: 01-word2vec (Real)",
        "Feedback: Assignment: 01-word2vec (Real)",
    ]
    assert rows[2][:5] == ["Jürgen", "Müller", "jmuller", "jurgen@example.com", "16.5"]
    assert rows[2][5] == "18.5 / 25 before any late penalty; late penalty 2 (submitted ..., 1.0 hours after ...)"
    with zipfile.ZipFile(root / "exports" / "moodle-feedback" / f"{A}.zip") as archive:
        (member,) = archive.namelist()
    assert member == "Jürgen Müller_4243_assignfeedback_file_/01-word2vec-feedback.html"
    info = member.split("/")[0].split("_", 4)  # importziplib.php: explode('_', $pathpart, 5)
    assert info[1] == "4243" and (info[2], info[3]) == ("assignfeedback", "file")


def test_exported_cells_never_start_a_formula(tmp_path):
    assert exports._cell('=HYPERLINK("x")') == '\'=HYPERLINK("x")' and exports._cell("-3") == "-3"


def test_a_roster_that_is_not_a_file_is_reported(tmp_path):
    """The roster is the instructor's (trusted): one plain check, that it is a file (a FIFO would be waited on)."""
    os.mkfifo(tmp_path / "roster.csv")
    problems = lms.read_roster(tmp_path / "roster.csv", "canvas", "SIS Login ID").problems
    assert problems == ["roster roster.csv cannot be read (ValueError: not a file)"], problems


def test_the_commands_lms_sets_the_rosters_id_column_when_course_toml_names_none(tmp_path):
    """`make autograde LMS=canvas ROSTER=...` with a course.toml that names no LMS: the roster is Canvas's, read by
    Canvas's default id column (it was read by none, and refused)."""
    root = tmp_path / "course"
    folder = root / "downloads" / A
    folder.mkdir(parents=True)
    (folder / f"lovelaceada_1001_5001_{A}.ipynb").write_bytes(nb("ada's own work"))
    when = calendar(root).for_lms("canvas")
    assert when.lms.id_column == "SIS Login ID"
    intake = lms.intake(
        root, ASSIGNMENTS, root / "downloads", FIXTURES / "canvas" / "gradebook-export.csv", "canvas", when
    )
    assert "ada" in intake.allowed, intake.notes
    assert (root / "submitted" / "ada" / A / f"{A}.ipynb").read_bytes() == nb("ada's own work")
