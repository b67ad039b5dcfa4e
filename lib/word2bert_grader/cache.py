"""The result cache, ``.grading-cache/``: results by the hash of what decides them, so that a run grades only what
changed; each submission's latest result, for regrades of others; the written answers' texts already recorded."""

import functools
import hashlib
import json
import os
from pathlib import Path

import word2bert
import word2bert_grader
from word2bert_grader.task import Result, Submission

CACHE = ".grading-cache"
# The modules that decide a result (the executors' row of a submission stopped at its limit is cached too)
GRADING_MODULES = (
    *("assignment", "task", "executors", "outputs/feedback", "remote/harness", "remote/proxy", "remote/mirror"),
    *("sandbox/process", "sandbox/bwrap", "sandbox/seccomp", "sandbox/cgroups", "sandbox/launch", "sandbox/runner"),
    "sandbox/wire",
)


@functools.cache
def grader_version() -> str:
    """A hash of the code that decides a grade: the grading modules, and the course library with its checkpoints."""
    hashed, folder, library = hashlib.sha256(), Path(word2bert_grader.__file__).parent, Path(word2bert.__file__).parent
    files = sorted(p for p in library.rglob("*") if p.suffix in (".py", ".safetensors", ".json"))
    for path in [*(folder / f"{module}.py" for module in GRADING_MODULES), *files]:
        hashed.update(str(path.relative_to(path.parents[1])).encode() + path.read_bytes())
    return hashed.hexdigest()


def cache_key(task: Submission) -> str:
    digest = hashlib.sha256(grader_version().encode())
    for part in (task.student, task.assignment.name, task.assignment.digest, task.settings.model_dump_json()):
        digest.update(hashlib.sha256(part.encode()).digest())
    digest.update(hashlib.sha256(task.notebook).digest())
    return digest.hexdigest()


def cached(root: Path, key: str) -> Result | None:
    """The cached result under ``key``; None where there is none, or what is there is not a result."""
    return Result.checked(_read(root / CACHE / f"{key}.json"))


def remember(root: Path, key: str, result: Result) -> None:
    _write(root / CACHE / f"{key}.json", result.model_dump_json())


def remember_latest(root: Path, keys: dict[tuple[str, str], str]) -> None:
    """Which cached result is each submission's latest: what a regrade of others keeps (:func:`latest`)."""
    known = latest(root) | {f"{s}/{a}": key for (s, a), key in keys.items()}
    _write(root / CACHE / "latest.json", json.dumps(known, sort_keys=True))


def latest(root: Path) -> dict[str, str]:
    known = _read(root / CACHE / "latest.json")
    return {k: v for k, v in known.items() if isinstance(v, str) and v.isalnum()} if isinstance(known, dict) else {}


def kept(root: Path, tasks: list[Submission]) -> tuple[list[Result], list[str]]:
    """The results outside a regrade (STUDENTS=, ASSIGNMENTS=): as last graded, or left out; said so."""
    known, results, notes = latest(root), [], []
    for task in tasks:
        name = "/".join(task.key)
        hit = cached(root, cache_key(task))
        if hit is None and name in known and (hit := cached(root, known[name])) is not None:
            notes.append(f"{name}: changed since it was graded, kept as graded then (not in this regrade)")
        if hit is not None and hit.key == task.key:
            results.append(hit)
        else:
            notes.append(f"{name}: never graded, and not in this regrade: no row")
    return results, notes


def written_to_regrade(root: Path, results: list[Result]) -> set[tuple[str, str, str]]:
    """The written answers whose text is new since the last run (their hand scores are void); recorded now."""
    before = _read(root / CACHE / "written-answers.json")
    before, changed = before if isinstance(before, dict) else {}, set()
    now = dict(before)
    for r in results:
        for gid, answer in r.answers.items():
            key = "/".join((*r.key, gid))
            now[key] = hashlib.sha256(answer.strip().encode()).hexdigest()
            if before.get(key) != now[key]:
                changed.add((*r.key, gid))
    _write(root / CACHE / "written-answers.json", json.dumps(now, sort_keys=True))
    return changed


def _read(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write(path: Path, content: str) -> None:
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(content, encoding="utf-8")
    os.replace(tmp, path)
