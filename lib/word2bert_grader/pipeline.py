"""Release the exercises; autograde a class. This process alone writes what grading produces.

    python -m word2bert_grader release     # exercises/ <- solutions/            (make release)
    python -m word2bert_grader autograde   # submitted/ -> grades.csv, feedback/ (make autograde)

Both run in a course root holding ``nbgrader_config.py`` and ``solutions/`` (this repository, or an
instructor's private copy of it). Each submission is graded by :func:`word2bert_grader.harness.grade`
in a worker process of its own (a fresh fork, one per submission, ``--jobs`` at a time); its student
code runs in a sandbox inside that. The workers return data; this process writes the gradebook,
``grades.csv``, ``feedback/<student>/<assignment>/<assignment>.html`` and ``autograded/``, so no
submission can reach them. A submission that cannot be graded is scored zero with its reason, and
every submission gets exactly one row.
"""

from __future__ import annotations

import csv
import multiprocessing
import os
import shutil
import sys
import tempfile
from collections.abc import Collection
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from word2bert_grader import downloads as lms
from word2bert_grader import gradebook
from word2bert_grader.feedback import failure_page
from word2bert_grader.harness import Settings
from word2bert_grader.sandbox import Limits, Unavailable, check_available

ATTEMPTS = 2  # a worker that dies is retried once, then the submission is scored 0 with the reason
UNSAFE_BANNER = ("WARNING: --unsafe-no-sandbox: student code ran WITHOUT confinement, as this user, with "
                 "network, files and processes in reach. Scores still come from the grader's own process, "
                 "but these grades are not safe to put on a transcript.")


def assignments(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "solutions").iterdir()
                  if p.is_dir() and (p / f"{p.name}.ipynb").exists())


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
    return Settings(timeout=float(timeout or config.Execute.get("timeout", 30)),
                    cell_timeouts={k: float(v) for k, v in ours.get("cell_timeouts", {}).items()},
                    limits=limits)


def failed_row(student: str, assignment: str, reason: str, max_score: float) -> dict:
    return {"student": student, "assignment": assignment, "cells": {}, "max_score": max_score, "score": 0.0,
            "failed": reason, "notes": [], "tampering": [], "seconds": 0.0, "feedback": "", "autograded": ""}


def find_submissions(root: Path, names: Collection[str], roster: set[str] | None,
                     refused: list[dict], max_scores: dict[str, float]) -> list[tuple[str, str, Path]]:
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
            if roster is not None and student not in roster:
                refused.append(failed_row(student, a.name, "refused: not on the roster", max_scores[a.name]))
            elif folder.is_symlink() or a.is_symlink():
                refused.append(failed_row(student, a.name, "refused: the folder is a symlink", max_scores[a.name]))
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


def _pool(jobs: int) -> ProcessPoolExecutor:
    # A fresh fork of a process that has imported torch already, for every submission: start-up is
    # cheap and no state of one submission's tests reaches the next.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "word2bert_grader.harness"])
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context, max_tasks_per_child=1)


def run_all(tasks: list[tuple], jobs: int, max_scores: dict[str, float]) -> list[dict]:
    """Grade every task in worker processes; a worker that dies is retried, then scored 0."""
    from tqdm.auto import tqdm

    from word2bert_grader.harness import grade

    results, attempts, todo = [], {}, list(tasks)
    with tqdm(total=len(tasks), desc="autograde", unit="submission", disable=None) as bar:
        while todo:
            pool = _pool(jobs)
            futures = {pool.submit(grade, *task): task for task in todo}
            todo = []
            for future in as_completed(futures):
                task = futures[future]
                student, assignment = task[0], task[1]
                try:
                    results.append(future.result())
                    bar.update()
                except BrokenProcessPool:
                    attempts[student, assignment] = attempts.get((student, assignment), 0) + 1
                    if attempts[student, assignment] < ATTEMPTS:
                        todo.append(task)
                    else:
                        results.append(failed_row(student, assignment, "the grader's worker process died "
                                                  f"{ATTEMPTS} times on it", max_scores[assignment]))
                        bar.update()
                except Exception as error:  # a bug of the grader's: reported, never stops the batch
                    results.append(failed_row(student, assignment, f"the grader failed: {type(error).__name__}: "
                                              f"{str(error)[:300]}", max_scores[assignment]))
                    bar.update()
            pool.shutdown(wait=True, cancel_futures=True)
    return results


def write_outputs(root: Path, results: list[dict]) -> None:
    """Feedback pages and graded notebooks, written here only (and nothing else into feedback/)."""
    for r in results:
        for step, name, text in (("feedback", f"{r['assignment']}.html", r["feedback"]),
                                 ("autograded", f"{r['assignment']}.ipynb", r["autograded"])):
            folder = root / step / r["student"] / r["assignment"]
            if folder.is_symlink():
                folder.unlink()
            shutil.rmtree(folder, ignore_errors=True)
            if text:
                folder.mkdir(parents=True)
                (folder / name).write_text(text, encoding="utf-8")


def write_grades(path: Path, results: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["student", "assignment", "score", "max_score", "status", "reason"])
        for r in sorted(results, key=lambda r: (r["student"], r["assignment"])):
            writer.writerow([r["student"], r["assignment"], f"{r['score']:g}", f"{r['max_score']:g}",
                             "failed" if r["failed"] else "graded", r["failed"] or "; ".join(r["notes"])])


def summary(results: list[dict], unsafe: bool, ignored: list[str]) -> str:
    names = sorted({r["assignment"] for r in results})
    by = {(r["student"], r["assignment"]): r for r in results}
    students = sorted({r["student"] for r in results})
    width = max([len("student"), *map(len, students)])
    lines = [UNSAFE_BANNER, ""] if unsafe else []
    lines.append("  ".join([f"{'student':<{width}}", *(f"{n:>20}" for n in names)]))
    for s in students:
        cells = [f"{by[s, n]['score']:g}/{by[s, n]['max_score']:g}" if (s, n) in by else "-" for n in names]
        lines.append("  ".join([f"{s:<{width}}", *(f"{c:>20}" for c in cells)]))
    failed = [r for r in results if r["failed"]]
    tampered = [r for r in results if r["tampering"]]
    noted = [r for r in results if r["notes"] and not r["failed"]]
    if failed:
        lines += ["", f"{len(failed)} submission(s) failed to grade (scored 0):"]
        lines += [f"  {r['student']}/{r['assignment']}: {r['failed']}" for r in failed]
    if tampered:
        lines += ["", "Tampering suspected (the student's kernel passed tests that the grader failed):"]
        lines += [f"  {r['student']}/{r['assignment']}: {'; '.join(r['tampering'])}" for r in tampered]
    if noted:
        lines += ["", "Handled while grading:"]
        lines += [f"  {r['student']}/{r['assignment']}: {'; '.join(r['notes'])}" for r in noted]
    if ignored:
        lines += ["", "Downloads not collected:"] + [f"  {line}" for line in ignored]
    timed = {n: sorted(r["seconds"] for r in results if r["assignment"] == n and r["seconds"]) for n in names}
    lines += ["", "Seconds per submission (median, slowest): " + ", ".join(
        f"{n} {t[len(t) // 2]:.1f}, {t[-1]:.1f}" for n, t in timed.items() if t)]
    if unsafe:
        lines += ["", UNSAFE_BANNER]
    return "\n".join(lines)


def autograde(root: Path, downloads: Path | None = None, jobs: int | None = None, timeout: float | None = None,
              feedback: bool | Collection[str] = True, roster: Path | None = None,
              unsafe: bool = False) -> list[dict]:
    """Grade every submission under ``root/submitted``; write gradebook, grades.csv, feedback/, autograded/.

    ``feedback``: for every student (True), none (False), or only the students named.
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
    max_scores = {n: _max_score(root, n) for n in names}
    allowed = lms.read_roster(roster) if roster is not None else None
    refused: list[dict] = []
    ignored: list[str] = []
    if downloads is not None:
        _, problems = lms.collect(downloads.resolve(), root / "submitted", names, allowed)
        for p in problems:
            if p.student and p.assignment:
                refused.append(failed_row(p.student, p.assignment, p.reason, max_scores[p.assignment]))
            else:
                ignored.append(f"{p.source}: {p.reason}")
    todo = find_submissions(root, names, allowed, refused, max_scores)
    graded = {(s, a) for s, a, _ in todo}
    unique = {}
    for r in refused:  # one row per (student, assignment): a submission on disk is graded instead
        if (r["student"], r["assignment"]) not in graded:
            unique.setdefault((r["student"], r["assignment"]), r)
    refused = list(unique.values())
    if not todo and not refused:
        print(f"No submissions found under {root / 'submitted'}/<student>/<assignment>/")
        if ignored:
            print("\n".join(ignored))
        return []
    config = settings(root, timeout)
    config.unsafe = unsafe
    gradebook.prepare(root, sorted({a for _, a, _ in todo} | {r["assignment"] for r in refused}),
                      root / "gradebook.db")
    tasks, results = [], list(refused)
    for student, assignment, path in todo:
        data = _read(path)
        if isinstance(data, str):
            results.append(failed_row(student, assignment, data, max_scores[assignment]))
            continue
        config.feedback = feedback if isinstance(feedback, bool) else student in feedback
        source = (root / "solutions" / assignment / f"{assignment}.ipynb").read_bytes()
        tasks.append((student, assignment, data, source, config.to_dict()))
    results += run_all(tasks, jobs or os.cpu_count() or 1, max_scores)
    for r in results:
        if r["failed"] and not r["feedback"] and (feedback if isinstance(feedback, bool) else r["student"] in feedback):
            r["feedback"] = failure_page(r)
    write_outputs(root, results)
    gradebook.record(root / "gradebook.db", results)
    write_grades(root / "grades.csv", results)
    print(summary(results, unsafe, ignored))
    return results


def _max_score(root: Path, assignment: str) -> float:
    from word2bert_grader import notebook

    cells = notebook.read_cells((root / "solutions" / assignment / f"{assignment}.ipynb").read_bytes())
    return sum(float(notebook._nbgrader(c).get("points", 0)) for c in cells if notebook._nbgrader(c).get("grade"))
