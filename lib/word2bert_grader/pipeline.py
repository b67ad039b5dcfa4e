"""Release the exercises; autograde a class (:func:`autograde`). This process alone writes what grading produces:
the gradebook, ``grades.csv``, ``feedback/``, ``autograded/`` and the cache; every submission gets exactly one row."""

import os
import sys
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from word2bert_grader import cache, executors
from word2bert_grader.assignment import assignments, printable
from word2bert_grader.intake import course, deadlines, lms, submissions
from word2bert_grader.outputs import gradebook, reports
from word2bert_grader.outputs.feedback import failure_page, with_lateness
from word2bert_grader.sandbox.bwrap import Limits, Unavailable
from word2bert_grader.sandbox.process import check_available
from word2bert_grader.task import Result, Settings, Submission


@dataclass(frozen=True)
class AutogradeRequest:
    """What ``make autograde`` was asked to do (the command's options)."""

    root: Path
    downloads: Path | None = None  # a folder of downloads from a learning platform
    jobs: int | None = None  # submissions graded at once on this machine (default: its CPUs)
    timeout: float | None = None  # per-cell time limit (default: nbgrader_config.py's)
    feedback: bool | Collection[str] = True  # pages for every student, none, or the students named
    roster: Path | None = None
    unsafe: bool = False  # no sandbox (--unsafe-no-sandbox)
    scheduler: str | None = None  # a Dask scheduler's address
    lms: str | None = None  # the format of downloads and roster ("canvas", "moodle"; default course.toml's)
    students: Collection[str] | None = None  # a regrade of these students' submissions ...
    assignments: Collection[str] | None = None  # ... of these assignments; the others keep their last results

    def chosen(self, student: str, assignment: str) -> bool:
        students, names = self.students, self.assignments
        return (not students or student in students) and (not names or assignment in names)

    def feedback_for(self, student: str) -> bool:
        return self.feedback if isinstance(self.feedback, bool) else student in self.feedback


def release(root: Path) -> None:
    """Regenerate ``exercises/`` from ``solutions/`` (the gradebook used is a temporary one)."""
    with tempfile.TemporaryDirectory() as tmp:
        names = list(assignments(root))
        gradebook.generate(root, names, Path(tmp) / "gb.db")
        for name in names:
            print(f"released exercises/{name}/")


def settings(root: Path, timeout: float | None = None) -> Settings:
    """Time limits and sandbox limits from ``nbgrader_config.py``."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    ours = dict(config.get("SandboxGrader", {}))
    limits = Limits(**{k: int(ours.pop(k)) for k in list(ours) if k in Limits.__dataclass_fields__})
    ours = {k: v for k, v in ours.items() if k in Settings.model_fields}
    return Settings(timeout=float(timeout or config.Execute.get("timeout", 30)), limits=limits, **ours)


def run_all(root: Path, tasks: list[Submission], jobs: int, scheduler: str | None) -> tuple[list[Result], int]:
    """Grade every task (cached results first); returns the results and how many came from the cache."""
    from tqdm.auto import tqdm

    keys = {task.key: cache.cache_key(task) for task in tasks}
    hits = {task.key: cache.cached(root, keys[task.key]) for task in tasks}
    results = [hit for key, hit in hits.items() if hit is not None and hit.key == key]
    todo = {task.key: task for task in tasks if hits[task.key] is None or hits[task.key].key != task.key}
    reused, tasks, failures = len(results), list(todo.values()), 0
    cache.remember_latest(root, keys)
    run = executors.cluster(tasks, scheduler) if scheduler else executors.local(tasks, jobs)
    with tqdm(total=len(tasks) + reused, initial=reused, desc="autograde", unit="submission", disable=None) as bar:
        for result in run:
            task = todo[result.key]
            # from a worker or a cluster: only valid text is kept or written
            result = result.valid() or executors.failed(task, "the grader gave a malformed result")
            if not result.transient:
                cache.remember(root, keys[task.key], result)
            results.append(result)
            failures += bool(result.failure)
            bar.set_postfix(failed=failures, refresh=False)
            bar.update()
    return results, reused


def autograde(request: AutogradeRequest) -> list[Result]:
    """Grade every submission under ``root/submitted``; write gradebook, grades.csv, feedback/, autograded/."""
    root = request.root.resolve()
    if request.unsafe:
        print(reports.UNSAFE_BANNER, file=sys.stderr)
    else:
        try:
            check_available()
        except Unavailable as error:
            sys.exit(f"make autograde: cannot grade safely on this machine.\n{error}")
    sources = assignments(root)
    calendar = course.load(root, list(sources)).for_lms(request.lms)
    roster = request.roster or calendar.lms.roster
    intake = lms.intake(root, list(sources), request.downloads, roster, calendar.lms.name, calendar)
    refused: dict[tuple[str, str], Result] = {}
    turned_away = [(p.student, p.assignment, p.reason) for p in intake.problems if p.student and p.assignment]
    ignored = [f"{p.source}: {p.reason}" for p in intake.problems if not (p.student and p.assignment)]
    found, on_disk = submissions.find(root, sources, intake.allowed)
    turned_away += on_disk
    calendar.check_students((intake.allowed or set()) | {s for s, _, _ in found})
    notes = calendar.problems + intake.notes
    graded = {(s, a) for s, a, _ in found if request.chosen(s, a)}
    for student, name, why in turned_away:  # one row per (student, assignment): a submission on disk is graded instead
        if (student, name) not in graded and request.chosen(student, name):
            refused.setdefault((student, name), Result.failed(student, sources[name], why))
    if not graded and not refused:
        regrade = " to regrade" * (len(found) > 0)
        print(f"No submissions found under {root / 'submitted'}/<student>/<assignment>/{regrade}")
        print("\n".join(map(printable, ignored + notes)))  # names from downloads and rosters: the students' text
        return []
    config = settings(root, request.timeout).model_copy(update={"unsafe": request.unsafe})
    tasks, others, results = [], [], list(refused.values())
    for student, name, path in found:
        data, chosen = submissions.read(path), request.chosen(student, name)
        if isinstance(data, str):
            results += [Result.failed(student, sources[name], data)] if chosen else []
            continue
        own = config.of(sources[name]).model_copy(update={"feedback": request.feedback_for(student)})
        task = Submission(student=student, assignment=sources[name], notebook=data, settings=own)
        (tasks if chosen else others).append(task)
    previous, kept_notes = cache.kept(root, others)
    notes += kept_notes
    try:
        used = {t.assignment.name for t in tasks + others} | {r.assignment for r in results}
        gradebook.prepare(root, sorted(used), root / "gradebook.db")
    except gradebook.RefusedGradebook as error:
        sys.exit(f"make autograde: {error}")
    done, reused = run_all(root, tasks, request.jobs or os.cpu_count() or 1, request.scheduler)
    results += done + previous
    late = {}
    for r in results:
        late[r.key] = deadlines.assess(calendar, *r.key, root / "submitted" / r.student / r.assignment)
        if r.failure and not r.feedback and request.feedback_for(r.student):
            r.feedback = failure_page(r)
        if r.feedback and late[r.key].due is not None:
            r.feedback = with_lateness(r.feedback, late[r.key], r.score)
    notes += [f"{s}/{a}: late, {x.describe()}" for (s, a), x in sorted(late.items()) if x.due is not None and x.late]
    results = reports.write_outputs(root, results)
    recorded = gradebook.record(root / "gradebook.db", results, cache.written_to_regrade(root, results))
    reports.write_grades(root / "grades.csv", results, late, recorded)
    print(reports.summary(results, request.unsafe, ignored, reused, notes, recorded))
    if recorded.reset:
        reset = f"{recorded.reset} manual score(s) or extra credit on test cells that the grader did not set"
        print(f"\ngradebook.db held {reset}: reset, so that the gradebook says what grades.csv says")
    return results
