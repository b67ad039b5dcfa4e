"""Submissions per minute per core for each exercise: the local pool and a 2-worker Dask cluster on the same cores.

One class (``COPIES`` solution submissions of each of the five exercises) is graded twice in one run, each from a
clean cache: by the local pool (``--jobs 2``) and by a Dask cluster of two single-thread workers on 127.0.0.1
(``--no-nanny``: a fork per submission; ``--nanny`` for one nanny of two daemonic workers, which start a new
interpreter per submission). Each submission takes one core while it is graded (one single-thread worker or pool
process per core), so an exercise's rate per core is 60 over its median seconds per submission, as the grader
records them. On a machine that other jobs load, a submission gets less than its core: the CPU seconds of each
run (its processes' user and system time, sampled) over the sum of its submissions' seconds say how much, and each
exercise's CPU seconds are estimated as its median times that share. Dask's own overhead per task is measured
apart, with empty tasks through the same cluster. The projection for 1,000 students x 5 assignments on N workers
(one per core) divides the class's grading seconds (1,000 times the sum of the exercises' medians on Dask) by N:
as measured, and on cores of its own (CPU seconds). Every process the run started, sampled as it goes (pool,
sandboxes, scheduler, workers and theirs), must be gone once the run is shut down.

    python benchmarks/grading_throughput.py [--copies N] [--nanny]

``--load`` instead grades the load the suite once did (tests/test_grading.py keeps a smoke test: its class, graded
on Dask): 300 submissions across the five exercises, a fifth of them faulty (every fault kind of exercises 1-3:
wrong answers, crashes, loops, garbage files), on a 2-worker Dask cluster, one of whose workers is killed after the
first 20 results and another started in its place. It checks every row (honest work at full marks, every faulty
submission less, garbage failed with its reason) and that nothing of the killed worker is left, then prints
a table per exercise.

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
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

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
from helpers.grading import ASSIGNMENTS, FAULT_KINDS, check_mixed_class, course, mixed_class  # noqa: E402

# The load: weighted towards exercise 3, the cheapest to grade (seconds per submission on a Dask worker of the 2-core
# VM: 9.7 for exercise 1, 9.8 for 2, 6.5 for 3, 18.9 for 4 and 34.3 for 5, whose tests fine-tune the course BERT).
LOAD = {"01-word2vec": 20, "02-elmo": 20, "03-gpt": 250, "04-bert-pretraining": 5, "05-bert-finetuning": 5}
STUDENTS = 1000  # the projection's class: 1,000 students, each handing in every exercise


class Processes:
    """Every process descended from the ones watched, and its CPU seconds, sampled every 0.2 s while the run goes on.
    (The OS's accounting of children would miss most: the pools' forkservers, which reap the graders' processes,
    are never waited for.) A process's last 0.2 s are not counted."""

    def __init__(self):
        self.roots: list[psutil.Process] = []
        self.seen: dict[tuple[int, float], psutil.Process] = {}
        self.cpu: dict[tuple[int, float], float] = {}  # user and system seconds, at the last sample
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def watch(self, *pids: int) -> None:
        self.roots += [psutil.Process(pid) for pid in pids]

    def _sample(self) -> None:
        while not self._done.wait(0.2):
            for root in list(self.roots):
                try:
                    for p in [root, *root.children(recursive=True)]:
                        key = (p.pid, p.create_time())
                        self.seen.setdefault(key, p)
                        self.cpu[key] = sum(p.cpu_times()[:2])
                except psutil.Error:  # it ended between two calls
                    pass

    def left(self, grace: float = 10) -> list[psutil.Process]:
        """The watched processes still running ``grace`` seconds after the run's shutdown."""
        self._done.set()
        self._thread.join()
        _, alive = psutil.wait_procs(list(self.seen.values()), timeout=grace)
        return still_running(alive)


def build_class(course: Path, copies: int) -> int:
    course.mkdir(parents=True)
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, course / name)
    n = 0
    for folder in sorted((ROOT / "solutions").iterdir()):
        for k in range(copies):
            target = course / "submitted" / f"s{k:03d}" / folder.name
            target.mkdir(parents=True)
            shutil.copy(folder / f"{folder.name}.ipynb", target)
            n += 1
    return n


@dataclass
class Run:
    seconds: float  # wall time of the whole run
    cpu: float  # CPU seconds of its processes
    by_exercise: dict[str, list[float]]  # seconds per submission, as the grader recorded them

    def median(self, exercise: str) -> float:
        return statistics.median(self.by_exercise[exercise])

    def share(self) -> float:
        """The CPU seconds a second of a submission got."""
        return min(1.0, self.cpu / sum(sum(v) for v in self.by_exercise.values()))


def autograde(course: Path, processes: Processes, *args: str) -> Run:
    """One run from a clean cache, without feedback; its CPU seconds are the caller's to add (a cluster's workers
    count only once they have stopped)."""
    shutil.rmtree(course / ".grading-cache", ignore_errors=True)
    start = time.perf_counter()
    run = subprocess.Popen(
        [sys.executable, "-m", "word2bert_grader", "--root", str(course), "autograde", "--no-feedback", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "OMP_NUM_THREADS": "1"},
    )
    processes.watch(run.pid)
    out, _ = run.communicate()
    seconds = time.perf_counter() - start
    assert run.returncode == 0, out[-3000:]
    results = [json.loads(p.read_text(encoding="utf-8")) for p in (course / ".grading-cache").glob("*.json")]
    results = [r for r in results if "seconds" in r]  # not the cache's own records (latest.json, ...)
    assert results and all(not r["failed"] for r in results), [r["failed"] for r in results]
    return Run(seconds, 0.0, {a: sorted(r["seconds"] for r in results if r["assignment"] == a) for a in ASSIGNMENTS})


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


def duration(seconds: float) -> str:
    return (
        f"{seconds / 3600:.1f} h"
        if seconds >= 3600
        else f"{seconds / 60:.0f} min"
        if seconds >= 120
        else f"{seconds:.0f} s"
    )


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # each row as it is measured, also into a file
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=3, help="solution submissions of each exercise")
    parser.add_argument("--nanny", action="store_true", help="Dask workers under a nanny (a new interpreter each)")
    parser.add_argument("--load", action="store_true", help="300 submissions, a fifth faulty, a worker killed")
    args = parser.parse_args()
    if args.load:
        return load()
    processes = Processes()
    before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="grading-throughput-") as tmp:
        course = Path(tmp) / "course"
        n = build_class(course, args.copies)
        local = autograde(course, processes, "--jobs", "2")
        local.cpu = sum(processes.cpu.values())
        address, cluster = start_cluster(args.nanny)  # the cluster's CPU seconds include its start and stop
        processes.watch(*(p.pid for p in cluster))
        try:
            overhead = dask_overhead(address)
            dask = autograde(course, processes, "--scheduler", address)
        finally:
            stop(cluster)
        dask.cpu = sum(processes.cpu.values()) - local.cpu
    left = processes.left()
    assert not left, f"processes left after the shutdown: {[p.cmdline()[:4] for p in left]}"
    loads = ", ".join(f"{x:.1f}" for x in (*before, *os.getloadavg()))
    workers = "nanny of 2 (new interpreter)" if args.nanny else "2 x --no-nanny (fork)"
    print(f"{n} solution submissions ({args.copies} of each exercise), {os.cpu_count()} cores, load average {loads}")
    print(f"{len(processes.seen)} processes started (pool, sandboxes, scheduler, workers), none left after shutdown")
    print("| executor | wall s | submissions per minute | CPU-s per submission | CPU share | Dask overhead per task |")
    print("|---|---|---|---|---|---|")
    rows = (("local pool, --jobs 2", local, "-"), (f"Dask, {workers}", dask, f"{overhead * 1e3:.1f} ms"))
    for label, run, extra in rows:
        print(
            f"| {label} | {run.seconds:.0f} | {n / run.seconds * 60:.1f} | {run.cpu / n:.1f} | {run.share():.2f} "
            f"| {extra} |"
        )
    print(
        "| exercise | local: median s | local: per minute per core | Dask: median s | Dask: per minute per core "
        "| Dask: CPU-s (est.) | per minute per core of its own |"
    )
    print("|---|---|---|---|---|---|---|")
    for a in ASSIGNMENTS:
        cpu_a = dask.median(a) * dask.share()
        print(
            f"| {a} | {local.median(a):.1f} | {60 / local.median(a):.1f} | {dask.median(a):.1f} | "
            f"{60 / dask.median(a):.1f} | {cpu_a:.1f} | {60 / cpu_a:.1f} |"
        )
    # A run's wall time is its grading seconds over the workers, plus what idle workers wait at its end (this run's
    # ratio of the two is printed); the projection leaves that tail out, small for a class of thousands.
    per_student = sum(dask.median(a) for a in ASSIGNMENTS)
    total = sum(sum(v) for v in dask.by_exercise.values())
    print(
        f"per student (5 submissions): {per_student:.0f} s on a worker, {per_student * dask.share():.0f} CPU-s; "
        f"this Dask run: {dask.seconds:.0f} s wall against {total / 2:.0f} s of grading over 2 workers"
    )
    print(f"| workers (cores) | {STUDENTS:,} students x 5 assignments, as measured | on cores of their own |")
    print("|---|---|---|")
    for w in (2, 8, 32, 128):
        measured, own = (STUDENTS * per_student * f / w for f in (1, dask.share()))
        print(f"| {w} | {duration(measured)} | {duration(own)} |")


if __name__ == "__main__":
    main()
