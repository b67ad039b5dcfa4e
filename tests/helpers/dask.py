"""A Dask cluster on 127.0.0.1 as an instructor starts one (`dask scheduler` and single-thread `dask worker`s), and a
grading run through it during which one worker is killed: for tests/test_dask.py and benchmarks/grading_throughput.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from helpers import ROOT, wait_for

BIN = Path(sys.executable).parent
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_scheduler(port: int, out=subprocess.DEVNULL) -> subprocess.Popen:
    command = [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
    return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=ENV)


def start_worker(address: str, name: str | None = None, out=subprocess.DEVNULL, nanny: int = 0) -> subprocess.Popen:
    """One single-thread worker without a nanny (a fork per submission), or ``nanny`` workers under a nanny
    (daemonic: a new interpreter per submission)."""
    command = [BIN / "dask", "worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"]
    command += ["--nworkers", str(nanny)] if nanny else ["--no-nanny"]
    command += ["--name", name] if name else []
    return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=ENV)


def wait_for_workers(address: str, n: int) -> None:
    from distributed import Client

    with Client(address, timeout="60s") as client:
        client.wait_for_workers(n, timeout=120)


def stop(processes: list[subprocess.Popen]) -> None:
    """Workers first, each to its end, then the scheduler (the first process): a worker asked to stop after its
    scheduler has gone may wait for it for ever (Dask 2026.8, --no-nanny)."""
    for process in [*processes[1:], processes[0]]:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def cluster(log: Path, workers: int = 2) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """`dask scheduler` and ``workers`` single-thread `dask worker` processes on 127.0.0.1, as an instructor starts
    them; yields the scheduler's address and the workers (a test may replace one in that list); stops them all."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    with open(log, "w", encoding="utf-8") as out:
        processes = [start_scheduler(port, out), *(start_worker(address, f"w{k}", out) for k in range(workers))]
    running = processes[1:]
    try:
        wait_for_workers(address, workers)
        yield address, running
    finally:
        stop([processes[0], *running])


@dataclass
class KilledRun:
    stdout: str
    seconds: float
    killed: list[psutil.Process]  # the killed worker's processes (its pool, forkserver, sandboxes) when it died


def autograde_killing_a_worker(
    root: Path,
    address: str,
    workers: list[subprocess.Popen],
    after: int,
    timeout: int,
    cell_timeout: int | None = None,
    args: str = "--no-feedback",
) -> KilledRun:
    """`make autograde` of course ``root`` on the cluster at ``address``, with ``ARGS=args`` (and ``--timeout
    cell_timeout`` if given). Once ``after`` results are in, ``workers[0]`` is killed with SIGKILL in the middle of
    its work and another started in its place (``workers[0]`` becomes it), as an instructor would. Fails if the run
    fails."""
    start = time.monotonic()
    if cell_timeout is not None:
        args += f" --timeout {cell_timeout}"
    run = subprocess.Popen(
        ["make", "-s", "autograde", f"COURSE={root}", f"SCHEDULER={address}", f"ARGS={args}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    cache = root / ".grading-cache"
    wait_for(lambda: cache.is_dir() and len(list(cache.glob("*.json"))) >= after, timeout, "the first results")
    killed = psutil.Process(workers[0].pid).children(recursive=True)
    assert killed, "the worker grades in processes of its own"
    workers[0].kill()  # mid-run: its submission in progress is rescheduled on the other worker
    workers[0].wait()
    workers[0] = start_worker(address, "w0-again")
    stdout, _ = run.communicate(timeout=timeout)
    assert run.returncode == 0, stdout[-3000:]
    return KilledRun(stdout, time.monotonic() - start, killed)


def still_running(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
