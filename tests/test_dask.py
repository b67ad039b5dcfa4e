"""Autograding on Dask: a LocalCluster, a real scheduler with two workers on loopback, the resume cache, and a
smoke test of a class with every fault kind during which a worker is killed. (The load of 300 submissions is a
benchmark: `python benchmarks/grading_throughput.py --load`.)

Everything runs on 127.0.0.1: the scheduler and workers are processes started by these tests, and
stop with them.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers import ROOT, wait_for
from helpers.dask import (
    KilledRun,
    autograde_killing_a_worker,
    free_port,
    start_scheduler,
    start_worker,
    still_running,
    stop,
    wait_for_workers,
)
from helpers.grading import (
    ASSIGNMENTS,
    FAULT_KINDS,
    check_mixed_class,
    course,
    full_before_hand_grading,
    grades,
    mixed_class,
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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1, as an instructor starts them."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("dask") / "log"
    with open(log, "w", encoding="utf-8") as out:
        processes = [start_scheduler(port, out), *(start_worker(address, f"w{k}", out) for k in range(2))]
    wait_for_workers(address, 2)
    workers = processes[1:]
    yield address, workers  # a test may replace a worker in this list
    stop([processes[0], *workers])


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
    pool = executors.fork_pool(2)
    print(pool.submit(os.getpid).result(), flush=True)
    time.sleep(600)
"""


def test_a_killed_grader_leaves_no_process_behind(tmp_path):
    """`make autograde` or a Dask worker killed with SIGKILL: its pool's processes and the forkserver
    exit too (an idle pool process would wait on its queue for ever)."""
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


# The smoke test's class: every fault kind of exercises 1-3 beside honest work, and one honest submission of
# exercises 4 and 5, 25 in all (about 250 s of grading on two Dask workers of a 2-core machine).
SMOKE = {
    "01-word2vec": [*FAULT_KINDS, "honest", "honest", "honest"],
    "02-elmo": [*FAULT_KINDS, "honest", "honest", "honest"],
    "03-gpt": [*FAULT_KINDS, *["honest"] * 5],
    "04-bert-pretraining": ["honest"],
    "05-bert-finetuning": ["honest"],
}


@dataclasses.dataclass
class Smoke:
    root: Path
    plan: dict
    run: KilledRun


@pytest.fixture(scope="module")
def smoke(cluster, tmp_path_factory) -> Smoke:
    """The smoke test's class graded once by the real `dask scheduler` and its two `dask worker`s; one worker is
    killed mid-run (SIGKILL) and another started in its place, as an instructor would."""
    address, workers = cluster
    root = course(tmp_path_factory.mktemp("smoke") / "course")
    plan = mixed_class(root, SMOKE)
    assert len(plan) == 25
    # A cell's limit of 15 s: an honest cell takes at most about 2 s alone, and this test shares 2 cores with the
    # rest of the suite. (A looping submission spends the limit once.)
    run = autograde_killing_a_worker(root, address, workers, after=5, cell_timeout=15, timeout=1500)
    wait_for_workers(address, 2)  # for the tests after this one
    return Smoke(root, plan, run)


def test_a_class_with_every_fault_kind_is_graded_while_a_worker_is_killed(smoke):
    """Every row is present, honest work has full marks, every faulty submission less, and no process of the killed
    worker is left."""
    check_mixed_class(smoke.root, smoke.plan)
    assert "reused" not in smoke.run.stdout, "a first run grades every submission"
    left = still_running(smoke.run.killed)
    assert not left, f"processes of the killed worker still run: {[p.cmdline()[:3] for p in left]}"
    print(f"\n{len(smoke.plan)} submissions in {smoke.run.seconds:.0f} s\n{smoke.run.stdout[-600:]}")


def test_a_rerun_grades_only_what_changed(cluster, smoke):
    """The same class graded again after one student hands in again: only that submission is graded; the others'
    results come from the resume cache."""
    address, _ = cluster
    student, a = next(key for key, kind in smoke.plan.items() if kind == "honest" and key[1] == "01-word2vec")
    write(smoke.root, student, a, release_nb(a))
    again = autograde(smoke.root, address, "--timeout", "15")
    unchanged = len(smoke.plan) - 1
    assert f"{unchanged} submission(s) unchanged since an earlier run: their results were reused" in again.stdout
    rows = grades(smoke.root)
    assert rows[student, a]["score"] == "0", rows[student, a]
    check_mixed_class(smoke.root, {**smoke.plan, (student, a): "empty"})
