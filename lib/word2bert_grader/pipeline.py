"""Release the exercises; autograde a class. This process alone writes what grading produces.

    python -m word2bert_grader release     # exercises/ <- solutions/            (make release)
    python -m word2bert_grader autograde   # submitted/ -> grades.csv, feedback/ (make autograde)

Both run in a course root holding ``nbgrader_config.py`` and ``solutions/`` (this repository, or an
instructor's private copy of it). Each submission is graded by :func:`remote.harness.grade`
in a worker process of its own, on this machine (``--jobs`` at a time) or on a Dask cluster
(``--scheduler``, :mod:`executors`); its student code runs in a sandbox inside that.
The workers return data; this process alone writes the gradebook, ``grades.csv``,
``feedback/<student>/<assignment>/<assignment>.html``, ``autograded/`` and the result cache
``.grading-cache/`` (by the hash of the submission, its source, the settings and the grader's own
code: a re-run grades only what changed, and an interrupted run resumes). A submission that cannot be
graded is scored zero with its reason, and every submission gets exactly one row. The cache is
:mod:`cache`'s; what is written for the instructor, :mod:`outputs.reports`'.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from word2bert_grader import assignment as notebook
from word2bert_grader import executors
from word2bert_grader.cache import cache_key, cached, kept, remember, remember_latest, written_to_regrade
from word2bert_grader.intake import course, deadlines, lms
from word2bert_grader.outputs import gradebook
from word2bert_grader.outputs.feedback import failure_page, with_lateness
from word2bert_grader.outputs.reports import UNSAFE_BANNER, summary, write_grades, write_outputs
from word2bert_grader.outputs.reports import total as total  # re-exported: the tests read it here
from word2bert_grader.sandbox.process import Limits, Unavailable, check_available, printable
from word2bert_grader.task import Result, Settings, Submission


def assignments(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "solutions").iterdir() if p.is_dir() and (p / f"{p.name}.ipynb").exists())


def release(root: Path) -> None:
    """Regenerate ``exercises/`` from ``solutions/`` (the gradebook used is a temporary one)."""
    with tempfile.TemporaryDirectory() as tmp:
        names = assignments(root)
        gradebook.generate(root, names, Path(tmp) / "gb.db")
        for name in names:
            print(f"released exercises/{name}/")


def settings(root: Path, timeout: float | None = None) -> Settings:
    """Time limits and sandbox limits from ``nbgrader_config.py``."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    ours = config.get("SandboxGrader", {})
    limits = Limits(**{k: int(v) for k, v in ours.items() if k in Limits.__dataclass_fields__})
    budgets = {k: float(ours[k]) for k in ("student_seconds", "replay_seconds") if k in ours}
    return Settings(
        timeout=float(timeout or config.Execute.get("timeout", 30)),
        cell_timeouts={k: float(v) for k, v in ours.get("cell_timeouts", {}).items()},
        limits=limits,
        **budgets,
    )


def find_submissions(
    root: Path, names: Collection[str], roster: set[str] | None, refused: list[Result]
) -> list[tuple[str, str, Path]]:
    """(student, assignment, notebook path) under ``submitted/``; what cannot be graded goes to ``refused``."""
    submitted = root / "submitted"
    found = []
    if not submitted.is_dir():
        return found
    for folder in sorted(submitted.iterdir()):
        student = folder.name
        if student.startswith(".") or not folder.is_dir():
            continue  # .ipynb_checkpoints and stray files are nobody's submission
        for a in sorted(p for p in folder.iterdir() if p.name in names):
            if printable(notebook.valid_text(student)) != student:  # no file, page or CSV row could name it
                name = printable(notebook.valid_text(student))
                refused.append(
                    Result.failed(name, a.name, source(root, a.name), "refused: the folder's name is not text")
                )
            elif roster is not None and student not in roster:
                refused.append(Result.failed(student, a.name, source(root, a.name), "refused: not on the roster"))
            elif folder.is_symlink() or a.is_symlink():
                refused.append(Result.failed(student, a.name, source(root, a.name), "refused: the folder is a symlink"))
            else:
                found.append((student, a.name, a / f"{a.name}.ipynb"))
    return found


def _read(path: Path, limit: int = 64 * 2**20) -> bytes | str:
    """The submission's bytes, or why they cannot be read (never following a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return f"no {path.name} in the submission"
    except OSError as error:
        return f"cannot read {path.name} ({error.strerror})"
    with os.fdopen(fd, "rb") as stream:
        data = stream.read(limit + 1)
    return data if len(data) <= limit else f"{path.name} is larger than {limit // 2**20} MB"


@functools.cache
def source(root: Path, assignment: str) -> bytes:
    return (root / "solutions" / assignment / f"{assignment}.ipynb").read_bytes()


def run_all(root: Path, tasks: list[Submission], jobs: int, scheduler: str | None) -> tuple[list[Result], int]:
    """Grade every task (cached results first); returns the results and how many came from the cache."""
    from tqdm.auto import tqdm

    results, todo = [], {}
    keys = {task.key: cache_key(task) for task in tasks}
    for task in tasks:
        key = keys[task.key]
        hit = cached(root, key)
        if hit is not None and hit.key == task.key:
            results.append(hit)
        else:
            todo[task.key] = (key, task)
    reused = len(results)
    remember_latest(root, keys)
    tasks = [task for _, task in todo.values()]
    run = executors.cluster(tasks, scheduler) if scheduler else executors.local(tasks, jobs)
    failures = 0
    with tqdm(total=len(tasks) + reused, initial=reused, desc="autograde", unit="submission", disable=None) as bar:
        for result in run:
            key, task = todo[result.key]
            # from a worker or a cluster: only valid text is kept or written
            result = result.valid() or executors.failed(task, "the grader gave a malformed result")
            if not result.transient:
                remember(root, key, result)
            results.append(result)
            failures += bool(result.failure)
            bar.set_postfix(failed=failures, refresh=False)
            bar.update()
    return results, reused


def autograde(
    root: Path,
    downloads: Path | None = None,
    jobs: int | None = None,
    timeout: float | None = None,
    feedback: bool | Collection[str] = True,
    roster: Path | None = None,
    unsafe: bool = False,
    scheduler: str | None = None,
    lms_name: str | None = None,
    students: Collection[str] | None = None,
    only: Collection[str] | None = None,
) -> list[Result]:
    """Grade every submission under ``root/submitted``; write gradebook, grades.csv, feedback/, autograded/.

    ``feedback``: for every student (True), none (False), or only the students named. ``lms_name``: the format of
    ``downloads`` and ``roster`` ("canvas", "moodle"; default ``course.toml``'s). ``students``, ``only``: grade
    these students' submissions of these assignments (a regrade); the others keep their last results.
    """
    root = root.resolve()
    if unsafe:
        print(UNSAFE_BANNER, file=sys.stderr)
    else:
        try:
            check_available()
        except Unavailable as error:
            sys.exit(f"make autograde: cannot grade safely on this machine.\n{error}")
    names = assignments(root)
    calendar = course.load(root, names).for_lms(lms_name)
    intake = lms.intake(root, names, downloads, roster or calendar.lms.roster, calendar.lms.name, calendar)
    allowed = intake.allowed
    refused: list[Result] = []
    ignored: list[str] = []
    for p in intake.problems:
        if p.student and p.assignment:
            refused.append(Result.failed(p.student, p.assignment, source(root, p.assignment), p.reason))
        else:
            ignored.append(f"{p.source}: {p.reason}")
    todo = find_submissions(root, names, allowed, refused)
    calendar.check_students((allowed or set()) | {s for s, _, _ in todo})
    notes = calendar.problems + intake.notes

    def chosen(student: str, assignment: str) -> bool:
        return (not students or student in students) and (not only or assignment in only)

    others = [t for t in todo if not chosen(*t[:2])]
    todo = [t for t in todo if chosen(*t[:2])]
    graded = {(s, a) for s, a, _ in todo}
    unique = {}
    for r in refused:  # one row per (student, assignment): a submission on disk is graded instead
        if r.key not in graded and chosen(*r.key):
            unique.setdefault(r.key, r)
    refused = list(unique.values())
    if not todo and not refused:
        print(
            f"No submissions found under {root / 'submitted'}/<student>/<assignment>/" + (" to regrade" * bool(others))
        )
        print(printable("\n".join(ignored + notes)))  # names from downloads and rosters: the students' text
        return []
    config = replace(settings(root, timeout), unsafe=unsafe)
    tasks, results, kept_tasks = [], list(refused), []
    for group, into in ((todo, tasks), (others, kept_tasks)):
        for student, assignment, path in group:
            data = _read(path)
            if isinstance(data, str):
                if into is tasks:
                    results.append(Result.failed(student, assignment, source(root, assignment), data))
                continue
            own = replace(config, feedback=feedback if isinstance(feedback, bool) else student in feedback)
            into.append(
                Submission(student, assignment, data, source(root, assignment), _settings_of(own, assignment, root))
            )
    previous, kept_notes = kept(root, kept_tasks)
    notes += kept_notes
    try:
        gradebook.prepare(
            root,
            sorted({t.assignment for t in tasks + kept_tasks} | {r.assignment for r in results}),
            root / "gradebook.db",
        )
    except gradebook.RefusedGradebook as error:
        sys.exit(f"make autograde: {error}")
    graded, reused = run_all(root, tasks, jobs or os.cpu_count() or 1, scheduler)
    results += graded + previous
    late = {}
    for r in results:
        late[r.key] = deadlines.assess(calendar, *r.key, root / "submitted" / r.student / r.assignment)
        if r.failure and not r.feedback and (feedback if isinstance(feedback, bool) else r.student in feedback):
            r.feedback = failure_page(r)
        if r.feedback and late[r.key].due is not None:
            r.feedback = with_lateness(r.feedback, late[r.key], r.score)
    notes += [f"{s}/{a}: late, {x.describe()}" for (s, a), x in sorted(late.items()) if x.due is not None and x.late]
    results = write_outputs(root, results)
    recorded = gradebook.record(root / "gradebook.db", results, written_to_regrade(root, results))
    write_grades(root / "grades.csv", results, late, recorded)
    print(printable(summary(results, unsafe, ignored, reused, notes, recorded)))
    if recorded.reset:
        print(
            f"\ngradebook.db held {recorded.reset} manual score(s) or extra credit on test cells that the grader did "
            "not set: reset, so that the gradebook says what grades.csv says"
        )
    return results


def _settings_of(config: Settings, assignment: str, root: Path) -> Settings:
    """The settings of one assignment's task: only its own cells' time limits, so that a changed limit of
    another assignment regrades nothing of this one (the settings are part of the cache key)."""
    ids = {notebook._nbgrader(c).get("grade_id") for c in notebook.read_cells(source(root, assignment))}
    return replace(config, cell_timeouts={k: v for k, v in config.cell_timeouts.items() if k in ids})
