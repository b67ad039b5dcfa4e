"""Holes a red team found in the grader, each a hostile student's attack through `make autograde` (test_hostile's
make_autograde) in a course of its own. Each test failed while its hole was open: its assertion states the safe
outcome, its comment the unsafe one."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from helpers.grading import solution_code, submission
from test_hostile import course, make_autograde

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "lms"
A = "01-word2vec"

pytestmark = pytest.mark.slow


def grades(root: Path) -> dict[str, dict]:
    with open(root / "grades.csv", encoding="utf-8", newline="") as stream:
        return {r["student"]: r for r in csv.DictReader(stream)}


def two_answers():
    """Two answers of 01-word2vec right (7 points, graded in seconds), the others the release's stubs."""
    sol = solution_code(A)
    return submission(A, {k: sol[k] for k in ("skipgram_pairs", "noise_distribution")})


def test_a_display_name_holding_the_students_own_ids_cannot_drop_canvas_late_mark(tmp_path):
    """Canvas names a download ``<name>_[LATE_]<user id>_<attachment id>_<file>``, and the name part is the student's
    display name. Ada (user 1001) renames herself ``x_1001_1_y``: her late upload is downloaded as
    ``x_1001_1_y_LATE_1001_5555_01-word2vec.ipynb``. Every reading of that name is user 1001, so the "reads as two
    users" rule does not fire, and the collector takes the FIRST reading (name "x", attachment 1, file
    "y_LATE_1001_5555_01-word2vec.ipynb"), which has no LATE mark. Jürgen (1002) hands in the same late work under
    his real name. The course's late policy is "zero"."""
    root = course(tmp_path / "course")
    (root / "course.toml").write_text(
        'timezone = "UTC"\n[late]\npolicy = "zero"\n[due]\n01-word2vec = 2026-02-06T23:59:00\n'
        '[lms]\nname = "canvas"\nroster = "roster.csv"\n',
        encoding="utf-8",
    )
    shutil.copy(FIXTURES / "canvas" / "gradebook-export.csv", root / "roster.csv")
    downloads = tmp_path / "downloads" / A
    downloads.mkdir(parents=True)
    nbformat.write(two_answers(), str(downloads / f"x_1001_1_y_LATE_1001_5555_{A}.ipynb"))
    nbformat.write(two_answers(), str(downloads / f"mullerjurgen_LATE_1002_5556_{A}.ipynb"))
    run = make_autograde(root, dict(os.environ), 1200, [f"DOWNLOADS={tmp_path / 'downloads'}", "LMS=canvas"])
    assert run["rc"] == 0 and not run["timed_out"], run["stdout"][-2000:] + run["stderr"][-2000:]
    rows = grades(root)
    honest = rows["jmuller"]
    assert float(honest["raw_score"]) == 7 and float(honest["score"]) == 0, honest  # the control: LATE costs all
    ada = rows.get("ada")
    # unsafe: Ada's late work is collected as on time ("submitted at an unknown time, by the due date"): 7 points
    # kept, where Canvas marked it LATE and the policy gives 0
    assert ada is None or ada["status"] == "failed" or float(ada["score"]) == 0, ada


# Memory the watchdog cannot see: a student cell that fills socket pairs' send buffers (kernel memory, in no
# process's RSS) far beyond the sandbox's memory limit.


# Memory the watchdog cannot see: a student cell that fills socket pairs' send buffers (kernel memory, in no
# process's RSS) far beyond the sandbox's memory limit.
SOCKET_HOARD = r"""
import socket, time
keep, total = [], 0
while total < 600 * 2**20:
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
    a.setblocking(False)
    try:
        while total < 600 * 2**20:
            total += a.send(b"x" * 65536)
    except BlockingIOError:
        pass
    keep.append((a, b))
time.sleep(1)
print(f"HOARDED {total >> 20} MB in {len(keep)} socket pairs")
"""


def test_the_watchdogs_memory_limit_holds_for_memory_outside_any_rss(tmp_path):
    """Where the grading user cannot create a cgroup, the sandbox's memory limit is a watchdog that samples the
    RSS of the sandbox's processes (the grading page, "Limits of each sandbox"). A socket pair's send buffer is
    kernel memory that no RSS shows: one process held 600 MB in them under a limit of 256 MB (with 128 processes
    and 256 files each, gigabytes: enough to take the grading machine's memory from the class). `make autograde`
    runs here in a mount namespace of its own where the cgroup file systems are read-only: the fallback, as on a
    machine without delegated cgroups."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root to make cgroups unavailable in a mount namespace of its own")
    root = course(tmp_path / "course")
    config = root / "nbgrader_config.py"
    config.write_text(config.read_text(encoding="utf-8") + "\nc.SandboxGrader.memory_mb = 256\n", encoding="utf-8")
    nb = two_answers()
    nb.cells.append(nbformat.v4.new_code_cell(SOCKET_HOARD))
    folder = root / "submitted" / "mallory" / A
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / f"{A}.ipynb"))
    readonly = 'for m in $(findmnt -rn -t cgroup,cgroup2 -o TARGET); do mount -o remount,bind,ro "$m"; done'
    grade = f"make -s autograde COURSE={root} JOBS=1"
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", f"{readonly} && {grade}"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, env=dict(os.environ),
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    page = (root / "feedback" / "mallory" / A / f"{A}.html").read_text(encoding="utf-8")
    assert float(grades(root)["mallory"]["raw_score"]) == 7, "the honest answers keep their points"
    # unsafe: the cell finishes holding 600 MB, more than twice the 256 MB limit, and nothing stops it
    held = re.findall(r"HOARDED [0-9]+ MB in [0-9]+ socket pairs", page)  # the output (the source has "{total")
    assert not held, held
    assert "PermissionError" in page, "the student is told the call was refused"


def test_a_folder_opened_from_a_students_canvas_zip_names_no_other_student(tmp_path):
    """A Canvas download is flat (``<name>_<user id>_<attachment id>_<file>``), and a zip a student uploaded is never
    opened, since the names inside it are the student's. But the collector walks subfolders of an unpacked download
    and reads a Canvas name from a file's BASE name alone, whatever folder holds it. Alan (user 1003) uploads
    ``work.zip`` holding ``lovelaceada_1001_99999_01-word2vec.ipynb`` (empty stubs); Canvas names it
    ``turingalan_1003_5004_work.zip``. The instructor opens it to look inside (a double-click, a "Canvas unzipper"),
    which leaves the folder ``turingalan_1003_5004_work/``, then grades the download. Ada (1001) handed in honest work
    (7 points) as ``lovelaceada_1001_5001_01-word2vec.ipynb``."""
    root = course(tmp_path / "course")
    (root / "course.toml").write_text(
        'timezone = "UTC"\n[lms]\nname = "canvas"\nroster = "roster.csv"\n', encoding="utf-8"
    )
    shutil.copy(FIXTURES / "canvas" / "gradebook-export.csv", root / "roster.csv")
    downloads = tmp_path / "downloads" / A
    opened = downloads / "turingalan_1003_5004_work"  # Alan's uploaded zip, opened: its names are Alan's own
    opened.mkdir(parents=True)
    nbformat.write(two_answers(), str(downloads / f"lovelaceada_1001_5001_{A}.ipynb"))
    nbformat.write(submission(A, {}), str(opened / f"lovelaceada_1001_99999_{A}.ipynb"))
    run = make_autograde(root, dict(os.environ), 1200, [f"DOWNLOADS={tmp_path / 'downloads'}", "LMS=canvas"])
    assert run["rc"] == 0 and not run["timed_out"], run["stdout"][-2000:] + run["stderr"][-2000:]
    ada = grades(root)["ada"]
    # unsafe: Alan's member is read as Ada's upload with attachment id 99999, newer than her own 5001: it supersedes
    # her work ("superseded: .../turingalan_1003_5004_work/lovelaceada_1001_99999_01-word2vec.ipynb is newer"), and
    # she is graded on his stubs: 0 points where she earned 7
    assert float(ada["raw_score"]) == 7, ada
