"""Similar answers across a class and against the public solutions: ``make similarity``.

The course's ``solutions/`` are public, so copying them is the cheapest way to cheat; copying a classmate is
the next. This module compares what each student wrote in the answer cells of each assignment with every
classmate's and with the solution (the student ``solutions``), using copydetect's winnowing fingerprints
(Schleimer, Wilkerson and Aiken 2003, as MOSS does): the code is tokenized and its names replaced, so renamed
variables, reordered functions and changed comments do not hide a copy.

What is not evidence is left out, as copydetect's boilerplate: the release's stubs (the signatures and
docstrings every student starts from) and the course's own code cells (set-up and helpers). What one answer
shares with many classmates (more than ``max_share`` of the class, and not the solution's) is an idiom, as in
MOSS, and is left out of the comparisons between students. Two students who both copied the solution are each
reported against ``solutions``, not against each other.

Scale: comparing every pair of a class of n is n²/2 comparisons. Instead, an index from each fingerprint to
the answers holding it gives, per pair, how many fingerprints they share; only pairs that share enough to reach
the threshold are compared by copydetect. The score of a pair is copydetect's: the share of an answer's
fingerprinted code found in the other's, the larger of the two, in [0, 1].

Student code is data here: it is read (with the grader's caps), tokenized and hashed, never run; a notebook
that does not read is skipped and said so.
"""

from __future__ import annotations

import copy
import csv
import html
import io
import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from word2bert_grader import assignment as notebook

SOLUTIONS = "solutions"


@dataclass(frozen=True)
class Settings:
    threshold: float = 0.6  # a pair at or above this score is flagged
    min_tokens: int = 60  # ... and only if this many tokens of code are shared (short answers look alike)
    noise: int = 25  # copydetect's noise threshold: matches shorter than this many tokens are not counted
    guarantee: int = 30  # copydetect's guarantee threshold: matches this long are always found
    max_share: float = 0.05  # a fingerprint in more of the class's answers than this is an idiom...
    min_class: int = 20  # ... once the class has at least this many answers


@dataclass(frozen=True)
class Answer:
    student: str
    assignment: str
    code: str


@dataclass(frozen=True)
class Pair:
    assignment: str
    student_a: str
    student_b: str
    score: float  # in [0, 1]
    shares: tuple[float, float]  # the share of a's code found in b's, and of b's in a's
    tokens: int  # shared tokens


@dataclass
class Report:
    pairs: list[Pair]  # flagged, highest score first
    answers: int
    compared: int  # pairs copydetect compared (after the index)
    problems: list[str] = field(default_factory=list)
    html: str = ""


def answer_code(source_cells: list[dict], cells: list[dict]) -> str:
    """What a student wrote in the answer cells (code only: not the written answers, not scratch cells)."""
    steps = notebook.plan(source_cells, cells).steps
    return "\n\n".join(s.source for s in steps if s.kind is notebook.Kind.ANSWER)


def solution_code(source_cells: list[dict]) -> str:
    """The source's answers, without nbgrader's solution markers."""
    code = answer_code(source_cells, source_cells)
    return "\n".join(line for line in code.split("\n") if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line)


def boilerplate_code(source_cells: list[dict], release_cells: list[dict]) -> str:
    """The release's stubs and the source's other code cells (set-up, helpers, tests): what no copy shows."""
    stubs = answer_code(source_cells, release_cells)
    others = [
        "".join(c["source"]) if isinstance(c.get("source"), list) else str(c.get("source", ""))
        for c in source_cells
        if c.get("cell_type") == "code" and not c.get("metadata", {}).get("nbgrader", {}).get("solution")
    ]
    return "\n\n".join([stubs, *others])


def compare(
    answers: list[Answer], solutions: dict[str, str], boilerplate: dict[str, str], settings: Settings
) -> Report:
    """Flagged pairs among ``answers`` and against ``solutions`` (assignment -> code), per assignment."""
    report = Report([], len(answers), 0)
    by_assignment: dict[str, list[Answer]] = defaultdict(list)
    for a in answers:
        by_assignment[a.assignment].append(a)
    fingerprints: dict[tuple[str, str], object] = {}
    for assignment, group in sorted(by_assignment.items()):
        pairs, compared, prints = _compare_one(
            group, solutions.get(assignment, ""), boilerplate.get(assignment, ""), settings
        )
        report.pairs += pairs
        report.compared += compared
        fingerprints.update({(assignment, s): fp for s, fp in prints.items()})
    report.pairs.sort(key=lambda p: (-p.score, p.assignment, p.student_a, p.student_b))
    report.html = _html(report, fingerprints, settings)
    return report


# pygments lexes ``self`` and ``cls`` as builtin names, which copydetect keeps as text, so a copied class whose
# ``self`` is renamed would match nothing. Fingerprinted as names of the same length, they become variables like
# any other; the report shows the code as written (same length, so copydetect's offsets still hold).
_PSEUDO_NAMES = re.compile(r"\b(self|cls)\b")


def _fingerprint(code: str, settings: Settings, boilerplate=()):
    from copydetect import CodeFingerprint

    window = settings.guarantee - settings.noise + 1
    named = _PSEUDO_NAMES.sub(lambda m: "v" * len(m.group()), code)
    fingerprint = CodeFingerprint(
        "answer.py", settings.noise, window, boilerplate, True, "python", fp=io.StringIO(named)
    )
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
    # Between students: without the solution's fingerprints (each copy of it is reported against it) and without
    # the idioms that many share.
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
    candidates = [
        (students[i], students[j], trimmed[students[i]], trimmed[students[j]])
        for (i, j), n in shared.items()
        if n >= _needed(trimmed[students[i]], trimmed[students[j]], settings)
    ]
    if reference is not None:
        candidates += [(s, SOLUTIONS, prints[s], reference) for s in students if prints[s].hashes & reference.hashes]
    flagged = []
    assignment = group[0].assignment
    for a, b, fa, fb in candidates:
        tokens, (share_a, share_b), slices = compare_files(fa, fb)
        score = float(max(share_a, share_b))
        if score >= settings.threshold and tokens >= settings.min_tokens:
            flagged.append(
                Pair(assignment, a, b, round(min(score, 1.0), 4), (float(share_a), float(share_b)), int(tokens))
            )
    return flagged, len(candidates), prints


def _needed(fa, fb, settings: Settings) -> int:
    """Fingerprints two answers must share to be compared. A score is the share of an answer's code covered by
    shared fingerprints, so a pair at the threshold shares about that share of the smaller answer's
    fingerprints; half of it leaves a margin for fingerprints that cover more code than others."""
    return max(1, int(settings.threshold * min(len(fa.hashes), len(fb.hashes)) * 0.5))


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
    """copydetect's own report, of the flagged pairs: their code side by side, the matches highlighted."""
    from copydetect import CopyDetector, compare_files

    names = sorted({(p.assignment, s) for p in report.pairs for s in (p.student_a, p.student_b)})
    if not names:
        return (
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Similarity</title></head><body>"
            f"<h1>Similarity</h1><p>No pair of the {report.answers} answers reached a score of "
            f"{settings.threshold:g}.</p></body></html>"
        )
    labels = [html.escape(f"{a}/{s}") for a, s in names]  # copydetect's template shows the file lists unescaped
    index = {n: i for i, n in enumerate(names)}
    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))
    detector = CopyDetector(
        noise_t=settings.noise,
        guarantee_t=settings.guarantee,
        display_t=min(settings.threshold, 0.999) - 1e-9,
        silent=True,
        autoopen=False,
        force_language="python",
    )
    detector.test_files = detector.ref_files = labels
    detector.file_data = {label: fingerprints[n] for label, n in zip(labels, names, strict=True)}
    size = len(labels)
    detector.similarity_matrix = np.full((size, size, 2), -1.0)
    detector.token_overlap_matrix = np.full((size, size), -1)
    detector.slice_matrix = {}
    for p in report.pairs:
        i, j = index[p.assignment, p.student_a], index[p.assignment, p.student_b]
        tokens, _, (slices_a, slices_b) = compare_files(detector.file_data[labels[i]], detector.file_data[labels[j]])
        detector.similarity_matrix[i, j] = p.shares
        detector.similarity_matrix[j, i] = p.shares[::-1]
        detector.token_overlap_matrix[i, j] = detector.token_overlap_matrix[j, i] = tokens
        detector.slice_matrix[labels[i], labels[j]] = [slices_a, slices_b]
    return detector.generate_html_report(output_mode="return")


def run(root: Path, settings: Settings = Settings()) -> Report:
    """Every submission under ``root/submitted`` against its classmates' and ``solutions/``."""
    from word2bert_grader import pipeline

    names = pipeline.assignments(root)
    refused: list[dict] = []
    answers, problems = [], []
    sources = {a: notebook.read_cells(pipeline.source(root, a)) for a in names}
    for student, assignment, path in pipeline.find_submissions(root, names, None, refused):
        data = pipeline._read(path)
        try:
            if isinstance(data, str):
                raise ValueError(data)
            cells = notebook.read_cells(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            problems.append(f"{student}/{assignment}: not compared ({str(error)[:200]})")
            continue
        answers.append(Answer(student, assignment, answer_code(sources[assignment], cells)))
    problems += [f"{r['student']}/{r['assignment']}: not compared ({r['failed']})" for r in refused]
    solutions = {a: solution_code(cells) for a, cells in sources.items()}
    boilerplate = {}
    for a, cells in sources.items():
        release = root / "exercises" / a / f"{a}.ipynb"
        boilerplate[a] = boilerplate_code(cells, notebook.read_cells(release.read_bytes()) if release.is_file() else [])
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
