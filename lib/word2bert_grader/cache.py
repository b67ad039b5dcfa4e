"""The result cache, ``.grading-cache/``: each result under the hash of its submission, its source notebook, its
settings and the code that decides it (:data:`GRADING_MODULES`, the course library's modules it imports, the
checkpoints), so that a re-run grades only what changed and an interrupted run resumes; which result is each
submission's latest, for a regrade of others; and the written answers' texts the grader has recorded."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import word2bert
import word2bert_grader
from word2bert_grader.assignment import Assignment, text
from word2bert_grader.task import Result, Submission

CACHE = ".grading-cache"

# The modules that decide a result: the worker's code, and the executors (a submission stopped at their wall-clock
# limit gets their row, which is cached too); editing the pipeline, the intake or the reports regrades nothing.
GRADING_MODULES = (
    *("assignment", "task", "executors", "outputs/feedback"),
    *("remote/harness", "remote/proxy", "remote/mirror"),
    *("sandbox/process", "sandbox/bwrap", "sandbox/seccomp", "sandbox/cgroups", "sandbox/launch", "sandbox/runner"),
    "sandbox/wire",
)


def grader_version(assignment: Assignment) -> str:
    """A hash of the code that decides a grade of ``assignment``: the grader's grading modules, the modules of the
    course library that its source notebook imports (and what they import), and the checkpoints. A change to one
    library module regrades only the assignments whose tests use it."""
    return _version("\n".join(text(c.get("source")) for c in assignment.cells))


@functools.cache
def _version(code: str) -> str:
    hashed = hashlib.sha256()
    folder = Path(word2bert_grader.__file__).parent
    for module in GRADING_MODULES:
        hashed.update(module.encode() + (folder / f"{module}.py").read_bytes())
    library = Path(word2bert.__file__).parent
    for path in sorted(_library_files(library, code)):
        hashed.update(str(path.relative_to(library)).encode() + path.read_bytes())
    return hashed.hexdigest()


def _library_files(library: Path, code: str) -> set[Path]:
    """The library's files a source notebook's ``code`` depends on: the modules it imports, transitively, their
    packages' ``__init__``, and every checkpoint (weights are loaded by name at run time)."""
    import ast

    everything = {p for p in library.rglob("*") if p.suffix in (".py", ".safetensors", ".json")}
    everything = {p for p in everything if "__pycache__" not in p.parts}
    todo: list[tuple[str, list[str]]] = [(code, [])]
    seen = {p for p in everything if p.suffix != ".py"} | {library / "__init__.py"}
    while todo:
        source, package = todo.pop()  # package: the importing module's package, as parts ("word2bert", "data")
        try:
            tree = ast.parse(source)
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
    digest = hashlib.sha256(grader_version(task.assignment).encode())
    for part in (task.student, task.assignment.name, task.assignment.digest, task.settings.model_dump_json()):
        digest.update(hashlib.sha256(part.encode()).digest())
    digest.update(hashlib.sha256(task.notebook).digest())
    return digest.hexdigest()


def cached(root: Path, key: str) -> Result | None:
    """The cached result under ``key``; None where there is none, or what is there is not a result."""
    try:
        return Result.checked(json.loads((root / CACHE / f"{key}.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def remember(root: Path, key: str, result: Result) -> None:
    folder = root / CACHE
    folder.mkdir(exist_ok=True)
    tmp = folder / f"{key}.tmp"
    tmp.write_text(result.model_dump_json(), encoding="utf-8")
    os.replace(tmp, folder / f"{key}.json")


def remember_latest(root: Path, keys: dict[tuple[str, str], str]) -> None:
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
        name = "/".join(task.key)
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
        for gid, answer in r.answers.items():
            key = "/".join((r.student, r.assignment, gid))
            now[key] = hashlib.sha256(answer.strip().encode()).hexdigest()
            if before.get(key) != now[key]:
                changed.add((r.student, r.assignment, gid))
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(now, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return changed
