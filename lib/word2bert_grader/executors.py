"""Where submissions are graded: a pool of local processes, or a Dask cluster.

A task is ``(student, assignment, submission bytes, source bytes, settings)``; its result is the dict
of :func:`word2bert_grader.harness.grade`. Nothing is shared but these values, so workers need no
folder of the course: a Dask worker only needs the project installed and bubblewrap.

Both executors run every submission in a fresh fork of a process that has imported torch already
(one per submission: no state of one submission's tests reaches the next), yield results as they
come, and never lose a submission: a task whose worker dies is tried again, and after
``ATTEMPTS`` deaths it comes back as a failed row with the reason.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import select
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

ATTEMPTS = 3  # deaths of the worker grading a submission before it is scored 0


def fork_pool(workers: int) -> ProcessPoolExecutor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "word2bert_grader.harness"])
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=context, max_tasks_per_child=1, initializer=_exit_with, initargs=(os.getpid(),)
    )


def _exit_with(owner: int) -> None:
    """In each pool process: exit when the process that owns the pool is gone. An idle pool process
    would otherwise outlive a killed owner (``make autograde`` or a Dask worker, killed) forever: it
    waits on a queue whose other end it holds itself, and the forkserver waits on it in turn."""
    try:
        handle = os.pidfd_open(owner)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):  # not Linux 5.3 or later: the owner's shutdown has to do
        return

    def watch() -> None:
        select.select([handle], [], [])  # readable once the owner has exited
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-owner", daemon=True).start()


def failed(task: tuple, reason: str) -> dict:
    from word2bert_grader.harness import failed_result

    return failed_result(task[0], task[1], task[3], reason, transient=True)


def local(tasks: list[tuple], jobs: int, grade_one=None) -> Iterator[dict]:
    """``jobs`` worker processes on this machine, each grading one task with ``grade_one`` (by default
    :func:`word2bert_grader.harness.grade_in_own_process`; a test passes a stand-in).

    A worker's death breaks the whole pool. The submissions that were not started yet go back in the queue;
    those being graded at that moment are graded again at the end, one at a time, where a death is their own
    (after ``ATTEMPTS`` of them, a failed row): one submission that kills its worker costs the others nothing."""
    todo, alone = list(enumerate(tasks)), []
    with tempfile.TemporaryDirectory(prefix="word2bert-started-") as started:
        while todo:
            pool = fork_pool(jobs)
            futures = {pool.submit(_started, started, i, task, grade_one): (i, task) for i, task in todo}
            todo, before = [], len(alone)
            for future in as_completed(futures):
                i, task = futures[future]
                try:
                    yield future.result()
                    before = -1  # progress
                except BrokenProcessPool:  # a worker died (killed, out of memory)
                    (alone if os.path.exists(os.path.join(started, str(i))) else todo).append((i, task))
                except Exception as error:  # a bug of the grader's: reported, never stops the batch
                    yield failed(task, f"the grader failed: {type(error).__name__}: {str(error)[:300]}")
                    before = -1
            pool.shutdown(wait=True, cancel_futures=True)
            if len(alone) == before:  # the pool broke before any task started: no round would do better
                alone, todo = alone + todo, []
    for _, task in alone:
        yield _alone(task, grade_one)


def _started(folder: str, i: int, task: tuple, grade_one=None) -> dict:
    """In a pool process: leave a mark that task ``i`` has started, then grade it."""
    from word2bert_grader.harness import grade_in_own_process

    open(os.path.join(folder, str(i)), "w", encoding="utf-8").close()
    return (grade_one or grade_in_own_process)(*task)


def _alone(task: tuple, grade_one=None) -> dict:
    """A submission whose worker died while grading it, graded again by itself in a pool of its own."""
    from word2bert_grader.harness import grade_in_own_process

    for _ in range(ATTEMPTS - 1):
        pool = fork_pool(1)
        try:
            return pool.submit(grade_one or grade_in_own_process, *task).result()
        except BrokenProcessPool:
            continue
        except Exception as error:
            return failed(task, f"the grader failed: {type(error).__name__}: {str(error)[:300]}")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return failed(task, f"the grader's worker process died {ATTEMPTS} times while grading it")


_POOL: ProcessPoolExecutor | None = None


def grade_in_fork(*task) -> dict:
    """On a Dask worker: grade in a fresh process, as the local pool does (one process per submission).

    A fork of a process that has imported torch already, where the worker may have children; a
    worker started by a nanny is daemonic and may not, and starts a new interpreter instead (about
    two seconds more: start workers with ``--no-nanny`` or DASK_DISTRIBUTED__WORKER__DAEMON=False).
    """
    global _POOL
    from word2bert_grader.harness import grade_in_own_process

    if multiprocessing.current_process().daemon:
        return _grade_in_subprocess(task)
    for _ in range(ATTEMPTS):
        if _POOL is None:
            _POOL = fork_pool(multiprocessing.cpu_count())
        try:
            return _POOL.submit(grade_in_own_process, *task).result()
        except BrokenProcessPool:
            _POOL = None
    return failed(task, f"the grader's process died {ATTEMPTS} times while grading it")


def _grade_in_subprocess(task: tuple) -> dict:
    student, assignment, submission, source, settings = task
    payload = json.dumps(
        {
            "task": [
                student,
                assignment,
                base64.b64encode(submission).decode(),
                base64.b64encode(source).decode(),
                settings,
            ]
        }
    )
    for _ in range(ATTEMPTS):
        run = subprocess.run(
            [sys.executable, "-m", "word2bert_grader.harness"], input=payload.encode(), capture_output=True, check=False
        )
        if run.returncode == 0:
            return json.loads(run.stdout)
    return failed(
        task,
        f"the grader's process died {ATTEMPTS} times while grading it ({run.stderr.decode(errors='replace')[-300:]})",
    )


def cluster(tasks: list[tuple], scheduler: str) -> Iterator[dict]:
    """A running Dask cluster (``dask scheduler`` and ``dask worker``s), at address ``scheduler``."""
    from distributed import Client, as_completed
    from distributed.scheduler import KilledWorker

    with Client(scheduler, timeout="30s") as client:
        futures = {
            client.submit(grade_in_fork, *task, pure=False, retries=0, key=f"grade-{task[0]}-{task[1]}-{i}"): task
            for i, task in enumerate(tasks)
        }
        for future in as_completed(futures):
            task = futures[future]
            try:
                yield future.result()
            except KilledWorker:  # the scheduler moved it to another worker, and those died too
                yield failed(
                    task,
                    f"the Dask workers grading it died (the scheduler's allowed-failures limit, {ATTEMPTS} by default)",
                )
            except Exception as error:
                yield failed(task, f"the grader failed: {type(error).__name__}: {str(error)[:300]}")
            future.release()
