"""Similar answers across a class and against the public solutions (``make similarity``), by copydetect's winnowing
fingerprints; student code is data here: read within caps, hashed, never run, shown through autoescape."""

import copy
import csv
import io
import logging
import re
from collections import defaultdict, namedtuple
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from word2bert_grader.assignment import Assignment, Kind, assignments, meta, read_cells, text
from word2bert_grader.intake import submissions
from word2bert_grader.outputs import _PAGES

SOLUTIONS = "solutions"


@dataclass(frozen=True)
class Settings:
    threshold: float = 0.6  # a pair at or above this score is flagged
    min_tokens: int = 60  # ... and only if this many tokens of code are shared (short answers look alike)
    noise: int = 25  # copydetect's noise threshold: matches shorter than this many tokens are not counted
    guarantee: int = 30  # copydetect's guarantee threshold: matches this long are always found
    max_share: float = 0.05  # a fingerprint in more of the class's answers than this is an idiom...
    min_class: int = 20  # ... once the class has at least this many answers


Answer = namedtuple("Answer", "student assignment code")  # what a student wrote in the answer cells


# score in [0, 1]; shares: the share of a's code found in b's, and of b's in a's; tokens: how many are shared
Pair = namedtuple("Pair", "assignment student_a student_b score shares tokens")


@dataclass
class Report:
    pairs: list[Pair]  # flagged, highest score first
    answers: int
    compared: int  # pairs copydetect compared (after the index)
    problems: list[str] = field(default_factory=list)
    html: str = ""


def answer_code(assignment: Assignment, cells: list[dict]) -> str:
    """What a student wrote in the answer cells (code only: not the written answers, not scratch cells)."""
    return "\n\n".join(s.source for s in assignment.plan(cells).steps if s.kind is Kind.ANSWER)


def compare(
    answers: list[Answer], solutions: dict[str, str], boilerplate: dict[str, str], settings: Settings
) -> Report:
    """Flagged pairs among ``answers`` and against ``solutions`` (assignment -> code), per assignment."""
    report = Report([], len(answers), 0)
    by_assignment: dict[str, list[Answer]] = defaultdict(list)
    for a in answers:
        by_assignment[a.assignment].append(a)
    fingerprints: dict[tuple[str, str], object] = {}
    for name, group in sorted(by_assignment.items()):
        pairs, compared, prints = _compare_one(group, solutions.get(name, ""), boilerplate.get(name, ""), settings)
        report.pairs += pairs
        report.compared += compared
        fingerprints.update({(name, s): fp for s, fp in prints.items()})
    report.pairs.sort(key=lambda p: (-p.score, p.assignment, p.student_a, p.student_b))
    report.html = _html(report, fingerprints, settings)
    return report


# pygments lexes ``self`` and ``cls`` as builtins, which copydetect keeps as text (a copy renaming them would match
# nothing): fingerprinted as names of the same length, so that the report's offsets still hold on the code as written
_PSEUDO_NAMES = re.compile(r"\b(self|cls)\b")


def _fingerprint(code: str, settings: Settings, boilerplate=()):
    from copydetect import CodeFingerprint

    named = io.StringIO(_PSEUDO_NAMES.sub(lambda m: "v" * len(m[0]), code))
    window = settings.guarantee - settings.noise + 1
    fingerprint = CodeFingerprint("answer.py", settings.noise, window, boilerplate, True, "python", fp=named)
    fingerprint.raw_code = code
    return fingerprint


def _compare_one(group: list[Answer], solution: str, boilerplate: str, settings: Settings):
    """(flagged pairs, pairs compared, fingerprint by student) of one assignment."""
    from copydetect import compare_files

    base = np.unique(np.array(list(_fingerprint(boilerplate, settings).hashes), dtype=np.int64)) if boilerplate else []
    prints = {a.student: _fingerprint(a.code, settings, base) for a in group if a.code.strip()}
    if solution.strip():
        prints[SOLUTIONS] = _fingerprint(solution, settings, base)
    reference = prints.get(SOLUTIONS)
    students = [s for s in prints if s != SOLUTIONS]
    # between students: without the solution's fingerprints (copies of it are reported against it), nor idioms
    held: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(students):
        for h in prints[s].hashes:
            held[h].append(i)
    limit = max(2, int(settings.max_share * len(students))) if len(students) >= settings.min_class else len(students)
    dropped = {h for h, who in held.items() if len(who) > limit} | (reference.hashes if reference else set())
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for h, who in held.items():
        if h not in dropped:
            for x in range(len(who)):
                for y in range(x + 1, len(who)):
                    shared[who[x], who[y]] += 1
    trimmed = {s: _without(prints[s], dropped) for s in students}
    # a pair at the threshold shares about that share of the smaller answer's fingerprints: half of it, with a margin
    size = {s: len(trimmed[s].hashes) for s in students}
    pairs = [(students[i], students[j], n) for (i, j), n in shared.items()]
    pairs = [(a, b) for a, b, n in pairs if n >= max(1, settings.threshold * min(size[a], size[b]) // 2)]
    candidates = [(a, b, trimmed[a], trimmed[b]) for a, b in pairs]
    if reference is not None:
        candidates += [(s, SOLUTIONS, prints[s], reference) for s in students if prints[s].hashes & reference.hashes]
    flagged = []
    for a, b, fa, fb in candidates:
        tokens, (share_a, share_b), _ = compare_files(fa, fb)
        score = float(max(share_a, share_b))
        if score >= settings.threshold and tokens >= settings.min_tokens:
            shares = (float(share_a), float(share_b))
            flagged.append(Pair(group[0].assignment, a, b, round(min(score, 1.0), 4), shares, int(tokens)))
    return flagged, len(candidates), prints


def _without(fingerprint, dropped: set[int]):
    """A copy of a copydetect fingerprint without the ``dropped`` hashes (as copydetect drops boilerplate)."""
    from copydetect.utils import get_token_coverage

    if not dropped & fingerprint.hashes:
        return fingerprint
    trimmed = copy.copy(fingerprint)
    trimmed.hashes = fingerprint.hashes - dropped
    trimmed.hash_idx = {h: i for h, i in fingerprint.hash_idx.items() if h in trimmed.hashes}
    trimmed.token_coverage = get_token_coverage(trimmed.hash_idx, fingerprint.k, len(fingerprint.filtered_code))
    return trimmed


def _html(report: Report, fingerprints: dict, settings: Settings) -> str:
    """The flagged pairs, highest first, each with both answers side by side and the matched code marked."""
    from copydetect import compare_files

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))
    shown = []
    for p in report.pairs:
        fa, fb = fingerprints[p.assignment, p.student_a], fingerprints[p.assignment, p.student_b]
        _, _, slices = compare_files(fa, fb)
        students = (p.student_a, p.student_b)
        sides = [(f"{p.assignment}/{s}", _marked(f.raw_code, cut)) for s, f, cut in zip(students, (fa, fb), slices)]
        shown.append({"pair": p, "sides": sides})
    return _PAGES.get_template("similarity.html").render(report=report, pairs=shown, threshold=settings.threshold)


def _marked(code: str, slices) -> list[tuple[str, bool]]:
    """``code`` cut into (text, matched) pieces at copydetect's slices (character offsets, start and end rows)."""
    pieces, at = [], 0
    for start, end in sorted(zip(*slices)):
        start, end = max(int(start), at), int(end)
        if start > at:
            pieces.append((code[at:start], False))
        if end > start:
            pieces.append((code[start:end], True))
        at = max(at, end)
    return [*pieces, (code[at:], False)]


def run(root: Path, settings: Settings = Settings()) -> Report:
    """Every submission under ``root/submitted`` against its classmates' and ``solutions/``."""
    sources = assignments(root)
    found, refused = submissions.find(root, sources)
    answers, problems = [], [f"{s}/{a}: not compared ({why})" for s, a, why in refused]
    for student, name, path in found:
        data = submissions.read(path)
        try:
            if isinstance(data, str):
                raise ValueError(data)
            cells = read_cells(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            problems.append(f"{student}/{name}: not compared ({str(error)[:200]})")
            continue
        answers.append(Answer(student, name, answer_code(sources[name], cells)))
    solutions, boilerplate = {}, {}
    for name, source in sources.items():
        code = answer_code(source, source.cells).split("\n")
        solutions[name] = "\n".join(x for x in code if "BEGIN SOLUTION" not in x and "END SOLUTION" not in x)
        release = root / "exercises" / name / f"{name}.ipynb"  # the stubs and the course's other cells: no evidence
        stubs = answer_code(source, read_cells(release.read_bytes()) if release.is_file() else [])
        others = [
            text(c.get("source")) for c in source.cells if c.get("cell_type") == "code" and not meta(c).get("solution")
        ]
        boilerplate[name] = "\n\n".join([stubs, *others])
    report = compare(answers, solutions, boilerplate, settings)
    report.problems = problems
    return report


def write(report: Report, folder: Path) -> None:
    """``similarity.csv`` (one row per flagged pair, highest first) and ``similarity.html``."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "similarity.csv", "w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["assignment", "student_a", "student_b", "score"])
        for p in report.pairs:
            writer.writerow([p.assignment, p.student_a, p.student_b, f"{p.score:.4f}"])
    (folder / "similarity.html").write_text(report.html, encoding="utf-8")
