"""The instructor's pipeline around nbgrader: release the exercises, autograde a class.

    python -m word2bert.grading release     # exercises/ <- solutions/           (make release)
    python -m word2bert.grading autograde   # submitted/ -> grades.csv, feedback/ (make autograde)

Both run in a course root holding ``nbgrader_config.py`` and ``solutions/`` (this repository, or an
instructor's private copy of it). nbgrader's SQLite gradebook is not safe for concurrent writers, so
every submission is graded in a throw-away course directory of its own (a copy of the gradebook,
the source notebooks, the one submission); the scores are then written into the course's
``gradebook.db`` by this one process. A submission that cannot be graded (not JSON, kernel crash,
runaway time) is scored zero with its reason: one bad notebook never stops the batch.

Student kernels import this module for :func:`forbid_library_calls`; nbgrader (a 2 s import) is only
loaded by the pipeline and by the two preprocessors named in ``nbgrader_config.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import html
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def forbid_library_calls(what: str = "your answer"):
    """Fail the enclosing test if any of word2bert's own code runs inside the block.

    Exercises ask students to write what the library already has; an answer that calls (or subclasses)
    the library's counterpart is not the student's own work. A profiler hook sees every Python call,
    however the library function was imported, so this holds for modules that do not exist yet too.
    """
    called = set()

    def profile(frame, event, arg):
        if event == "call":
            filename = frame.f_code.co_filename
            if filename.startswith(_PACKAGE_DIR) and filename != __file__:
                module = os.path.relpath(filename, _PACKAGE_DIR)[: -len(".py")].replace(os.sep, ".")
                called.add(f"word2bert.{module}.{frame.f_code.co_name}")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
    assert not called, (
        f"{what} runs the course library's own code ({', '.join(sorted(called))}); "
        "the exercise is to write it yourself with torch, random and math."
    )


def assert_frequency(count: int, n: int, p: float, what: str, sigmas: float = 6.0) -> None:
    """Assert that ``count`` successes in ``n`` independent trials fit probability ``p``.

    Six standard deviations (plus a little slack for small counts): a correct implementation fails
    with probability about 2e-9, while the mistakes the tests look for are off by far more.
    """
    expected = n * p
    tolerance = sigmas * math.sqrt(n * p * (1 - p)) + 3
    assert abs(count - expected) <= tolerance, (
        f"{what}: expected about {expected:.0f} of {n} ({p:.2%}), found {count} ({count / n:.2%})"
    )


# --- nbgrader preprocessors (named in nbgrader_config.py) ------------------------------------------

HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... output truncated: {len(text):,} characters, the first {limit:,} kept ..."


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _make_preprocessors():
    from nbgrader.preprocessors import Execute as NbgraderExecute
    from nbgrader.preprocessors import LimitOutput as NbgraderLimitOutput
    from nbgrader.preprocessors import NbGraderPreprocessor
    from traitlets import Dict, Integer

    class Execute(NbgraderExecute):
        """nbgrader's Execute, with longer time limits for the cells named in ``cell_timeouts``.

        One limit cannot serve both a cell that trains a model (seconds on a laptop, many times that on a
        loaded grading machine) and a student's infinite loop (every second of it is wasted). Cells are
        named by grade id, which nbgrader checks against the gradebook, so a student cannot take a limit
        meant for another cell.
        """

        cell_timeouts = Dict(value_trait=Integer(), help="grade id -> time limit in s, instead of `timeout`"
                             ).tag(config=True)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.timeout_func = lambda cell: self.cell_timeouts.get(_grade_id(cell), self.timeout)

    class LimitOutput(NbgraderLimitOutput):
        """nbgrader's line limit, plus a character limit per output (one huge line is one line)."""

        max_chars = Integer(20_000, help="maximum characters kept per output").tag(config=True)

        def preprocess_cell(self, cell, resources, cell_index):
            before = _output_chars(cell)
            cell, resources = super().preprocess_cell(cell, resources, cell_index)
            if cell.cell_type == "code":
                for output in cell.outputs:
                    if output.output_type == "stream":
                        output.text = _truncate(output.text, self.max_chars)
                    elif output.output_type in ("execute_result", "display_data"):
                        for mime, value in output.get("data", {}).items():
                            if isinstance(value, str):
                                output.data[mime] = _truncate(value, self.max_chars)
                    elif output.output_type == "error":
                        output.evalue = _truncate(output.evalue, self.max_chars)
                        output.traceback = [_truncate(line, self.max_chars) for line in output.traceback]
                if _output_chars(cell) < before:
                    cell.metadata["word2bert"] = {"output_truncated_chars": before}
            return cell, resources

    class HideHiddenTests(NbGraderPreprocessor):
        """For feedback: drop hidden test source, and reduce their errors to the assert's message.

        A traceback quotes the failing line of the test, which would reveal the hidden test; the
        exception's name and message (written for the student) are kept.
        """

        def preprocess_cell(self, cell, resources, cell_index):
            if cell.cell_type != "code" or HIDDEN_BEGIN not in cell.source:
                return cell, resources
            cell.source = _without_hidden_tests(cell.source) + "\n# (hidden tests were run here)"
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}",
                                        "(the traceback of hidden tests is not shown)"]
            return cell, resources

    return {"Execute": Execute, "LimitOutput": LimitOutput, "HideHiddenTests": HideHiddenTests}


def _output_chars(cell) -> int:
    total = 0
    for output in cell.get("outputs", []):
        total += len(output.get("text", "")) + len(output.get("evalue", ""))
        total += sum(len(line) for line in output.get("traceback", []))
        total += sum(len(v) for v in output.get("data", {}).values() if isinstance(v, str))
    return total


_lazy = {}


def __getattr__(name):
    # Lazy so that student kernels importing forbid_library_calls do not import nbgrader.
    if name in ("Execute", "LimitOutput", "HideHiddenTests"):
        if not _lazy:
            _lazy.update(_make_preprocessors())
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- running nbgrader -----------------------------------------------------------------------------

def _nbgrader(root: Path, *args: str) -> subprocess.CompletedProcess:
    """One nbgrader command in course root ``root`` (its nbgrader_config.py applies)."""
    return subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}"], cwd=root,
                          stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)


def assignments(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "solutions").iterdir()
                  if p.is_dir() and (p / f"{p.name}.ipynb").exists())


def _api(root: Path, db: Path, release_directory: Path | None = None):
    """nbgrader's Python API on course ``root`` (its nbgrader_config.py applies), gradebook ``db``."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{db}"
    if release_directory is not None:
        config.CourseDirectory.release_directory = str(release_directory)
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def _generate(root: Path, names: list[str], db: Path, release_directory: Path | None = None) -> None:
    """``nbgrader generate_assignment`` of every name, in this process (one start-up for all)."""
    api = _api(root, db, release_directory)
    for name in names:
        outcome = api.generate_assignment(name, force=True, create=True)
        if not outcome["success"]:
            sys.exit(f"nbgrader generate_assignment {name} failed:\n{outcome.get('log', '')}"
                     f"{outcome.get('error', '')}")


def release(root: Path) -> None:
    """Regenerate ``exercises/`` from ``solutions/`` (the gradebook used is a temporary one)."""
    with tempfile.TemporaryDirectory() as tmp:
        names = assignments(root)
        _generate(root, names, Path(tmp) / "gb.db")
        for name in names:
            print(f"released exercises/{name}/")


# --- autograding ----------------------------------------------------------------------------------

@dataclass
class Result:
    student: str
    assignment: str
    score: float = 0.0
    max_score: float = 0.0
    cells: dict[str, float] = field(default_factory=dict)  # grade cell id -> points earned
    failed: str = ""  # why the submission could not be graded ("" if it was)
    notes: list[str] = field(default_factory=list)  # what went wrong but was handled
    seconds: float = 0.0  # wall-clock time to grade it (and write its feedback)


def collect_downloads(root: Path, downloads: Path) -> None:
    """Move LMS downloads (files or zips, `zip_collect` naming) into ``submitted/`` via nbgrader."""
    for name in assignments(root):
        archive = root / "downloaded" / name / "archive"
        shutil.rmtree(archive.parent, ignore_errors=True)
        shutil.copytree(downloads, archive)
        _nbgrader(root, "zip_collect", name, "--force")


def find_submissions(root: Path) -> list[tuple[str, str]]:
    known = set(assignments(root))
    submitted = root / "submitted"
    if not submitted.is_dir():
        return []
    return sorted((s.name, a.name) for s in submitted.iterdir() if s.is_dir()
                  for a in s.iterdir() if a.is_dir() and a.name in known)


def _without_hidden_tests(source: str) -> str:
    kept, hidden = [], False
    for line in source.split("\n"):
        if HIDDEN_BEGIN in line:
            hidden = True
        elif HIDDEN_END in line:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


def _grade_cells(nb) -> dict[str, str]:
    """Test cells by id, as the student sees them (a solutions notebook compares equal to its release)."""
    return {_grade_id(c): _without_hidden_tests(c.source).strip() for c in nb.cells
            if c.get("metadata", {}).get("nbgrader", {}).get("grade")}


def _precheck(path: Path, release_nb, result: Result) -> object | None:
    """Read the submission (a copy: it may be repaired in place); note what the student changed in
    the tests. None if it cannot be read."""
    import nbformat

    try:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
    except (OSError, ValueError, KeyError, AttributeError, TypeError, nbformat.ValidationError) as error:
        result.failed = f"not a valid notebook ({type(error).__name__}: {str(error)[:200]})"
        return None
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in nb.cells]
    duplicated = sorted({i for i in ids if i and ids.count(i) > 1})
    if duplicated:
        # nbgrader's own de-duplication leaves cells it then trips over: make the earlier copies
        # plain cells ourselves (the last copy is the one graded, as nbgrader intends).
        for index, cell_id in enumerate(ids):
            if cell_id in duplicated and cell_id in ids[index + 1:]:
                del nb.cells[index].metadata["nbgrader"]
        nbformat.write(nb, str(path))
        result.notes.append(f"duplicated cells {', '.join(duplicated)}: only the last copy was graded")
    expected, found = _grade_cells(release_nb), _grade_cells(nb)
    missing = sorted(set(expected) - set(found))
    edited = sorted(k for k in set(expected) & set(found) if expected[k] != found[k])
    if missing:
        result.notes.append(f"deleted test cells {', '.join(missing)}: restored from the source")
    if edited:
        result.notes.append(f"edited test cells {', '.join(edited)}: restored from the source")
    return nb


def _failure_reason(log: str, timeout: float) -> str:
    if "DeadKernelError" in log or "Kernel died" in log:
        return "the kernel crashed (os._exit, a segfault, or out of memory)"
    if "UnresponsiveKernelError" in log:
        return f"the kernel stopped responding and could not be interrupted after {timeout:g} s"
    lines = [line for line in log.splitlines() if "[ERROR]" in line or "Error" in line]
    return "nbgrader failed: " + (lines[0][:300] if lines else "see its log")


def grade_one(root: Path, student: str, assignment: str, template_db: Path, out: Path,
              timeout: float, feedback: bool = True, cell_timeouts: dict[str, float] | None = None) -> Result:
    """Grade one submission in its own course directory under ``out``; copy results into ``root``.

    ``timeout`` is the time limit per cell, ``cell_timeouts`` the longer ones of named cells (by grade id).
    """
    import nbformat
    from nbgrader.api import Gradebook

    start = time.perf_counter()
    cell_timeouts = cell_timeouts or {}
    result = Result(student, assignment)
    release_nb = nbformat.read(str(root / "exercises" / assignment / f"{assignment}.ipynb"),
                               as_version=4)
    submission = root / "submitted" / student / assignment
    notebook = submission / f"{assignment}.ipynb"
    course = out / f"{student}--{assignment}"
    shutil.rmtree(course, ignore_errors=True)
    (course / "solutions").mkdir(parents=True)
    shutil.copytree(root / "solutions" / assignment, course / "solutions" / assignment)
    shutil.copytree(root / "exercises" / assignment, course / "exercises" / assignment)
    config = (root / "nbgrader_config.py").read_text(encoding="utf-8")
    (course / "nbgrader_config.py").write_text(f"{config}\nc.Execute.timeout = {max(1, round(timeout))}\n",
                                               encoding="utf-8")
    db = course / "gradebook.db"
    shutil.copy(template_db, db)
    target = course / "submitted" / student / assignment
    shutil.copytree(submission, target)

    if not notebook.exists():
        result.notes.append(f"no {assignment}.ipynb in the submission")
    elif _precheck(target / notebook.name, release_nb, result) is None:
        (target / notebook.name).unlink()  # graded as a missing notebook: zero, never a missing row

    log = course / "nbgrader.log"
    # A backstop: cells are interrupted long before.
    limit = 60 + 2 * sum(cell_timeouts.get(_grade_id(c), timeout) for c in release_nb.cells)
    try:
        with open(log, "w", encoding="utf-8") as stream:
            subprocess.run([sys.executable, "-m", "word2bert.grading", "_worker", str(course), assignment,
                            student, *(["--feedback"] if feedback else [])],
                           cwd=course, stdout=stream, stderr=subprocess.STDOUT, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        result.failed = f"grading took longer than {limit:g} s in all"
    graded = course / "autograded" / student / assignment / f"{assignment}.ipynb"
    log_text = log.read_text(encoding="utf-8", errors="replace")
    if not graded.exists() and notebook.exists() and not result.failed:
        result.failed = _failure_reason(log_text, timeout)

    with Gradebook(f"sqlite:///{db}", "word2bert") as gb:
        for nb in gb.find_assignment(assignment).notebooks:
            for cell in nb.grade_cells:
                result.cells[cell.name] = 0.0
                result.max_score += cell.max_score
        if graded.exists() and not result.failed:
            for grade in gb.find_submission(assignment, student).notebooks[0].grades:
                result.cells[grade.name] = grade.score or 0.0

    if graded.exists() and not result.failed:
        _notes_from_outputs(nbformat.read(str(graded), as_version=4), timeout, cell_timeouts, result)
    else:
        result.cells = dict.fromkeys(result.cells, 0.0)
    result.score = sum(result.cells.values())

    for step in ("autograded", "feedback"):
        src, dst = course / step / student / assignment, root / step / student / assignment
        shutil.rmtree(dst, ignore_errors=True)
        if src.exists():
            shutil.copytree(src, dst)
    if result.failed and feedback:
        _failure_feedback(root / "feedback" / student / assignment / f"{assignment}.html", result)
    result.seconds = time.perf_counter() - start
    return result


def _worker(course: Path, assignment: str, student: str, feedback: bool) -> None:
    """nbgrader autograde (and generate_feedback) of one submission, in one process (one start-up)."""
    api = _api(course, course / "gradebook.db")
    steps = [api.autograde] + ([api.generate_feedback] if feedback else [])
    for step in steps:
        outcome = step(assignment, student)
        print(outcome.get("log", ""), outcome.get("error", ""), flush=True)
        if not outcome["success"]:
            break


def _notes_from_outputs(nb, timeout: float, cell_timeouts: dict[str, float], result: Result) -> None:
    for index, cell in enumerate(nb.cells):
        cell_id = _grade_id(cell) or f"#{index}"
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and output.get("ename") == "CellTimeoutError":
                limit = cell_timeouts.get(cell_id, timeout)
                result.notes.append(f"cell {cell_id} ran past the {limit:g} s limit (an infinite loop?)")
        chars = cell.get("metadata", {}).get("word2bert", {}).get("output_truncated_chars")
        if chars:
            result.notes.append(f"cell {cell_id} printed {chars:,} characters: output truncated")


def _failure_feedback(path: Path, result: Result) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"<html><body><h1>{html.escape(result.assignment)}: not graded</h1>"
        f"<p>Your submission could not be graded: {html.escape(result.failed)}.</p>"
        f"<p>Score: 0 / {result.max_score:g}.</p></body></html>", encoding="utf-8")


def _register(root: Path, names: list[str], db: Path, scratch: Path) -> None:
    """Put the assignments (notebooks, cells, hidden tests) into gradebook ``db``; exercises/ untouched."""
    _generate(root, names, db, scratch / "release")


def _record(db: Path, results: list[Result]) -> None:
    """Write every result into the course gradebook, from this one process."""
    import warnings

    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}", "word2bert") as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes from inside nbgrader's API
        for r in results:
            gb.update_or_create_student(r.student)
            submission = gb.update_or_create_submission(r.assignment, r.student)
            for nb in submission.notebooks:
                for grade in nb.grades:
                    grade.auto_score = r.cells.get(grade.name, 0.0)
                    grade.needs_manual_grade = False
            gb.db.commit()


def write_grades(path: Path, results: list[Result]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["student", "assignment", "score", "max_score", "status", "reason"])
        for r in sorted(results, key=lambda r: (r.student, r.assignment)):
            writer.writerow([r.student, r.assignment, f"{r.score:g}", f"{r.max_score:g}",
                             "failed" if r.failed else "graded", r.failed or "; ".join(r.notes)])


def summary(results: list[Result]) -> str:
    names = sorted({r.assignment for r in results})
    by = {(r.student, r.assignment): r for r in results}
    students = sorted({r.student for r in results})
    width = max([len("student"), *map(len, students)])
    lines = ["  ".join([f"{'student':<{width}}", *(f"{n:>20}" for n in names)])]
    for s in students:
        cells = [f"{by[s, n].score:g}/{by[s, n].max_score:g}" if (s, n) in by else "-" for n in names]
        lines.append("  ".join([f"{s:<{width}}", *(f"{c:>20}" for c in cells)]))
    failed = [r for r in results if r.failed]
    noted = [r for r in results if r.notes and not r.failed]
    if failed:
        lines += ["", f"{len(failed)} submission(s) failed to grade (scored 0):"]
        lines += [f"  {r.student}/{r.assignment}: {r.failed}" for r in failed]
    if noted:
        lines += ["", "Handled while grading:"]
        lines += [f"  {r.student}/{r.assignment}: {'; '.join(r.notes)}" for r in noted]
    by_time = {n: sorted(r.seconds for r in results if r.assignment == n) for n in names}
    lines += ["", "Seconds per submission (median, slowest): " + ", ".join(
        f"{n} {t[len(t) // 2]:.0f}, {t[-1]:.0f}" for n, t in by_time.items())]
    return "\n".join(lines)


def autograde(root: Path, downloads: Path | None = None, jobs: int | None = None,
              timeout: float | None = None, feedback: bool | Collection[str] = True) -> list[Result]:
    """Grade every submission under ``root/submitted``; write gradebook, grades.csv and feedback/.

    ``feedback``: for every student (True), none (False), or only the students named.
    """
    from tqdm.auto import tqdm

    root = root.resolve()
    if downloads is not None:
        collect_downloads(root, downloads.resolve())
    todo = find_submissions(root)
    if not todo:
        print(f"No submissions found under {root / 'submitted'}/<student>/<assignment>/")
        return []
    jobs = jobs or os.cpu_count() or 1
    configured, cell_timeouts = _configured_timeouts(root)
    timeout = timeout or configured
    with tempfile.TemporaryDirectory(prefix="word2bert-grading-") as tmp:
        out = Path(tmp)
        db = root / "gradebook.db"
        _register(root, sorted({a for _, a in todo}), db, out)
        template = out / "template.db"
        shutil.copy(db, template)
        results = []
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(grade_one, root, s, a, template, out, timeout,
                                   feedback if isinstance(feedback, bool) else s in feedback, cell_timeouts)
                       for s, a in todo]
            for future in tqdm(as_completed(futures), total=len(futures), desc="autograde",
                               unit="submission"):
                results.append(future.result())
    _record(db, results)
    write_grades(root / "grades.csv", results)
    print(summary(results))
    return results


def _configured_timeouts(root: Path) -> tuple[float, dict[str, float]]:
    """The per-cell time limit, and the longer ones of named cells (``Execute.cell_timeouts``)."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    return float(config.Execute.get("timeout", 30)), dict(config.Execute.get("cell_timeouts", {}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m word2bert.grading", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path.cwd(),
                        help="course root holding nbgrader_config.py and solutions/ (default: .)")
    commands = parser.add_subparsers(dest="command", required=True)
    worker = commands.add_parser("_worker")  # internal: one submission, in its own course folder
    worker.add_argument("course", type=Path)
    worker.add_argument("assignment")
    worker.add_argument("student")
    worker.add_argument("--feedback", action="store_true")
    commands.add_parser("release", help="regenerate exercises/ from solutions/")
    grade = commands.add_parser("autograde", help="grade everything under submitted/")
    grade.add_argument("--downloads", type=Path, help="folder of LMS downloads (zip_collect naming)")
    grade.add_argument("--jobs", type=int, help="submissions graded at once (default: CPU count)")
    grade.add_argument("--timeout", type=float, help="per-cell time limit in s (default: the config's)")
    grade.add_argument("--no-feedback", action="store_true", help="skip the HTML feedback")
    grade.add_argument("--feedback-for", nargs="+", metavar="STUDENT",
                       help="write the HTML feedback of these students only")
    args = parser.parse_args(argv)
    if args.command == "_worker":
        _worker(args.course, args.assignment, args.student, args.feedback)
    elif args.command == "release":
        release(args.root.resolve())
    else:
        feedback = False if args.no_feedback else set(args.feedback_for) if args.feedback_for else True
        results = autograde(args.root, args.downloads, args.jobs, args.timeout, feedback)
        print(json.dumps({"submissions": len(results),
                          "failed": sum(bool(r.failed) for r in results)}))


if __name__ == "__main__":
    main()
