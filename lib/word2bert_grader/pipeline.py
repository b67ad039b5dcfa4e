"""Release the exercises; autograde a class. This process alone writes what grading produces.

    python -m word2bert_grader release     # exercises/ <- solutions/            (make release)
    python -m word2bert_grader autograde   # submitted/ -> grades.csv, feedback/ (make autograde)

Both run in a course root holding ``nbgrader_config.py`` and ``solutions/`` (this repository, or an
instructor's private copy of it). Each submission is graded by :func:`word2bert_grader.harness.grade`
in a worker process of its own, on this machine (``--jobs`` at a time) or on a Dask cluster
(``--scheduler``, :mod:`word2bert_grader.executors`); its student code runs in a sandbox inside that.
The workers return data; this process alone writes the gradebook, ``grades.csv``,
``feedback/<student>/<assignment>/<assignment>.html``, ``autograded/`` and the result cache
``.grading-cache/`` (by the hash of the submission, its source, the settings and the grader's own
code: a re-run grades only what changed, and an interrupted run resumes). A submission that cannot be
graded is scored zero with its reason, and every submission gets exactly one row.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

import word2bert
import word2bert_grader
from word2bert_grader import course, deadlines, executors, gradebook, lms, notebook
from word2bert_grader.feedback import failure_page, with_lateness
from word2bert_grader.gradebook import Recorded
from word2bert_grader.sandbox import Limits, Unavailable, check_available, printable
from word2bert_grader.task import Result, Settings, Submission

CACHE = ".grading-cache"
UNSAFE_BANNER = (
    "WARNING: --unsafe-no-sandbox: student code ran WITHOUT confinement, as this user, with "
    "network, files and processes in reach. Scores still come from the grader's own process, "
    "but these grades are not safe to put on a transcript."
)


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


# The modules that decide a result (the worker's code): editing the pipeline, the LMS formats or the reports
# regrades nothing.
GRADING_MODULES = (
    *("harness", "task", "notebook", "feedback", "proxy", "mirror", "wire"),
    *("sandbox", "bwrap", "seccomp", "cgroups", "launch", "runner"),
)


@functools.cache
def grader_version(assignment: str = "", source_bytes: bytes = b"") -> str:
    """A hash of the code that decides a grade of ``assignment``: the grader's grading modules, the modules of
    the course library that its source notebook imports (and what they import), and the checkpoints. A change
    to one library module regrades only the assignments whose tests use it."""
    digest = hashlib.sha256()
    folder = Path(word2bert_grader.__file__).parent
    for name in GRADING_MODULES:
        digest.update(name.encode() + (folder / f"{name}.py").read_bytes())
    library = Path(word2bert.__file__).parent
    for path in sorted(_library_files(library, source_bytes)):
        digest.update(str(path.relative_to(library)).encode() + path.read_bytes())
    return digest.hexdigest()


def _library_files(library: Path, source_bytes: bytes) -> set[Path]:
    """The library's files a source notebook depends on: the modules it imports, transitively, their packages'
    ``__init__``, and every checkpoint (weights are loaded by name at run time). Without a readable source: all."""
    import ast

    everything = {p for p in library.rglob("*") if p.suffix in (".py", ".safetensors", ".json")}
    everything = {p for p in everything if "__pycache__" not in p.parts}
    try:
        todo = [("\n".join(notebook._text(c.get("source")) for c in notebook.read_cells(source_bytes)), [])]
    except (UnicodeDecodeError, ValueError, RecursionError):
        return everything
    seen = {p for p in everything if p.suffix != ".py"} | {library / "__init__.py"}
    while todo:
        text, package = todo.pop()  # package: the importing module's package, as parts ("word2bert", "data")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                stem = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join(stem + ([node.module] if node.module else []))
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] != "word2bert":
                    continue
                for k in range(2, len(parts) + 1):
                    base = library.joinpath(*parts[1:k])
                    for path, inside in ((base.with_suffix(".py"), parts[: k - 1]), (base / "__init__.py", parts[:k])):
                        if path.is_file() and path not in seen:
                            seen.add(path)
                            todo.append((path.read_text(encoding="utf-8"), inside))
    return seen


def cache_key(task: Submission) -> str:
    digest = hashlib.sha256(grader_version(task.assignment, task.source).encode())
    for part in (
        task.student.encode(),
        task.assignment.encode(),
        task.notebook,
        task.source,
        json.dumps(task.settings.to_dict(), sort_keys=True).encode(),
    ):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def cached(root: Path, key: str) -> Result | None:
    """The cached result under ``key``; None where there is none, or what is there is not a result."""
    try:
        return Result.from_json(json.loads((root / CACHE / f"{key}.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def remember(root: Path, key: str, result: Result) -> None:
    folder = root / CACHE
    folder.mkdir(exist_ok=True)
    tmp = folder / f"{key}.tmp"
    tmp.write_text(json.dumps(result.to_json()), encoding="utf-8")
    os.replace(tmp, folder / f"{key}.json")


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
    _remember_latest(root, keys)
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


def _remember_latest(root: Path, keys: dict[tuple[str, str], str]) -> None:
    """Which cached result is each submission's latest: what a regrade of others keeps (:func:`latest`)."""
    path = root / CACHE / "latest.json"
    known = latest(root)
    known.update({f"{s}/{a}": key for (s, a), key in keys.items()})
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def latest(root: Path) -> dict[str, str]:
    try:
        known = json.loads((root / CACHE / "latest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in known.items() if isinstance(v, str) and v.isalnum()} if isinstance(known, dict) else {}


def kept(root: Path, tasks: list[Submission]) -> tuple[list[Result], list[str]]:
    """The results of submissions outside a regrade (STUDENTS=, ASSIGNMENTS=): unchanged ones from the cache,
    changed ones as they were last graded (said so); those never graded are left out (said so too)."""
    known, results, notes = latest(root), [], []
    for task in tasks:
        name = f"{task.student}/{task.assignment}"
        hit = cached(root, cache_key(task))
        if hit is None and name in known:
            hit = cached(root, known[name])
            if hit is not None:
                notes.append(f"{name}: changed since it was graded, kept as graded then (not in this regrade)")
        if hit is not None and hit.key == task.key:
            results.append(hit)
        else:
            notes.append(f"{name}: never graded, and not in this regrade: no row")
    return results, notes


def write_outputs(root: Path, results: list[Result]) -> list[Result]:
    """Feedback pages and graded notebooks, written here only (and nothing else into feedback/). A result whose
    files cannot be written becomes that submission's failed row, with the reason; the others are written."""
    written = []
    for r in results:
        try:
            _write_files(root, r)
        except (OSError, UnicodeError, ValueError) as error:
            reason = f"its feedback could not be written ({type(error).__name__}: {str(error)[:200]})"
            r = replace(r, cells=dict.fromkeys(r.cells, 0.0), score=0.0, failure=reason, autograded="")
            r.feedback = failure_page(r)
            _write_files(root, replace(r, feedback=""))  # nothing half-written is left behind
        written.append(r)
    return written


def _write_files(root: Path, r: Result) -> None:
    for step, name, text in (
        ("feedback", f"{r.assignment}.html", r.feedback),
        ("autograded", f"{r.assignment}.ipynb", r.autograded),
    ):
        folder = root / step / r.student / r.assignment
        if folder.is_symlink():
            folder.unlink()
        shutil.rmtree(folder, ignore_errors=True)
        if text:
            folder.mkdir(parents=True)
            (folder / name).write_text(text, encoding="utf-8")


def written_to_regrade(root: Path, results: list[Result]) -> set[tuple[str, str, str]]:
    """The written answers whose text this grader has not recorded before: changed since the last run, or new.
    A hand score can only be for a text the grader had recorded before it was given, so theirs is void (a score
    planted in a fresh gradebook does not count either). Records each answer's hash for the next run; only this
    process reads and writes the record."""
    path = root / CACHE / "written-answers.json"
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        before = {}
    now, changed = dict(before), set()
    for r in results:
        for gid, text in r.answers.items():
            key = "/".join((r.student, r.assignment, gid))
            now[key] = hashlib.sha256(text.strip().encode()).hexdigest()
            if before.get(key) != now[key]:
                changed.add((r.student, r.assignment, gid))
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(now, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return changed


def total(r: Result, recorded: Recorded | None = None) -> tuple[float, float, float]:
    """(score, max_score, points of written answers not graded yet): the grader's tests and the hand-graded
    answers together, with the instructor's scores that ``gradebook.record`` found."""
    manual = recorded.manual.get(r.key, {}) if recorded else {}
    given = sum(score for score in manual.values() if score is not None)
    waiting = sum(p for gid, p in r.written.items() if manual.get(gid) is None)
    return r.score + given, r.max_score + sum(r.written.values()), 0.0 if r.failure else waiting


def write_grades(path: Path, results: list[Result], late: dict | None = None, recorded: Recorded | None = None) -> None:
    """One row per submission: the score before and after the late penalty (``late``: (student, assignment) ->
    :class:`~word2bert_grader.deadlines.Lateness`), what failed or was handled, what waits for a hand grade
    (``recorded``: the hand scores in the gradebook)."""
    late = late or {}
    with open(path, "w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(
            [
                "student",
                "assignment",
                "raw_score",
                "late_penalty",
                "score",
                "max_score",
                "status",
                "reason",
                "to_grade_by_hand",
                "late",
            ]
        )
        for r in sorted(results, key=lambda r: r.key):
            score, max_score, waiting = total(r, recorded)
            lateness = late.get(r.key)
            penalty = lateness.penalty(score) if lateness else 0.0
            writer.writerow(
                [
                    r.student,
                    r.assignment,
                    f"{score:g}",
                    f"{penalty:g}",
                    f"{score - penalty:g}",
                    f"{max_score:g}",
                    "failed" if r.failure else "graded",
                    printable(r.failure or "; ".join(r.notes)),
                    f"{waiting:g}",
                    lateness.describe() if lateness else "",
                ]
            )


def summary(
    results: list[Result],
    unsafe: bool,
    ignored: list[str],
    reused: int = 0,
    notes: list[str] = (),
    recorded: Recorded | None = None,
) -> str:
    names = sorted({r.assignment for r in results})
    by = {r.key: r for r in results}
    students = sorted({r.student for r in results})
    width = max([len("student"), *map(len, students)])
    lines = [UNSAFE_BANNER, ""] if unsafe else []
    lines.append("  ".join([f"{'student':<{width}}", *(f"{n:>20}" for n in names)]))
    for s in students:
        cells = ["{:g}/{:g}".format(*total(by[s, n], recorded)[:2]) if (s, n) in by else "-" for n in names]
        lines.append("  ".join([f"{s:<{width}}", *(f"{c:>20}" for c in cells)]))
    failed = [r for r in results if r.failure]
    tampered = [r for r in results if r.tampering]
    noted = [r for r in results if r.notes and not r.failure]
    if failed:
        lines += ["", f"{len(failed)} submission(s) failed to grade (scored 0):"]
        lines += [f"  {r.student}/{r.assignment}: {r.failure}" for r in failed]
    if tampered:
        lines += ["", "Tampering suspected (the student's kernel passed tests that the grader failed):"]
        lines += [f"  {r.student}/{r.assignment}: {'; '.join(r.tampering)}" for r in tampered]
    if noted:
        lines += ["", "Handled while grading:"]
        lines += [f"  {r.student}/{r.assignment}: {'; '.join(r.notes)}" for r in noted]
    if ignored:
        lines += ["", "Downloads not collected:"] + [f"  {line}" for line in ignored]
    if reused:
        lines += ["", f"{reused} submission(s) unchanged since an earlier run: their results were reused"]
    if notes:
        lines += ["", "Course, roster, regrade and late submissions:"] + [f"  {line}" for line in notes]
    waiting = [(r, total(r, recorded)[2]) for r in results if total(r, recorded)[2]]
    if waiting:
        lines += [
            "",
            f"Written answers to grade by hand in formgrader (Manual Grading), then run again: "
            f"{len(waiting)} submission(s), {sum(w for _, w in waiting):g} points in all",
        ]
    timed = {n: sorted(r.seconds for r in results if r.assignment == n and r.seconds) for n in names}
    lines += [
        "",
        "Seconds per submission (median, slowest): "
        + ", ".join(f"{n} {t[len(t) // 2]:.1f}, {t[-1]:.1f}" for n, t in timed.items() if t),
    ]
    if unsafe:
        lines += ["", UNSAFE_BANNER]
    return "\n".join(lines)


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
    calendar = course.load(root, names)
    intake = lms.intake(root, names, downloads, roster or calendar.lms.roster, lms_name or calendar.lms.name, calendar)
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
        print("\n".join(ignored + notes))
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
    gradebook.prepare(
        root,
        sorted({t.assignment for t in tasks + kept_tasks} | {r.assignment for r in results}),
        root / "gradebook.db",
    )
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
