"""Submissions per minute: the local pool against a 2-worker Dask cluster on the same cores.

One class (``COPIES`` solution submissions of exercises 1-4, and of exercise 5 a fifth as many, as in a
real mix) is graded three ways in one run, each from a clean cache: the local pool (``--jobs 2``), and
a Dask cluster of two single-thread workers on 127.0.0.1, with and without a nanny (``--no-nanny``:
a fork per submission; a nanny's daemonic worker starts a new interpreter instead). Dask's own
overhead per task is measured apart, with empty tasks through the same cluster, and compared with
the grading time; the projection for N workers divides the measured per-submission CPU cost by N.

    python benchmarks/grading_throughput.py [--copies N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def build_class(course: Path, copies: int) -> int:
    course.mkdir(parents=True)
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, course / name)
    n = 0
    for folder in sorted((ROOT / "solutions").iterdir()):
        for k in range(copies if not folder.name.startswith("05") else max(1, copies // 5)):
            target = course / "submitted" / f"s{k:03d}" / folder.name
            target.mkdir(parents=True)
            shutil.copy(folder / f"{folder.name}.ipynb", target)
            n += 1
    return n


def autograde(course: Path, *args: str) -> float:
    shutil.rmtree(course / ".grading-cache", ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "word2bert_grader", "--root", str(course), "autograde", "--no-feedback", *args],
        check=True,
        capture_output=True,
        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"},
    )
    return time.perf_counter() - start


def start_cluster(nanny: bool) -> tuple[str, list[subprocess.Popen]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = [
        subprocess.Popen(
            [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet
        )
    ]
    extra = ["--nworkers", "2"] if nanny else ["--no-nanny"]
    for _ in range(1 if nanny else 2):
        processes.append(
            subprocess.Popen(
                [BIN / "dask", "worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard", *extra],
                **quiet,
            )
        )
    from distributed import Client

    with Client(address, timeout="60s") as client:
        client.wait_for_workers(2, timeout=120)
    return address, processes


def dask_overhead(address: str, n: int = 500) -> float:
    """Seconds of scheduling per task: empty tasks through the same cluster."""
    from distributed import Client, wait

    with Client(address) as client:
        client.gather(client.map(int, range(20), pure=False))  # warm up
        start = time.perf_counter()
        wait(client.map(int, range(n), pure=False))
        return (time.perf_counter() - start) / n


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # each row as it is measured, also into a file
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="grading-throughput-") as tmp:
        course = Path(tmp) / "course"
        n = build_class(course, args.copies)
        rows = [("local pool, --jobs 2", autograde(course, "--jobs", "2"), None)]
        for nanny in (False, True):
            address, processes = start_cluster(nanny)
            try:
                overhead = dask_overhead(address)
                label = "Dask, 2 workers, " + ("nanny (new interpreter)" if nanny else "--no-nanny (fork)")
                rows.append((label, autograde(course, "--scheduler", address), overhead))
            finally:  # workers first, then the scheduler (a worker stopped after it may hang)
                for p in processes[::-1]:
                    p.terminate()
                    try:
                        p.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        p.kill()
    print(
        f"{n} solution submissions (exercises 1-4 x {args.copies}, exercise 5 x {max(1, args.copies // 5)}), "
        f"{os.cpu_count()} cores"
    )
    print(f"{'executor':<44}{'seconds':>9}{'per minute':>12}{'s/submission':>14}{'Dask overhead/task':>20}")
    for label, seconds, overhead in rows:
        extra = f"{overhead * 1000:.1f} ms" if overhead is not None else "-"
        print(f"{label:<44}{seconds:>9.0f}{n / seconds * 60:>12.1f}{seconds / n * 2:>14.2f}{extra:>20}")
    cost = min(seconds for _, seconds, _ in rows) / n * 2  # CPU-seconds per submission on these 2 cores
    print(f"projection (one submission costs {cost:.1f} CPU-s; one single-thread worker per core):")
    for workers in (2, 8, 32, 128):
        print(
            f"  {workers:>4} workers: {workers / cost * 60:>7.0f} submissions per minute; "
            f"5,000 submissions in {5000 * cost / workers / 60:.0f} min"
        )


if __name__ == "__main__":
    main()
