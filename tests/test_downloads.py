"""word2bert_grader.intake.downloads: LMS downloads -> submitted/<student>/<assignment>/<assignment>.ipynb.

Each test builds a downloads folder (zips made with zipfile) in tmp_path, collects it, and checks
the exact outcome: who was collected with which bytes, each problem's reason, that nothing was
written outside submitted/ and that other students' folders are unchanged. The cases are the ways
``nbgrader zip_collect`` went wrong (a ``../`` member or two files for one student collected nobody;
a file named after another student inside a zip replaced that student's work) and the refusals that
keep a hostile download from doing harm.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from word2bert_grader.intake import downloads
from word2bert_grader.intake.downloads import Collected, Problem, collect, read_roster

ASSIGNMENTS = ("01-word2vec", "05-bert-finetuning")
OLD, NEW = "2026-01-05-09-00-00", "2026-01-05-10-00-00"  # 9 < 10 as numbers and as text


def nb(tag: str) -> bytes:
    """Notebook bytes that say whose they are (collect does not parse them)."""
    return b'{"cells": [], "metadata": {"tag": "TAG"}, "nbformat": 4, "nbformat_minor": 5}'.replace(
        b"TAG", tag.encode()
    )


def make_zip(path: Path, members: list[tuple[str | zipfile.ZipInfo, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


def patch_first_member(path: Path, fmt: str, local: int, central: int, value: int) -> None:
    """Overwrite a field of the zip's first member in its local header and its central directory
    record (zipfile would not write these lies itself)."""
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, local, value)
    struct.pack_into(fmt, data, data.index(b"PK\x01\x02") + central, value)
    path.write_bytes(bytes(data))


def tree(root: Path) -> dict[str, bytes]:
    """Every file (and symlink, as its target) under root, by relative path."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


@pytest.fixture
def course(tmp_path: Path):
    """(downloads, submitted, run): run() collects downloads into submitted and checks that
    nothing outside submitted/ changed."""
    down, sub = tmp_path / "downloads", tmp_path / "submitted"
    down.mkdir()

    def run(**kwargs) -> tuple[list[Collected], dict[str, Problem]]:
        before = {k: v for k, v in tree(tmp_path).items() if not k.startswith("submitted/")}
        collected, problems = collect(down, sub, ASSIGNMENTS, **kwargs)
        after = {k: v for k, v in tree(tmp_path).items() if not k.startswith("submitted/")}
        assert after == before, "collect wrote outside submitted/"
        by_source = {p.source: p for p in problems}
        assert len(by_source) == len(problems), problems
        return collected, by_source

    return down, sub, run


def written(sub: Path, student: str, assignment: str) -> bytes:
    return (sub / student / assignment / f"{assignment}.ipynb").read_bytes()


def test_notebooks_named_by_student_and_assignment_are_collected(course):
    down, sub, run = course
    (down / "alice_01-word2vec.ipynb").write_bytes(nb("alice-1"))
    (down / f"bob_attempt_{NEW}_05-bert-finetuning.ipynb").write_bytes(nb("bob-5"))
    (down / "carol_doe_01-word2vec.ipynb").write_bytes(nb("carol-1"))  # ids may hold "_"
    (down / "dan@uni.edu_05-bert-finetuning.ipynb").write_bytes(nb("dan-5"))
    collected, problems = run()
    assert collected == [
        Collected("alice", "01-word2vec", "alice_01-word2vec.ipynb"),
        Collected("bob", "05-bert-finetuning", f"bob_attempt_{NEW}_05-bert-finetuning.ipynb"),
        Collected("carol_doe", "01-word2vec", "carol_doe_01-word2vec.ipynb"),
        Collected("dan@uni.edu", "05-bert-finetuning", "dan@uni.edu_05-bert-finetuning.ipynb"),
    ]
    assert problems == {}
    assert written(sub, "alice", "01-word2vec") == nb("alice-1")
    assert written(sub, "bob", "05-bert-finetuning") == nb("bob-5")
    assert written(sub, "carol_doe", "01-word2vec") == nb("carol-1")
    assert sorted(os.listdir(sub / "alice" / "01-word2vec")) == ["01-word2vec.ipynb"]  # no temp


def test_a_notebook_keeps_the_time_of_its_download(course):
    # unfair: every notebook was written with the time it was collected, which deadlines.py reads as the time of the
    # submission: collected after the due date, work handed in on time was late (and scored 0 under "zero")
    down, sub, run = course
    (down / "alice_01-word2vec.ipynb").write_bytes(nb("alice-1"))
    on_time = 1767603600.0  # 2026-01-05 09:00 UTC
    os.utime(down / "alice_01-word2vec.ipynb", (on_time, on_time))
    # a zip's own time, not its member's, which the student's zipper wrote (here: years before)
    member = zipfile.ZipInfo("05-bert-finetuning.ipynb", date_time=(2020, 1, 1, 0, 0, 0))
    make_zip(down / "bob.zip", [(member, nb("bob-5"))])
    os.utime(down / "bob.zip", (on_time + 60, on_time + 60))
    collected, problems = run()
    assert len(collected) == 2 and problems == {}
    assert os.stat(sub / "alice" / "01-word2vec" / "01-word2vec.ipynb").st_mtime == on_time
    assert os.stat(sub / "bob" / "05-bert-finetuning" / "05-bert-finetuning.ipynb").st_mtime == on_time + 60


def test_a_member_named_after_another_student_is_the_zip_owners(course):
    down, sub, run = course
    honest = sub / "alice" / "01-word2vec" / "01-word2vec.ipynb"
    honest.parent.mkdir(parents=True)
    honest.write_bytes(nb("alice-honest"))
    make_zip(
        down / "bob_x.zip",
        [("alice_01-word2vec.ipynb", nb("bob-copy")), ("work/05-bert-finetuning.ipynb", nb("bob-5"))],
    )
    collected, problems = run()
    assert collected == [
        Collected("bob", "01-word2vec", "bob_x.zip:alice_01-word2vec.ipynb"),
        Collected("bob", "05-bert-finetuning", "bob_x.zip:work/05-bert-finetuning.ipynb"),
    ]
    assert problems == {}
    assert tree(sub / "alice") == {"01-word2vec/01-word2vec.ipynb": nb("alice-honest")}
    assert written(sub, "bob", "01-word2vec") == nb("bob-copy")


def test_unsafe_members_are_refused_and_the_rest_of_the_zip_collected(course):
    down, sub, run = course
    link = zipfile.ZipInfo("05-bert-finetuning.ipynb")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    fifo = zipfile.ZipInfo("pipe.ipynb")
    fifo.external_attr = (stat.S_IFIFO | 0o644) << 16
    make_zip(
        down / "bob.zip",
        [
            ("locked_01-word2vec.ipynb", nb("locked")),  # marked encrypted below
            ("../../01-word2vec.ipynb", nb("evil")),
            ("/tmp/evil.ipynb", nb("evil")),
            ("C:/evil.ipynb", nb("evil")),
            ("..\\evil.ipynb", nb("evil")),
            (link, b"/etc/passwd"),
            (fifo, b""),
            ("../evil.ipynb", nb("evil")),
            ("sub/dir/01-word2vec.ipynb", nb("bob-1")),
        ],
    )
    patch_first_member(down / "bob.zip", "<H", 6, 8, 0x1)  # general purpose flags: encrypted
    with zipfile.ZipFile(down / "bob.zip") as archive:  # zipfile kept the names as written
        assert "../evil.ipynb" in archive.namelist() and "/tmp/evil.ipynb" in archive.namelist()
    collected, problems = run()
    assert collected == [Collected("bob", "01-word2vec", "bob.zip:sub/dir/01-word2vec.ipynb")]
    assert {s: p.reason for s, p in problems.items()} == {
        "bob.zip:../evil.ipynb": "refused: '..' in its path",
        "bob.zip:../../01-word2vec.ipynb": "refused: '..' in its path",
        "bob.zip:/tmp/evil.ipynb": "refused: an absolute path",
        "bob.zip:C:/evil.ipynb": "refused: an absolute path",
        "bob.zip:..\\evil.ipynb": "refused: a backslash in its path",
        "bob.zip:05-bert-finetuning.ipynb": "refused: a symlink",
        "bob.zip:pipe.ipynb": "refused: not a regular file",
        "bob.zip:locked_01-word2vec.ipynb": "refused: encrypted",
    }
    # bob's 05 was only a symlink: it must still reach the grade sheet as a failed row.
    symlink = problems["bob.zip:05-bert-finetuning.ipynb"]
    assert (symlink.student, symlink.assignment) == ("bob", "05-bert-finetuning")
    # bob's 01 was collected from another member: no failed row for it, nor for evil.ipynb.
    assert [(p.student, p.assignment) for s, p in problems.items() if s != "bob.zip:05-bert-finetuning.ipynb"] == [
        (None, None)
    ] * 7
    assert tree(sub) == {"bob/01-word2vec/01-word2vec.ipynb": nb("bob-1")}


def test_members_over_the_size_cap_are_refused_on_header_or_decompressed_size(course):
    down, sub, run = course
    bomb = b"\0" * 2**20  # 1 MiB of zeros: about 1 KiB deflated
    make_zip(down / "bob.zip", [("01-word2vec.ipynb", bomb)])
    # carol's header claims 100 bytes for the same megabyte: zipfile stops at the claim and the CRC
    # fails, so the lie is refused too, never collected or written whole.
    make_zip(down / "carol.zip", [("01-word2vec.ipynb", bomb)])
    patch_first_member(down / "carol.zip", "<I", 22, 24, 100)  # uncompressed size
    make_zip(down / "dan.zip", [("01-word2vec.ipynb", nb("dan-1"))])
    collected, problems = run(max_member_bytes=64 * 2**10)
    assert collected == [Collected("dan", "01-word2vec", "dan.zip:01-word2vec.ipynb")]
    assert problems["bob.zip:01-word2vec.ipynb"] == Problem(
        "bob.zip:01-word2vec.ipynb", "refused: 1048576 bytes, more than the 65536-byte limit", "bob", "01-word2vec"
    )
    carol = problems.pop("carol.zip:01-word2vec.ipynb")
    assert (carol.student, carol.assignment) == ("carol", "01-word2vec")
    assert carol.reason.startswith("refused: cannot read") and "CRC" in carol.reason
    assert len(problems) == 1
    assert tree(sub) == {"dan/01-word2vec/01-word2vec.ipynb": nb("dan-1")}


def test_a_member_that_decompresses_past_the_cap_is_refused_while_reading(course):
    down, sub, run = course
    make_zip(down / "bob.zip", [("01-word2vec.ipynb", b"{" * 5000)])
    with zipfile.ZipFile(down / "bob.zip") as archive:
        member = archive.infolist()[0]
    # The header passed the check at scan time; what it yields when read is counted again.
    assert downloads.read_member(down / "bob.zip", member, 5000) == b"{" * 5000
    with pytest.raises(downloads.Refused, match="more than the 4999-byte limit once decompressed"):
        downloads.read_member(down / "bob.zip", member, 4999)


def test_archives_with_too_many_members_or_bytes_are_refused_whole(course, monkeypatch):
    down, sub, run = course
    monkeypatch.setattr(downloads, "MAX_MEMBERS", 3)
    monkeypatch.setattr(downloads, "MAX_ARCHIVE_BYTES", 10_000)
    make_zip(down / "bob.zip", [(f"{i}_01-word2vec.ipynb", nb("bob")) for i in range(4)])
    make_zip(down / "carol.zip", [("01-word2vec.ipynb", b" " * 6000), ("05-bert-finetuning.ipynb", b" " * 6000)])
    collected, problems = run()
    assert collected == []
    assert {s: p.reason for s, p in problems.items()} == {
        "bob.zip": "refused: 4 members, more than 3",
        "carol.zip": "refused: 12000 bytes uncompressed, more than 10000",
    }
    assert not sub.exists()


def test_the_newest_attempt_wins_and_the_others_are_superseded(course):
    down, sub, run = course
    (down / f"bob_attempt_{OLD}_01-word2vec.ipynb").write_bytes(nb("bob-old"))
    make_zip(down / f"bob_attempt_{NEW}_hw1.zip", [("01-word2vec.ipynb", nb("bob-new"))])
    (down / "bob_attempt_2026-01-04-23-59-59_01-word2vec.ipynb").write_bytes(nb("bob-older"))
    # Timestamps compare as numbers: 2026-01-05-9 is older than 2026-01-05-10.
    (down / "carol_attempt_2026-01-05-9-00-00_01-word2vec.ipynb").write_bytes(nb("carol-old"))
    (down / "carol_attempt_2026-01-05-10-00-00_01-word2vec.ipynb").write_bytes(nb("carol-new"))
    collected, problems = run()
    assert collected == [
        Collected("bob", "01-word2vec", f"bob_attempt_{NEW}_hw1.zip:01-word2vec.ipynb"),
        Collected("carol", "01-word2vec", "carol_attempt_2026-01-05-10-00-00_01-word2vec.ipynb"),
    ]
    new = f"bob_attempt_{NEW}_hw1.zip:01-word2vec.ipynb"
    assert problems == {
        f"bob_attempt_{OLD}_01-word2vec.ipynb": Problem(
            f"bob_attempt_{OLD}_01-word2vec.ipynb", f"superseded: {new} is newer"
        ),
        "bob_attempt_2026-01-04-23-59-59_01-word2vec.ipynb": Problem(
            "bob_attempt_2026-01-04-23-59-59_01-word2vec.ipynb", f"superseded: {new} is newer"
        ),
        "carol_attempt_2026-01-05-9-00-00_01-word2vec.ipynb": Problem(
            "carol_attempt_2026-01-05-9-00-00_01-word2vec.ipynb",
            "superseded: carol_attempt_2026-01-05-10-00-00_01-word2vec.ipynb is newer",
        ),
    }
    assert written(sub, "bob", "01-word2vec") == nb("bob-new")
    assert written(sub, "carol", "01-word2vec") == nb("carol-new")


def test_two_downloads_without_a_single_newest_collect_neither_but_get_a_row(course):
    down, sub, run = course
    (down / "bob_01-word2vec.ipynb").write_bytes(nb("bob-a"))
    make_zip(down / "bob.zip", [("01-word2vec.ipynb", nb("bob-b")), ("05-bert-finetuning.ipynb", nb("bob-5"))])
    (down / f"carol_attempt_{NEW}_01-word2vec.ipynb").write_bytes(nb("carol-a"))
    make_zip(down / f"carol_attempt_{NEW}_x.zip", [("01-word2vec.ipynb", nb("carol-b"))])
    (down / "dan_01-word2vec.ipynb").write_bytes(nb("dan"))  # the honest one in between
    collected, problems = run()
    assert collected == [
        Collected("bob", "05-bert-finetuning", "bob.zip:05-bert-finetuning.ipynb"),
        Collected("dan", "01-word2vec", "dan_01-word2vec.ipynb"),
    ]
    assert problems == {
        "bob.zip:01-word2vec.ipynb, bob_01-word2vec.ipynb": Problem(
            "bob.zip:01-word2vec.ipynb, bob_01-word2vec.ipynb",
            "conflict: 2 notebooks for bob/01-word2vec that cannot be told apart; none collected",
            "bob",
            "01-word2vec",
        ),
        f"carol_attempt_{NEW}_01-word2vec.ipynb, carol_attempt_{NEW}_x.zip:01-word2vec.ipynb": Problem(
            f"carol_attempt_{NEW}_01-word2vec.ipynb, carol_attempt_{NEW}_x.zip:01-word2vec.ipynb",
            "conflict: 2 notebooks for carol/01-word2vec that cannot be told apart; none collected",
            "carol",
            "01-word2vec",
        ),
    }
    assert tree(sub) == {
        "bob/05-bert-finetuning/05-bert-finetuning.ipynb": nb("bob-5"),
        "dan/01-word2vec/01-word2vec.ipynb": nb("dan"),
    }


def test_bad_student_ids_are_refused(course):
    down, sub, run = course
    (down / "-rf_01-word2vec.ipynb").write_bytes(nb("x"))
    (down / ".._01-word2vec.ipynb").write_bytes(nb("x"))
    (down / "bob smith_01-word2vec.ipynb").write_bytes(nb("x"))
    # a red team's: grades.csv's row would begin "@A1-B1,", a formula to a spreadsheet
    (down / "@A1-B1_01-word2vec.ipynb").write_bytes(nb("x"))
    make_zip(down / "-x.zip", [("01-word2vec.ipynb", nb("x"))])
    collected, problems = run()
    assert collected == []
    assert {s: p.reason for s, p in problems.items()} == {
        "-rf_01-word2vec.ipynb": "refused: student id '-rf' begins with '-'",
        ".._01-word2vec.ipynb": "refused: student id '..' begins with '.'",
        "bob smith_01-word2vec.ipynb": "refused: student id 'bob smith' has characters other "
        "than letters, digits and . _ @ -",
        "@A1-B1_01-word2vec.ipynb": "refused: student id '@A1-B1' begins with '@', which a spreadsheet reads as a "
        "formula",
        "-x.zip": "refused: student id '-x' begins with '-'",
    }
    assert all(p.student is None for p in problems.values())
    assert not sub.exists()


def test_the_roster_refuses_unknown_ids_and_tells_ids_with_underscores_apart(course):
    down, sub, run = course
    (down / "alice_01-word2vec.ipynb").write_bytes(nb("alice"))
    (down / "mallory_01-word2vec.ipynb").write_bytes(nb("mallory"))
    make_zip(down / "john_doe_hw1.zip", [("01-word2vec.ipynb", nb("john_doe"))])
    make_zip(down / "ann_lee_hw1.zip", [("01-word2vec.ipynb", nb("ann?"))])
    roster = {"alice", "john_doe", "ann", "ann_lee"}
    collected, problems = run(roster=roster)
    assert collected == [
        Collected("alice", "01-word2vec", "alice_01-word2vec.ipynb"),
        Collected("john_doe", "01-word2vec", "john_doe_hw1.zip:01-word2vec.ipynb"),
    ]
    assert {s: p.reason for s, p in problems.items()} == {
        "mallory_01-word2vec.ipynb": "refused: student id 'mallory' is not on the roster",
        "ann_lee_hw1.zip": "refused: whose download? the roster has 'ann', 'ann_lee'",
    }
    assert sorted(os.listdir(sub)) == ["alice", "john_doe"]


def test_a_file_that_is_not_a_zip_is_reported(course):
    down, sub, run = course
    (down / "dave.zip").write_bytes(b"not a zip at all")
    (down / "erin_01-word2vec.ipynb").write_bytes(nb("erin"))
    collected, problems = run()
    assert collected == [Collected("erin", "01-word2vec", "erin_01-word2vec.ipynb")]
    assert problems == {"dave.zip": Problem("dave.zip", "refused: not a valid zip (File is not a zip file)")}


def test_files_that_match_no_name_are_ignored_and_reported(course):
    down, sub, run = course
    (down / "notes.txt").write_text("grading notes", encoding="utf-8")
    (down / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (down / "alice_99-unknown.ipynb").write_bytes(nb("x"))
    (down / "extra").mkdir()
    (down / "extra" / "bob_01-word2vec.ipynb").write_bytes(nb("bob-in-subfolder"))
    make_zip(
        down / "alice_hw.zip",
        [
            ("01-word2vec.ipynb", nb("alice-1")),
            ("__MACOSX/._01-word2vec.ipynb", b"\0\5\26\7 AppleDouble"),
            ("README.md", b"# my work"),
            ("inner.zip", b"PK\5\6" + b"\0" * 18),
            ("data/", b""),
        ],
    )
    collected, problems = run()
    assert collected == [Collected("alice", "01-word2vec", "alice_hw.zip:01-word2vec.ipynb")]
    assert {s: p.reason for s, p in problems.items()} == {
        ".DS_Store": "ignored: neither a notebook nor a zip",
        "alice_99-unknown.ipynb": "ignored: not named <student>_[attempt_<timestamp>_]"
        "<assignment>.ipynb for a known assignment",
        "alice_hw.zip:README.md": "ignored: not a notebook of a known assignment",
        "alice_hw.zip:__MACOSX/._01-word2vec.ipynb": "ignored: macOS metadata",
        "alice_hw.zip:inner.zip": "ignored: a zip inside the zip (not opened)",
        "extra": "ignored: a subfolder (only the folder's own files count)",
        "notes.txt": "ignored: neither a notebook nor a zip",
    }
    assert tree(sub) == {"alice/01-word2vec/01-word2vec.ipynb": nb("alice-1")}


def test_symlinks_and_special_files_in_the_downloads_folder_are_refused(course, tmp_path):
    down, sub, run = course
    secret = tmp_path / "secret_01-word2vec.ipynb"
    secret.write_bytes(nb("not a download"))
    (down / "erin_01-word2vec.ipynb").symlink_to(secret)
    (down / "erin.zip").symlink_to(tmp_path / "missing.zip")
    os.mkfifo(down / "frank_01-word2vec.ipynb")  # reading it would hang
    collected, problems = run()
    assert collected == []
    assert {s: p.reason for s, p in problems.items()} == {
        "erin_01-word2vec.ipynb": "refused: a symlink (downloads must be plain files)",
        "erin.zip": "refused: a symlink (downloads must be plain files)",
        "frank_01-word2vec.ipynb": "refused: not a regular file",
    }
    assert not sub.exists()


def test_symlinked_folders_in_submitted_are_never_written_through(course, tmp_path):
    down, sub, run = course
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "01-word2vec").mkdir(parents=True)
    (sub / "gina").mkdir(parents=True)
    (sub / "frank").symlink_to(elsewhere)
    (sub / "gina" / "01-word2vec").symlink_to(elsewhere / "01-word2vec")
    (sub / "hal").write_text("a file where a folder belongs", encoding="utf-8")
    for student in ("frank", "gina", "hal"):
        (down / f"{student}_01-word2vec.ipynb").write_bytes(nb(student))
    collected, problems = run()
    assert collected == []
    assert problems == {
        "frank_01-word2vec.ipynb": Problem(
            "frank_01-word2vec.ipynb",
            "refused: submitted/frank is a symlink (not written through)",
            "frank",
            "01-word2vec",
        ),
        "gina_01-word2vec.ipynb": Problem(
            "gina_01-word2vec.ipynb",
            "refused: submitted/gina/01-word2vec is a symlink (not written through)",
            "gina",
            "01-word2vec",
        ),
        "hal_01-word2vec.ipynb": Problem(
            "hal_01-word2vec.ipynb", "refused: submitted/hal exists and is not a folder", "hal", "01-word2vec"
        ),
    }
    assert tree(elsewhere) == {}


def test_a_new_download_replaces_the_students_own_submission_only(course):
    down, sub, run = course
    for student in ("alice", "bob"):
        folder = sub / student / "01-word2vec"
        folder.mkdir(parents=True)
        (folder / "01-word2vec.ipynb").write_bytes(nb(f"{student}-earlier"))
    (sub / "alice" / "01-word2vec" / "notes.md").write_text("kept", encoding="utf-8")
    (down / "alice_01-word2vec.ipynb").write_bytes(nb("alice-now"))
    collected, problems = run()
    assert collected == [Collected("alice", "01-word2vec", "alice_01-word2vec.ipynb")]
    assert problems == {}
    assert tree(sub) == {
        "alice/01-word2vec/01-word2vec.ipynb": nb("alice-now"),
        "alice/01-word2vec/notes.md": b"kept",
        "bob/01-word2vec/01-word2vec.ipynb": nb("bob-earlier"),
    }


def test_empty_notebooks_are_refused_with_a_row(course):
    down, sub, run = course
    (down / "bob_01-word2vec.ipynb").write_bytes(b"")
    make_zip(down / "carol.zip", [("05-bert-finetuning.ipynb", b"")])
    collected, problems = run()
    assert collected == []
    assert problems == {
        "bob_01-word2vec.ipynb": Problem("bob_01-word2vec.ipynb", "refused: an empty file", "bob", "01-word2vec"),
        "carol.zip:05-bert-finetuning.ipynb": Problem(
            "carol.zip:05-bert-finetuning.ipynb", "refused: an empty file", "carol", "05-bert-finetuning"
        ),
    }
    assert not sub.exists()


def test_bad_assignment_names_raise(course):
    down, sub, run = course
    with pytest.raises(ValueError, match="'../escape': has characters other than"):
        collect(down, sub, ["../escape"])
    with pytest.raises(ValueError, match="'..': begins with '.'"):
        collect(down, sub, [".."])
    with pytest.raises(TypeError, match="not one string"):
        collect(down, sub, "01-word2vec")


def test_read_roster_reads_plain_lists_and_csv(tmp_path):
    plain = tmp_path / "roster.txt"
    plain.write_text("# class of 2026, section A\nalice\n\n  bob  # late joiner\ncarol_doe\n", encoding="utf-8")
    assert read_roster(plain) == {"alice", "bob", "carol_doe"}
    sheet = tmp_path / "roster.csv"
    sheet.write_text("\ufeffName,Student_ID,email\nAlice A,alice,a@x\nBob B,bob,b@x\n,,\n", encoding="utf-8")
    assert read_roster(sheet) == {"alice", "bob"}
    single = tmp_path / "ids.csv"
    single.write_text("id\nalice\n", encoding="utf-8")
    assert read_roster(single) == {"alice"}
    bad = tmp_path / "bad.csv"
    bad.write_text("name,email\nAlice,a@x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="id, student_id, student"):
        read_roster(bad)


def test_a_roster_that_is_not_a_file_is_refused_with_the_reason(tmp_path):
    """The roster is the instructor's (trusted): one plain check, that it is a file (a FIFO would be waited on)."""
    os.mkfifo(tmp_path / "roster.txt")
    with pytest.raises(ValueError, match="is not a file"):
        read_roster(tmp_path / "roster.txt")
