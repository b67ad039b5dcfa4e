"""Where submissions are graded: a pool of local processes, or a Dask cluster.

A task is a :class:`~task.Submission`; its result, the
:class:`~task.Result` of :func:`remote.harness.grade`. Nothing is shared but these
values, so workers need no folder of the course: a Dask worker only needs the project installed and bubblewrap.

Both executors run every submission in a fresh fork of a process that has imported torch already
(one per submission: no state of one submission's tests reaches the next), yield results as they
come, and never lose a submission: a task whose worker dies is tried again, and after
``ATTEMPTS`` deaths it comes back as a failed row with the reason. Each task has a wall-clock limit
(:func:`deadline`): a worker still grading past it is killed, and its submission gets a failed row
that says so. The grader's own time limit (``harness.backstop``) ends a slow grading before that; this
one ends a process stuck where no signal reaches Python (a C call that does not return).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from word2bert_grader.task import Result, Submission

ATTEMPTS = 3  # deaths of the worker grading a submission before it is scored 0
MARGIN = 120  # seconds past the grader's own limit for a whole submission before its worker is killed


def deadline(task: Submission) -> float:
    """Seconds task ``task`` may take in all, on any executor."""
    from word2bert_grader import assignment as notebook
    from word2bert_grader.remote import harness

    return harness.backstop(notebook.read_cells(task.source), task.settings) + MARGIN


def overtime(task: Submission, limit: float) -> Result:
    """The row of a submission whose grading was stopped at its wall-clock limit (kept: the next run would only
    be stopped again)."""
    return Result.failed(
        task.student, task.assignment, task.source, f"grading was stopped after {limit:g} s, its limit in all"
    )


def _kill(pids) -> None:
    """Kill grading processes, and free their sandboxes' cgroups (their own clean-up never runs)."""
    from word2bert_grader.sandbox.cgroups import Cgroup

    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in pids:
        Cgroup.remove_orphans(pid)


def fork_pool(workers: int) -> ProcessPoolExecutor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "word2bert_grader.remote.harness"])
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


def failed(task: Submission, reason: str) -> Result:
    return Result.failed(task.student, task.assignment, task.source, reason, transient=True)


def local(tasks: list[Submission], jobs: int, grade_one=None) -> Iterator[Result]:
    """``jobs`` worker processes on this machine, each grading one task with ``grade_one`` (by default
    :func:`remote.harness.grade_in_own_process`; a test passes a stand-in).

    A worker's death breaks the whole pool. The submissions that were not started yet go back in the queue;
    those being graded at that moment are graded again at the end, one at a time, where a death is their own
    (after ``ATTEMPTS`` of them, a failed row): one submission that kills its worker costs the others nothing.
    A worker past its task's :func:`deadline` is killed the same way, and its task gets the row of
    :func:`overtime`."""
    todo, alone, stopped = list(enumerate(tasks)), [], set()
    limits = {i: deadline(task) for i, task in todo}
    with tempfile.TemporaryDirectory(prefix="word2bert-started-") as started:
        while todo:
            pool = fork_pool(jobs)
            futures = {pool.submit(_started, started, i, task, grade_one): (i, task) for i, task in todo}
            todo, before, pending = [], len(alone), set(futures)
            while pending:
                done, pending = wait(pending, timeout=5, return_when=FIRST_COMPLETED)
                for future in done:
                    i, task = futures[future]
                    try:
                        yield future.result()
                        before = -1  # progress
                    except BrokenProcessPool:  # a worker died (killed, out of memory, or stopped below)
                        if i in stopped:
                            yield overtime(task, limits[i])
                        else:
                            (alone if os.path.exists(os.path.join(started, str(i))) else todo).append((i, task))
                    except Exception as error:  # a bug of the grader's: reported, never stops the batch
                        yield failed(task, f"the grader failed: {type(error).__name__}: {str(error)[:300]}")
                        before = -1
                late = _late(started, {futures[f][0] for f in pending}, limits)
                stopped |= set(late)
                _kill(late.values())
            pool.shutdown(wait=True, cancel_futures=True)
            if len(alone) == before:  # the pool broke before any task started: no round would do better
                alone, todo = alone + todo, []
    for i, task in alone:
        yield _alone(task, limits[i], grade_one)


def _late(folder: str, running: set[int], limits: dict[int, float]) -> dict[int, int]:
    """task -> pid of each running task past its limit (from the marks :func:`_started` leaves)."""
    late = {}
    for i in running:
        mark = os.path.join(folder, str(i))
        try:
            if time.time() - os.stat(mark).st_mtime > limits[i]:
                late[i] = int(open(mark, encoding="utf-8").read())
        except (OSError, ValueError):
            continue
    return late


def _started(folder: str, i: int, task: Submission, grade_one=None) -> Result:
    """In a pool process: leave a mark that task ``i`` has started (when, by whom), then grade it."""
    from word2bert_grader.remote.harness import grade_in_own_process

    with open(os.path.join(folder, str(i)), "w", encoding="utf-8") as mark:
        mark.write(str(os.getpid()))
    return (grade_one or grade_in_own_process)(task)


def _alone(task: Submission, limit: float, grade_one=None) -> Result:
    """A submission whose worker died while grading it, graded again by itself in a pool of its own."""
    from word2bert_grader.remote.harness import grade_in_own_process

    for _ in range(ATTEMPTS - 1):
        pool = fork_pool(1)
        try:
            return pool.submit(grade_one or grade_in_own_process, task).result(timeout=limit)
        except FutureTimeout:
            _kill(list(pool._processes))
            return overtime(task, limit)
        except BrokenProcessPool:
            continue
        except Exception as error:
            return failed(task, f"the grader failed: {type(error).__name__}: {str(error)[:300]}")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return failed(task, f"the grader's worker process died {ATTEMPTS} times while grading it")


_POOL: ProcessPoolExecutor | None = None


def grade_in_fork(task: Submission) -> Result:
    """On a Dask worker: grade in a fresh process, as the local pool does (one process per submission).

    A fork of a process that has imported torch already, where the worker may have children; a
    worker started by a nanny is daemonic and may not, and starts a new interpreter instead (about
    two seconds more: start workers with ``--no-nanny`` or DASK_DISTRIBUTED__WORKER__DAEMON=False).
    """
    global _POOL
    from word2bert_grader.remote.harness import grade_in_own_process

    limit = deadline(task)
    if multiprocessing.current_process().daemon:
        return _grade_in_subprocess(task, limit)
    for _ in range(ATTEMPTS):
        if _POOL is None:
            _POOL = fork_pool(multiprocessing.cpu_count())
        future = _POOL.submit(grade_in_own_process, task)
        try:
            return future.result(timeout=limit)
        except FutureTimeout:
            # which pool process holds it is not known here: all of them go, and their other tasks (in other
            # threads of this worker) die with BrokenProcessPool and are tried again
            _kill(list(_POOL._processes))
            _POOL = None
            return overtime(task, limit)
        except BrokenProcessPool:
            _POOL = None
    return failed(task, f"the grader's process died {ATTEMPTS} times while grading it")


def _grade_in_subprocess(task: Submission, limit: float) -> Result:
    payload = json.dumps({"task": task.to_json()})
    for _ in range(ATTEMPTS):
        try:
            run = subprocess.run(
                [sys.executable, "-m", "word2bert_grader.remote.harness"],
                input=payload.encode(),
                capture_output=True,
                check=False,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:  # subprocess.run has killed it; its sandbox dies with it
            return overtime(task, limit)
        if run.returncode == 0:
            return Result.from_json(json.loads(run.stdout)) or failed(task, "the grader's process gave no result")
    return failed(
        task,
        f"the grader's process died {ATTEMPTS} times while grading it ({run.stderr.decode(errors='replace')[-300:]})",
    )


def cluster(tasks: list[Submission], scheduler: str) -> Iterator[Result]:
    """A running Dask cluster (``dask scheduler`` and ``dask worker``s), at address ``scheduler``."""
    from distributed import Client, as_completed
    from distributed.scheduler import KilledWorker

    with Client(scheduler, timeout="30s") as client:
        futures = {
            client.submit(
                grade_in_fork, task, pure=False, retries=0, key=f"grade-{task.student}-{task.assignment}-{i}"
            ): task
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
