"""The similarity report's scale: ``make similarity`` for a class of 1,000 on one core.

Each assignment gets ``--students`` independent answers and ``--copies`` planted copies of each kind. An independent
student answers every function with one of the graders' fixtures for it (tests/fixtures/grading/<assignment>/,
correct and wrong implementations, 5 to 11 per function; never the solution), and adds one or two statements of
their own to each function (a number only they use): what makes two independent answers to the same question differ.
The planted copies are disguised as in tests/test_similarity.py (every name renamed, comments rewritten): copies of
the public solution, and copies of a classmate with the functions moved into other answer cells. The whole
``python -m word2bert_grader similarity`` (read the notebooks, fingerprint, index, compare, write the HTML and CSV)
runs in one process, timed; the script then checks that every planted copy is flagged and counts the other flags.

    python benchmarks/similarity_scale.py [--students 1000] [--copies 10] [--assignments 01-word2vec ...]
"""

from __future__ import annotations

import argparse
import ast
import csv
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' helpers: the fixtures, the release notebooks, disguised copies

from helpers.grading import ASSIGNMENTS, course, disguised, fixtures, solution_code, submission, write  # noqa: E402


def cpu_seconds() -> float:
    """User and system CPU seconds of the finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_statements(code: str, rng: random.Random) -> str:
    """``code`` with one or two statements of the student's own in each function's body."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for _ in range(rng.randint(1, 2)):
                mine = ast.parse(f"checked = {rng.randrange(10**6, 10**9)}").body[0]
                node.body.insert(rng.randint(1 if ast.get_docstring(node) else 0, len(node.body) - 1), mine)
    return ast.unparse(tree)


def build(root: Path, assignment: str, students: int, copies: int, rng: random.Random) -> set[tuple[str, str]]:
    """Writes the class of ``assignment``; returns the planted pairs (copier, copied)."""
    ids = list(solution_code(assignment))
    files = {kind: fixtures(assignment, kind) for kind in ("correct", "wrong")}
    pool = {f: [p.read_text(encoding="utf-8") for found in files.values() for p in found.get(f, [])] for f in ids}
    answers = {}
    for k in range(students):
        answers[f"s{k:04d}"] = {f: own_statements(rng.choice(pool[f]), rng) for f in ids}
        write(root, f"s{k:04d}", assignment, submission(assignment, answers[f"s{k:04d}"]))
    planted = set()
    for k in range(copies):
        copied = {f: disguised(code, "my own idea") for f, code in solution_code(assignment).items()}
        write(root, f"copy-solution-{k:02d}", assignment, submission(assignment, copied))
        planted.add((f"copy-solution-{k:02d}", "solutions"))
        original = f"s{rng.randrange(students):04d}"
        moved = [disguised(answers[original][f], "I thought hard here") for f in ids]
        write(root, f"copy-{original}", assignment, submission(assignment, dict(zip(ids, moved[1:] + moved[:1]))))
        planted.add((f"copy-{original}", original))
    return planted


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=1000, help="independent students per assignment")
    parser.add_argument("--copies", type=int, default=10, help="planted copies of each kind per assignment")
    parser.add_argument("--assignments", nargs="+", default=ASSIGNMENTS[:1])
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="similarity-scale-") as tmp:
        root = course(Path(tmp) / "course")
        planted = {a: build(root, a, args.students, args.copies, rng) for a in args.assignments}
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        before = cpu_seconds()
        start = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", "word2bert_grader", "--root", str(root), "similarity"],
            capture_output=True,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        seconds = time.perf_counter() - start
        cpu = cpu_seconds() - before
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        assert run.returncode == 0, run.stdout + run.stderr
        with open(root / "reports" / "similarity.csv", encoding="utf-8", newline="") as stream:
            rows = list(csv.DictReader(stream))
        html_mb = (root / "reports" / "similarity.html").stat().st_size / 1e6
    print(run.stdout.strip().splitlines()[-1])
    answers = len(args.assignments) * (args.students + 2 * args.copies)
    print(
        f"{answers:,} answers ({len(args.assignments)} assignment(s) x ({args.students:,} students + {2 * args.copies} "
        f"planted copies)): {seconds:.0f} s wall, {cpu:.0f} s CPU (one process); HTML report {html_mb:.1f} MB"
    )
    print("| assignment | answers | planted copies flagged | other pairs flagged | lowest planted score |")
    print("|---|---|---|---|---|")
    for a in args.assignments:
        flagged = {(r["student_a"], r["student_b"]): float(r["score"]) for r in rows if r["assignment"] == a}
        found = [flagged.get(p, flagged.get(p[::-1])) for p in planted[a]]
        hits = [s for s in found if s is not None]
        others = len(flagged) - len(hits)
        lowest = f"{min(hits):.2f}" if hits else "-"
        print(f"| {a} | {args.students + 2 * args.copies:,} | {len(hits)} of {len(planted[a])} | {others} | {lowest} |")


if __name__ == "__main__":
    main()
