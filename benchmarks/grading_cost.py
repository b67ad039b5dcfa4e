"""Seconds per submission of `make autograde`: the sandboxed grader against the in-kernel nbgrader one.

Both pipelines grade the same class in one run: ``COPIES`` solution submissions of every assignment,
``--jobs 2``, no feedback. "Before" is the pipeline of commit ``BEFORE`` (nbgrader's autograde in one
Jupyter kernel per submission, tests inside the student's kernel), taken from git into a temporary
folder with its own solutions/ and config; "after" is this checkout's ``word2bert_grader`` (student
code in a bubblewrap sandbox, tests in the grader's process). Each prints the median and slowest
seconds per submission of every assignment; the wall time of the whole class is printed too.

    python benchmarks/grading_cost.py [--copies N]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "3fb2476"  # the last commit that graded inside nbgrader's kernel


def build_class(course: Path, source: Path, copies: int) -> int:
    course.mkdir()
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (source / name).is_dir() else shutil.copy)(source / name, course / name)
    count = 0
    for folder in sorted((source / "solutions").iterdir()):
        for k in range(copies):
            target = course / "submitted" / f"student-{k}" / folder.name
            target.mkdir(parents=True)
            shutil.copy(folder / f"{folder.name}.ipynb", target / f"{folder.name}.ipynb")
            count += 1
    return count


def grade(cmd: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return time.perf_counter() - start, run.stdout


def per_assignment(stdout: str) -> dict[str, tuple[float, float]]:
    line = next(x for x in stdout.splitlines() if x.startswith("Seconds per submission"))
    return {
        name: (float(median), float(slowest))
        for name, median, slowest in re.findall(r"(\S+) ([\d.]+), ([\d.]+)", line.split(":", 1)[1])
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=2)
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    with tempfile.TemporaryDirectory(prefix="grading-cost-") as tmp:
        tmp = Path(tmp)
        old = tmp / "before-src"
        old.mkdir()
        archive = subprocess.run(
            ["git", "archive", BEFORE, "lib", "solutions", "exercises", "nbgrader_config.py"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        n_before = build_class(tmp / "before", old, args.copies)
        n_after = build_class(tmp / "after", ROOT, args.copies)
        old_env = {**env, "PYTHONPATH": str(old / "lib")}
        wall_before, out_before = grade(
            [
                sys.executable,
                "-m",
                "word2bert.grading",
                "--root",
                str(tmp / "before"),
                "autograde",
                "--jobs",
                "2",
                "--no-feedback",
            ],
            old_env,
        )
        wall_after, out_after = grade(
            [
                sys.executable,
                "-m",
                "word2bert_grader",
                "--root",
                str(tmp / "after"),
                "autograde",
                "--jobs",
                "2",
                "--no-feedback",
            ],
            env,
        )
    before, after = per_assignment(out_before), per_assignment(out_after)
    print(f"{args.copies} solution submissions per assignment, --jobs 2, {os.cpu_count()} cores")
    print(
        f"{'assignment':<22}{'before median':>14}{'after median':>14}{'ratio':>8}"
        f"{'before slowest':>16}{'after slowest':>15}"
    )
    for name in sorted(after):
        b, a = before[name], after[name]
        print(f"{name:<22}{b[0]:>14.1f}{a[0]:>14.1f}{a[0] / b[0]:>7.2f}x{b[1]:>16.1f}{a[1]:>15.1f}")
    print(
        f"whole class: before {wall_before:.0f} s for {n_before}, after {wall_after:.0f} s for {n_after} "
        f"({wall_after / wall_before:.2f}x)"
    )


if __name__ == "__main__":
    main()
