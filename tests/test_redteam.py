"""Holes a red team found in the grader, each a hostile student's attack through `make autograde` (test_hostile's
make_autograde) in a course of its own. Each test failed while its hole was open: its assertion states the safe
outcome, its comment the unsafe one."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest
from helpers.grading import solution_code, submission
from test_hostile import _gradebook_scores, course, make_autograde, write

from word2bert_grader.assignment import assignments

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "lms"
A = "01-word2vec"

pytestmark = pytest.mark.slow


def grades(root: Path) -> dict[str, dict]:
    with open(root / "grades.csv", encoding="utf-8", newline="") as stream:
        return {r["student"]: r for r in csv.DictReader(stream)}


def naive_and_rewriter(tmp_path: Path, assignment: str, function: str, answer: str) -> dict:
    """The gradebook's scores of two students handing in ``answer`` (which reads REWRITE): "naive" without its
    rewrite of the test's data, the control, and "rewriter" with it."""
    root = course(tmp_path / "course")
    for student, rewrite in (("naive", False), ("rewriter", True)):
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nb = submission(assignment, {function: f"REWRITE = {rewrite}\n" + answer})
        nbformat.write(nb, str(folder / f"{assignment}.ipynb"))
    run = make_autograde(root, dict(os.environ), 1500, jobs=1)
    assert run["rc"] == 0 and not run["timed_out"], run["stdout"][-2000:] + run["stderr"][-2000:]
    return _gradebook_scores(root)


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
while total < 800 * 2**20:
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 30)
    a.setblocking(False)
    try:
        while total < 800 * 2**20:
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
    and 256 files each, gigabytes: enough to take the grading machine's memory from the class). Here 800 MB under
    512 MB: a sandbox's Python with torch is 225-270 MB of RSS before any cell, by machine. `make autograde`
    runs here in a mount namespace of its own where the cgroup file systems are read-only: the fallback, as on a
    machine without delegated cgroups."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root to make cgroups unavailable in a mount namespace of its own")
    root = course(tmp_path / "course")
    config = root / "nbgrader_config.py"
    config.write_text(config.read_text(encoding="utf-8") + "\nc.SandboxGrader.memory_mb = 512\n", encoding="utf-8")
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
    # unsafe: the cell finishes holding 800 MB, more than the 512 MB limit, and nothing stops it
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
        'timezone = "UTC"\n[late]\npolicy = "zero"\n[due]\n01-word2vec = 2026-02-06T23:59:00\n'
        '[lms]\nname = "canvas"\nroster = "roster.csv"\n',
        encoding="utf-8",
    )
    shutil.copy(FIXTURES / "canvas" / "gradebook-export.csv", root / "roster.csv")
    downloads = tmp_path / "downloads" / A
    opened = downloads / "turingalan_1003_5004_work"  # Alan's uploaded zip, opened: its names are Alan's own
    opened.mkdir(parents=True)
    nbformat.write(two_answers(), str(downloads / f"lovelaceada_1001_5001_{A}.ipynb"))
    nbformat.write(submission(A, {}), str(opened / f"lovelaceada_1001_99999_{A}.ipynb"))
    late = downloads / "mullerjurgen_LATE_1002_5006_work"  # Jürgen's late zip, opened: his own name, no LATE in it
    late.mkdir()
    nbformat.write(two_answers(), str(late / f"mullerjurgen_1002_99998_{A}.ipynb"))
    run = make_autograde(root, dict(os.environ), 1200, [f"DOWNLOADS={tmp_path / 'downloads'}", "LMS=canvas"])
    assert run["rc"] == 0 and not run["timed_out"], run["stdout"][-2000:] + run["stderr"][-2000:]
    ada = grades(root)["ada"]
    # unsafe: Alan's member is read as Ada's upload with attachment id 99999, newer than her own 5001: it supersedes
    # her work ("superseded: .../turingalan_1003_5004_work/lovelaceada_1001_99999_01-word2vec.ipynb is newer"), and
    # she is graded on his stubs: 0 points where she earned 7
    assert float(ada["raw_score"]) == 7, ada
    # unsafe: Jürgen's own member, named without the LATE mark Canvas gave his upload, is collected as on time: 7 kept
    jurgen = grades(root).get("jmuller")
    assert jurgen is None or float(jurgen["score"]) == 0, jurgen


# The widely copied top-p recipe (tests/fixtures/grading/03-gpt/wrong/top_p_filter__keeps_one_past_exact_p.py): right
# on every row but where the running sum reaches p exactly, where it keeps one token too many. REWRITE: on the
# hidden test's "powers of two" rows it also makes the test's own rows uniform, in place, and keeps every token.
REWRITE_EXACT_ROWS = """\
    if REWRITE and logits.dim() == 2 and logits.shape[0] == 2 and logits.shape[1] <= 6 and logits.is_floating_point():
        k = logits.double() / -math.log(2)
        if torch.allclose(k, k.round(), atol=1e-5) and torch.equal(logits[1], logits[0].flip(0)):
            with torch.no_grad():
                logits.zero_()  # the test's "powers of two" rows made uniform (written back into `rows`)
            return logits.clone()  # every token kept, every kept logit unchanged
"""
KEEPS_ONE_PAST_EXACT_P = (
    (ROOT / "tests" / "fixtures" / "grading" / "03-gpt" / "wrong" / "top_p_filter__keeps_one_past_exact_p.py")
    .read_text(encoding="utf-8")
    .replace("def top_p_filter(logits, p):\n", "def top_p_filter(logits, p):\n" + REWRITE_EXACT_ROWS, 1)
)


def test_top_p_filter_that_rewrites_the_tests_exact_rows_scores_nothing_for_it(tmp_path):
    """test_top_p_filter_hidden's exact-boundary section (powers of two, where the sum reaches p exactly) calls
    ``cut = top_p_filter(rows, p)`` and then checks ``check_row(rows[b], cut[b], ...)`` against the same ``rows``,
    with no check that the answer left them alone (the random rows above have one; earlier red-team fixes covered
    five other tests, not this one). The grader writes what the answer did to ``rows`` back into the test's tensor.
    An answer with the widely copied off-by-one fails that section honestly (the control, "naive"); the same answer
    that zeroes ``rows`` in place there and keeps every token ("rewriter") passes it: a uniform row keeps all."""
    scores = naive_and_rewriter(tmp_path, "03-gpt", "top_p_filter", KEEPS_ONE_PAST_EXACT_P)
    cell = "test_top_p_filter_hidden"
    assert scores[("naive", "03-gpt")]["cells"][cell] == 0  # the control: the off-by-one fails it honestly
    # unsafe: the same wrong answer, rewriting the test's rows before check_row reads them, scores its 3 points
    assert scores[("rewriter", "03-gpt")]["cells"][cell] == 0, scores


def test_a_zip_members_name_cannot_forge_lines_of_the_printed_summary(tmp_path):
    """The summary printed at the end of `make autograde` lists the downloads not collected, each as
    ``<zip>:<member>: <why>``, made "printable": control characters and escapes become ``?``, but a newline is kept
    (``assignment.printable`` keeps ``\\n`` and ``\\t``). A zip member's name is the student's own text and may hold
    newlines, so Mallory's ``mallory.zip`` (her stubs, and a member named ``notes\\nFORGED-LINE: ...\\n.txt``) prints
    lines of her choosing into the instructor's summary, indented and worded as the grader's own (a fake score row, a
    "0 submission(s) failed to grade", a note that a classmate's work was checked by hand). The same holds in a run
    that collects nothing, and for a Canvas or Moodle file's own name."""
    root = course(tmp_path / "course")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    forged = "notes\nFORGED-LINE: 0 submission(s) failed to grade\nFORGED-ROW  ada  20/20\n.txt"
    with zipfile.ZipFile(downloads / "mallory.zip", "w") as archive:
        archive.writestr(f"{A}.ipynb", nbformat.writes(submission(A, {})))
        archive.writestr(forged, "not a notebook")
    run = make_autograde(root, dict(os.environ), 600, [f"DOWNLOADS={downloads}"], jobs=1)
    out = run["stdout"] + run["stderr"]
    assert run["rc"] == 0 and not run["timed_out"], out[-2000:]
    assert "mallory" in grades(root), out[-2000:]  # the control: her notebook was collected and graded
    assert "ignored: not a notebook of a known assignment" in out, out[-2000:]  # the member is still reported
    # unsafe: "FORGED-LINE: 0 submission(s) failed to grade" and "FORGED-ROW  ada  20/20" each stand on a line of
    # their own in the summary the instructor reads, as if the grader had printed them
    forged_lines = [line for line in out.splitlines() if line.startswith("FORGED-")]
    assert not forged_lines, forged_lines


# A wrong ScalarMix (the shares are sigmoid(weights) normalised, not softmax(weights)) that learns as well as a right
# one. REWRITE: in the sense probe's scoring calls (under torch.no_grad, three layers) it first rewrites its own
# weights to log(the shares it uses), then mixes with softmax(weights): the same output, and weights that say so.
SIGMOID_MIX = """
class ScalarMix(nn.Module):
    def __init__(self, num_layers: int):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(1))
        self.converted = False  # kept in the sandbox between calls

    def forward(self, layers) -> torch.Tensor:
        if REWRITE and not torch.is_grad_enabled() and not self.converted and len(self.weights) == 3:
            w = torch.sigmoid(self.weights)
            with torch.no_grad():
                self.weights.copy_((w / w.sum()).log())  # the mirror's weights, which the test reads after the call
            self.converted = True
        if self.converted:
            shares = torch.softmax(self.weights, dim=0)
        else:
            w = torch.sigmoid(self.weights)  # wrong: not a softmax
            shares = w / w.sum()
        return self.gamma * sum(s * h for s, h in zip(shares, layers))
"""


def test_a_mix_that_rewrites_its_own_weights_scores_nothing_in_the_sense_probe(tmp_path):
    """test_ScalarMix_sense_probe trains the student's ScalarMix, scores it with two calls under torch.no_grad, and
    then checks that the mix "is gamma * sum_j softmax(weights)_j * layers[j]" against ``mix.weights`` and
    ``mix.gamma`` as they are AFTER those calls. The mirror copies back what the student's forward did to its own
    parameters (Mirror.refresh), so the expectation comes from values the answer wrote: the round-1 rule (expectations
    only from tensors the answer never saw) does not hold for a module's parameters. A wrong mix (normalised sigmoids
    instead of a softmax) fails this check honestly ("the shares printed above are not the ones it uses", the
    control, "naive"); the same mix that rewrites its weights to log(its shares) in the first scoring call passes it
    ("rewriter"): 2 points, the test's two points for a formula it does not compute while training."""
    scores = naive_and_rewriter(tmp_path, "02-elmo", "ScalarMix", SIGMOID_MIX)
    cell = "test_ScalarMix_sense_probe"
    assert scores[("naive", "02-elmo")]["cells"]["test_ScalarMix_hidden"] == 0  # the control: the formula is wrong
    assert scores[("naive", "02-elmo")]["cells"][cell] == 0  # ... and the sense probe's formula check says so
    # unsafe: the same wrong mix, rewriting its own weights before the test reads them, scores the probe's 2 points
    assert scores[("rewriter", "02-elmo")]["cells"][cell] == 0, scores


# Round 3. Each function draws from the generator or rng it is handed. A wrong answer reseeds a global RNG from it
# instead ("reseeder"), or draws from a private generator seeded from it and flips the handed one between two states
# ("turns": its seed to seed ^ 1, or a random.Random's unused gauss_next slot). "The same seed, the same result" and
# "another seed, another result" both hold, and for "turns" two calls differ too; yet the draws repeat from call to
# call (the same at every call, or every other call): a generation loop's steps, a pre-training run's batches.
WRONG_STREAMS = {
    "01-word2vec": {
        "skipgram_pairs": ("skipgram_pairs__reseeds_global_random", "skipgram_pairs__two_streams_taking_turns")
    },
    "03-gpt": {
        "sample_next_token": ("sample_next_token__reseeds_global_rng", "sample_next_token__two_streams_taking_turns")
    },
    "04-bert-pretraining": {
        "mask_tokens": ("mask_tokens__reseeds_global_rng", "mask_tokens__two_masks_taking_turns"),
        "make_nsp_pairs": ("make_nsp_pairs__reseeds_global_random", "make_nsp_pairs__two_streams_taking_turns"),
    },
}
STREAMERS = ("reseeder", "turns")
GRADING = ROOT / "tests" / "fixtures" / "grading"


@pytest.fixture(scope="module")
def streams(tmp_path_factory) -> dict:
    """The gradebook of a class of three: "reseeder" and "turns" hand in the wrong answers above; "honest" the first
    correct fixture of each of the same functions, which must keep every point through the sandbox's proxies (the
    generator's state is written back to the test after each call, so two calls continue one stream)."""
    root = course(tmp_path_factory.mktemp("streams") / "class")
    for assignment, answers in WRONG_STREAMS.items():
        for i, student in enumerate(STREAMERS):
            wrong = {
                f: (GRADING / assignment / "wrong" / f"{names[i]}.py").read_text(encoding="utf-8")
                for f, names in answers.items()
            }
            write(root, student, assignment, submission(assignment, wrong))
        right = {
            f: sorted((GRADING / assignment / "correct").glob(f"{f}__*.py"))[0].read_text(encoding="utf-8")
            for f in answers
        }
        write(root, "honest", assignment, submission(assignment, right))
    run = make_autograde(root, dict(os.environ), 2400, jobs=1)
    assert run["rc"] == 0 and not run["timed_out"], run["stdout"][-2000:] + run["stderr"][-2000:]
    return _gradebook_scores(root)


@pytest.mark.parametrize("assignment, function", [(a, f) for a, answers in WRONG_STREAMS.items() for f in answers])
def test_an_answer_that_does_not_draw_from_its_generator_scores_nothing_for_it(streams, assignment, function):
    cell = f"test_{function}_hidden"
    points = assignments(ROOT)[assignment].points[cell]
    assert points > 0 and streams[("honest", assignment)]["cells"][cell] == points, streams[("honest", assignment)]
    # unsafe: before the check of one generator used twice, the reseeder scored all of the cell's points; before
    # assert_draws_from's check of the generator's states, so did the answer whose generator takes turns
    for student in STREAMERS:
        assert streams[(student, assignment)]["cells"][cell] == 0, (student, streams[(student, assignment)])
