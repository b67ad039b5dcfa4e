"""Where submissions are graded: pebble's process pool here, or one on each Dask worker; one process per submission,
a death charged to its submission (graded again, ``ATTEMPTS`` in all), a process past :func:`deadline` killed."""

import json
import multiprocessing
import os
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, wait

from pebble import ProcessExpired, ProcessPool

from word2bert_grader.sandbox.cgroups import Cgroup
from word2bert_grader.task import Result, Submission

ATTEMPTS = 3  # deaths of the process grading a submission before it is scored 0
MARGIN = 120  # seconds past the grader's own limit for a whole submission before its process is killed
DIED = f"the grader's worker process died {ATTEMPTS} times while grading it"


def deadline(task: Submission) -> float:
    """Seconds ``task`` may take in all, on any executor."""
    return task.settings.backstop(task.assignment) + MARGIN


def overtime(task: Submission, limit: float) -> Result:
    """The row of a submission stopped at its wall-clock limit (kept: the next run would only be stopped again)."""
    return Result.failed(task.student, task.assignment, f"grading was stopped after {limit:g} s, its limit in all")


def failed(task: Submission, reason: str) -> Result:
    return Result.failed(task.student, task.assignment, reason, transient=True)


def pool(workers: int) -> ProcessPool:
    """``workers`` processes, each grading one task and replaced, forked from a server that has imported torch."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "word2bert_grader.remote.harness"])
    return ProcessPool(workers, max_tasks=1, context=context, initializer=_exit_with, initargs=(os.getpid(),))


def _exit_with(owner: int) -> None:
    """In each pool process: exit once the pool's owner is gone (killed), rather than grade on for no one."""
    try:
        handle = os.pidfd_open(owner)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):  # not Linux 5.3 or later: the owner's shutdown has to do
        return
    threading.Thread(target=lambda: select.select([handle], [], []) and os._exit(1), daemon=True).start()


def _outcome(future, task: Submission, limit: float) -> Result | None:
    """What a scheduled task gave; None where its process died (the cgroups it left are removed)."""
    try:
        return future.result()
    except (TimeoutError, ProcessExpired) as stopped:  # pebble killed it at its limit (its sandbox with it), or it died
        Cgroup.remove_orphans()
        return overtime(task, limit) if isinstance(stopped, TimeoutError) else None
    except Exception as error:  # a bug of the grader's: reported, never stops the batch
        return failed(task, f"the grader failed: {type(error).__name__}: {str(error)[:300]}")


def local(tasks: list[Submission], jobs: int, grade_one=None) -> Iterator[Result]:
    """Grade ``tasks``, ``jobs`` at a time, with ``grade_one`` (a test passes a stand-in); results as they come."""
    if grade_one is None:
        from word2bert_grader.remote.harness import grade_in_own_process as grade_one
    limits = [deadline(task) for task in tasks]
    with pool(jobs) as workers:
        running = {workers.schedule(grade_one, (task,), timeout=limits[i]): (i, 1) for i, task in enumerate(tasks)}
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i, attempt = running.pop(future)
                result = _outcome(future, tasks[i], limits[i])
                if result is None and attempt < ATTEMPTS:
                    running[workers.schedule(grade_one, (tasks[i],), timeout=limits[i])] = (i, attempt + 1)
                else:
                    yield result or failed(tasks[i], DIED)


_POOL: ProcessPool | None = None
_POOL_LOCK = threading.Lock()


def grade_in_fork(task: Submission) -> Result:
    """On a Dask worker: grade in this worker's pool (a daemonic worker may not fork: a new interpreter, 2 s more)."""
    global _POOL
    from word2bert_grader.remote.harness import grade_in_own_process

    limit = deadline(task)
    if multiprocessing.current_process().daemon:
        return _grade_in_subprocess(task, limit)
    for _ in range(ATTEMPTS):
        with _POOL_LOCK:
            if _POOL is None or not _POOL.active:
                _POOL = pool(os.cpu_count() or 1)
            future = _POOL.schedule(grade_in_own_process, (task,), timeout=limit)
        result = _outcome(future, task, limit)
        if result is not None:
            return result
    return failed(task, DIED)


def _grade_in_subprocess(task: Submission, limit: float) -> Result:
    for _ in range(ATTEMPTS):
        try:
            harness = [sys.executable, "-m", "word2bert_grader.remote.harness"]
            run = subprocess.run(harness, input=task.model_dump_json().encode(), capture_output=True, timeout=limit)
        except subprocess.TimeoutExpired:  # subprocess.run has killed it; its sandbox dies with it
            return overtime(task, limit)
        if run.returncode == 0:
            return Result.checked(json.loads(run.stdout)) or failed(task, "the grader's process gave no result")
    return failed(task, f"the grader's process died {ATTEMPTS} times ({run.stderr.decode(errors='replace')[-300:]})")


def cluster(tasks: list[Submission], scheduler: str) -> Iterator[Result]:
    """A running Dask cluster (``dask scheduler`` and ``dask worker``s), at address ``scheduler``."""
    from distributed import Client, as_completed
    from distributed.scheduler import KilledWorker

    with Client(scheduler, timeout="30s") as client:
        keys = [f"grade-{'-'.join(task.key)}-{i}" for i, task in enumerate(tasks)]
        futures = {client.submit(grade_in_fork, t, pure=False, retries=0, key=k): t for t, k in zip(tasks, keys)}
        for future in as_completed(futures):
            task = futures[future]
            try:
                yield future.result()
            except KilledWorker:  # the scheduler moved it to another worker, and those died too
                yield failed(task, "the Dask workers grading it died (the scheduler's allowed-failures limit)")
            except Exception as error:
                yield failed(task, f"the grader failed: {type(error).__name__}: {str(error)[:300]}")
            future.release()
