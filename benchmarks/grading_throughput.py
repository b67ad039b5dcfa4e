"""Submissions per minute: the local pool against a 2-worker Dask cluster on the same cores.

One class (``COPIES`` solution submissions of exercises 1-4, and of exercise 5 a fifth as many, as in a
real mix) is graded three ways in one run, each from a clean cache: the local pool (``--jobs 2``), and
a Dask cluster of two single-thread workers on 127.0.0.1, with and without a nanny (``--no-nanny``:
a fork per submission; a nanny's daemonic worker starts a new interpreter instead). Dask's own
overhead per task is measured apart, with empty tasks through the same cluster, and compared with
the grading time; the projection for N workers divides the measured per-submission CPU cost by N.

    python benchmarks/grading_throughput.py [--copies N]

``--load`` instead grades the load the suite once did (tests/test_dask.py keeps a smoke test of 25): 300 submissions
across the five exercises, a fifth of them faulty (every fault kind of exercises 1-3: wrong answers, crashes, loops,
garbage files), on a 2-worker Dask cluster, one of whose workers is killed after the first 20 results and another
started in its place. It checks every row (honest work at full marks, every faulty submission less, garbage failed
with its reason) and that nothing of the killed worker is left, then prints a table per exercise.

    python benchmarks/grading_throughput.py --load      # about 20 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tests"))  # the tests' helpers: the faulty class, the cluster, the killed worker

from helpers.dask import (  # noqa: E402
    autograde_killing_a_worker,
    free_port,
    start_scheduler,
    start_worker,
    still_running,
    stop,
    wait_for_workers,
)
from helpers.grading import FAULT_KINDS, check_mixed_class, course, mixed_class  # noqa: E402

# The load: weighted towards exercise 3, the cheapest to grade (seconds per submission on a Dask worker of the 2-core
# VM: 9.7 for exercise 1, 9.8 for 2, 6.5 for 3, 18.9 for 4 and 34.3 for 5, whose tests fine-tune the course BERT).
LOAD = {"01-word2vec": 20, "02-elmo": 20, "03-gpt": 250, "04-bert-pretraining": 5, "05-bert-finetuning": 5}


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
    """A scheduler (first) and two single-thread workers: two processes, or one nanny of two."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    workers = [start_worker(address, nanny=2)] if nanny else [start_worker(address) for _ in range(2)]
    processes = [start_scheduler(port), *workers]
    wait_for_workers(address, 2)
    return address, processes


def dask_overhead(address: str, n: int = 500) -> float:
    """Seconds of scheduling per task: empty tasks through the same cluster."""
    from distributed import Client, wait

    with Client(address) as client:
        client.gather(client.map(int, range(20), pure=False))  # warm up
        start = time.perf_counter()
        wait(client.map(int, range(n), pure=False))
        return (time.perf_counter() - start) / n


def fifth_faulty(n: int) -> list[str]:
    """Every fifth submission faulty: the first four faults one of each kind, then wrong answers, crashes and garbage
    (a loop costs its cell's whole time limit: three of them show what thirty would)."""
    kinds = []
    for k in range(n):
        f = k // 5
        kinds.append("honest" if k % 5 != 4 else FAULT_KINDS[f] if f < 4 else ("wrong", "crash", "garbage")[f % 3])
    return kinds


def load(after: int = 20) -> None:
    """The load of 300 submissions with a worker killed; checks every row, prints a table per exercise."""
    with tempfile.TemporaryDirectory(prefix="grading-load-") as tmp:
        root = course(Path(tmp) / "course")
        plan = mixed_class(root, {a: fifth_faulty(n) for a, n in LOAD.items()})
        address, processes = start_cluster(nanny=False)
        workers = processes[1:]
        try:
            run = autograde_killing_a_worker(root, address, workers, after=after, cell_timeout=15, timeout=3 * 3600)
        finally:
            stop([processes[0], *workers])
        check_mixed_class(root, plan)
        left = still_running(run.killed)
        assert not left, f"processes of the killed worker still run: {[p.cmdline()[:3] for p in left]}"
        results = [json.loads(p.read_text(encoding="utf-8")) for p in (root / ".grading-cache").glob("*.json")]
    seconds = {(r["student"], r["assignment"]): r["seconds"] for r in results if "seconds" in r}
    faulty = sum(kind != "honest" for kind in plan.values())
    print(
        f"{len(plan)} submissions ({faulty} faulty) in {run.seconds:.0f} s on 2 Dask workers, {os.cpu_count()} cores: "
        f"{len(plan) / run.seconds * 60:.1f} per minute; worker w0 killed after {after} results "
        f"({len(run.killed)} of its processes, none left); every row checked"
    )
    print("| exercise | submissions | faulty (wrong, crash, loop, garbage) | median s, honest | median s, faulty |")
    print("|---|---|---|---|---|")
    for a in LOAD:
        mine = {key: kind for key, kind in plan.items() if key[1] == a}
        counts = ", ".join(str(sum(k == kind for k in mine.values())) for kind in FAULT_KINDS)
        honest = [seconds[key] for key, kind in mine.items() if kind == "honest" and seconds.get(key)]
        broken = [seconds[key] for key, kind in mine.items() if kind != "honest" and seconds.get(key)]
        medians = " | ".join(f"{statistics.median(v):.1f}" if v else "-" for v in (honest, broken))
        print(f"| {a} | {len(mine)} | {sum(k != 'honest' for k in mine.values())} ({counts}) | {medians} |")


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # each row as it is measured, also into a file
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--load", action="store_true", help="300 submissions, a fifth faulty, a worker killed")
    args = parser.parse_args()
    if args.load:
        return load()
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
            finally:
                stop(processes)
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
