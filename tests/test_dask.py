"""Autograding on Dask: a LocalCluster, and a killed grader's processes. The smoke test (a class with every fault
kind graded by a real scheduler and two workers on loopback, one killed mid-run, then the resume cache) grades
tests/test_grading.py's class, which it shares. (The load of 300 submissions is a benchmark:
`python benchmarks/grading_throughput.py --load`.)

Everything runs on 127.0.0.1: the scheduler and workers are processes started by these tests, and
stop with them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers import ROOT, wait_for
from helpers.dask import (
    still_running,
)
from helpers.grading import (
    ASSIGNMENTS,
    course,
    full_before_hand_grading,
    grades,
    release_nb,
    solution_nb,
    write,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")]


def autograde(root: Path, scheduler: str, *args: str, timeout: int = 1500) -> subprocess.CompletedProcess:
    run = subprocess.run(
        ["make", "-s", "autograde", f"COURSE={root}", f"SCHEDULER={scheduler}", f"ARGS=--no-feedback {' '.join(args)}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


def test_local_cluster_grades_a_class(tmp_path):
    """A 2-worker LocalCluster (nanny-managed, daemonic workers: the subprocess path)."""
    import dask
    from distributed import LocalCluster

    root = course(tmp_path / "course")
    a = ASSIGNMENTS[0]  # one submission per worker: the path is what is tested (the smoke test below grades more)
    write(root, "honest", a, solution_nb(a))
    write(root, "empty", a, release_nb(a))
    with (
        dask.config.set({"distributed.worker.daemon": True}),
        LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=":0") as local,
    ):
        autograde(root, local.scheduler_address)
    rows = grades(root)
    assert set(rows) == {("honest", a), ("empty", a)}
    assert full_before_hand_grading(rows["honest", a]) and rows["honest", a]["score"] != "0"
    assert rows["empty", a]["score"] == "0"


OWNER = """
import os, sys, time
from word2bert_grader import executors
if __name__ == "__main__":
    pool = executors.pool(2)
    print(pool.schedule(os.getpid).result(), flush=True)
    pool.schedule(time.sleep, (600,))  # one process busy grading when its owner is killed, the other idle
    time.sleep(600)
"""


def test_a_killed_grader_leaves_no_process_behind(tmp_path):
    """`make autograde` or a Dask worker killed with SIGKILL: its pool's processes, idle or busy, and the forkserver
    exit too (a busy one would grade on for no one)."""
    (tmp_path / "owner.py").write_text(OWNER, encoding="utf-8")
    owner = subprocess.Popen([sys.executable, tmp_path / "owner.py"], stdout=subprocess.PIPE, text=True)
    owner.stdout.readline()
    wait_for(
        lambda: len(psutil.Process(owner.pid).children(recursive=True)) >= 3,
        60,
        "the pool, its forkserver and its resource tracker",
    )
    time.sleep(3)  # the pool replaces the process that ran the task (one task per process): now idle
    children = psutil.Process(owner.pid).children(recursive=True)
    owner.kill()
    owner.wait()

    try:
        wait_for(lambda: not still_running(children), 15, "the killed owner's pool processes to exit")
    finally:
        for p in children:
            if p.is_running():
                p.kill()
