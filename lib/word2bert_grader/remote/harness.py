"""Grade one submission: its code in a sandbox, the tests here, the verdicts from here alone (README.md, "The plan":
code cells in the sandbox, each test here right after on proxies; a cell that stops the sandbox costs what needs it)."""

import builtins
import contextlib
import io
import linecache
import resource
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field

import torch

from word2bert_grader.assignment import Kind, Step, printable, read_cells, valid_text
from word2bert_grader.outputs import feedback
from word2bert_grader.remote.proxy import SandboxFailure, Session, StudentError
from word2bert_grader.sandbox import wire
from word2bert_grader.sandbox.process import Sandbox, SandboxError, SandboxTimeout
from word2bert_grader.task import Result, Settings, Submission

MAX_OUTPUT_CHARS = 20_000  # per output of a cell, as nbgrader's LimitOutput
MAX_STUDENT_CELLS = 200  # cells of the student's own beyond the answers: more are not run
MAX_NOTES = 20


@dataclass
class Record:
    """What became of one step."""

    step: Step
    outputs: list[dict] = field(default_factory=list)  # the sandbox's outputs (student and set-up cells)
    failure: str = ""  # why the cell did not finish (time limit, crash)
    sandbox_passed: bool | None = None  # a test's visible half, run in the student's kernel
    passed: bool | None = None  # a test's trusted verdict
    message: str = ""  # why the test failed
    test_output: str = ""  # what a visible test printed
    wrote_stderr: bool = False
    # failed on the sandbox (a crash, a time limit, a value the grader cannot read), not on a value: no tampering
    sandbox_failed: bool = False


class _Overtime(BaseException):
    pass


def grade(task: Submission) -> Result:
    """The whole grading of one submission (see the module docstring)."""
    config, assignment = task.settings, task.assignment
    start = time.perf_counter()
    result = Result.failed(task.student, assignment, "")
    try:
        cells = read_cells(task.notebook)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        result.failure = f"not a valid notebook ({type(error).__name__}: {str(error)[:200]})"
        result.feedback = feedback.failure_page(result) if config.feedback else ""
        return result.valid()
    plan = assignment.plan(cells)
    result.notes += plan.notes
    records = [Record(step) for step in plan.steps]
    sandbox = Sandbox(config.limits, config.unsafe)
    limit = config.backstop(assignment)
    main = threading.current_thread() is threading.main_thread()  # signals only there (not in a Dask thread)
    if main:
        previous = signal.signal(signal.SIGALRM, _overtime)
        signal.alarm(int(limit))
    try:
        try:
            grader = _Grader(config, sandbox, records)
            grader.run(plan.contract)
        except SandboxError as error:  # the sandbox could not even start
            result.failure = f"the sandbox could not start: {error}"
        finally:
            sandbox.close()
        _score(result, records, assignment.points)
        sanitizer = feedback.Sanitizer()
        sanitizer.outputs(records)
        if config.feedback:
            failed = result.failure
            result.feedback = feedback.failure_page(result) if failed else feedback.page(result, records, sanitizer)
        result.autograded = feedback.graded_notebook(assignment.cells, records)
    except _Overtime:
        result.cells, result.autograded = dict.fromkeys(result.cells, 0.0), ""
        result.score, result.transient = 0.0, True
        result.failure = f"grading took longer than {limit:g} s in all"  # a loaded machine, perhaps: next run again
        result.feedback = feedback.failure_page(result) if config.feedback else ""
    finally:
        if main:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        sandbox.close()
    result.seconds = time.perf_counter() - start
    return result.valid()


def _score(result: Result, records: list[Record], points: dict[str, float]) -> None:
    """Scores, notes and the tampering verdicts of a run, into ``result``."""
    for r in records:
        s = r.step
        if s.kind is Kind.WRITTEN:
            result.answers[s.grade_id] = s.source
        if s.kind is Kind.TEST and r.passed:
            result.cells[s.grade_id] = points.get(s.grade_id, 0.0)
        line = next((x for x in s.source.strip().splitlines() if x.strip()), "")
        label = s.grade_id or f"a cell of yours ({line[:40]}{'...' * (len(line) > 40)})"
        if r.failure:
            result.notes.append(f"cell {label} {r.failure}")
        if r.wrote_stderr:
            result.notes.append(f"your code wrote to stderr during {s.grade_id} (warnings are not counted against you)")
        # tampering: the kernel passed this whole test (no hidden part) on the values tested here, and here it failed
        # on an ordinary assertion or error (not on a crash, a time limit or a value the grader could not read)
        visible_only = s.visible == s.source
        if s.kind is Kind.TEST and r.sandbox_passed and r.passed is False and visible_only and not r.sandbox_failed:
            result.tampering.append(f"{s.grade_id} passed in your notebook's kernel but failed in the grader")
        truncated = sum("characters, cut" in o.get("text", "") for o in r.outputs)
        if truncated:
            result.notes.append(f"cell {label} printed too much: output truncated")
    if len(result.notes) > MAX_NOTES:
        result.notes[MAX_NOTES:] = [f"... and {len(result.notes) - MAX_NOTES} more"]
    result.notes = [printable(n) for n in result.notes]
    if result.failure:
        result.cells = dict.fromkeys(points, 0.0)
    result.score = sum(result.cells.values())
    if result.tampering:
        result.notes.append("tampering suspected: " + "; ".join(result.tampering))


def grade_in_own_process(task: Submission) -> Result:
    """:func:`grade`, under a soft data limit (a result that needs gigabytes in the tests fails, not the machine)."""
    cap, hard = task.settings.limits.grader_mb * 2**20, resource.getrlimit(resource.RLIMIT_DATA)[1]
    if cap:
        resource.setrlimit(resource.RLIMIT_DATA, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    return grade(task)


def _overtime(signum, frame):
    raise _Overtime


class _Grader:
    def __init__(self, config: Settings, sandbox: Sandbox, records: list[Record]):
        self.config, self.sandbox, self.records = config, sandbox, records
        self.ran: list[Record] = []  # cells that finished in the sandbox: replayed after a restart
        # restarts; cells sent (a test's names are bound after them); own cells and seconds; seconds of replays
        self.restarts, self.cells_run, self.own_cells, self.own_seconds, self.replayed = 0, 0, 0, 0.0, 0.0

    def start(self) -> None:
        """Start (or restart) the sandbox and replay the cells that finished before (Settings.replay_seconds in all)."""
        while True:
            if self.restarts > self.config.max_restarts:
                raise SandboxFailure(f"your code stopped the sandbox {self.restarts} times: nothing more is run")
            if self.replayed >= self.config.replay_seconds:
                replays = f"running your cells again after each took more than {self.config.replay_seconds:g} s in all"
                why = f"your code stopped the sandbox {self.restarts} times, and {replays}: nothing more is run"
                raise SandboxFailure(why)
            if self.sandbox.generation:
                self.restarts += 1
            self.sandbox.start()
            began = time.monotonic()
            try:
                for record in list(self.ran):
                    cell = {"op": wire.Op.RUN_CELL, "source": _sandboxed(record.step)}
                    limit = self.config.limit(record.step.grade_id)
                    left = self.config.replay_seconds - self.replayed - (time.monotonic() - began)
                    try:
                        self.sandbox.request(cell, timeout=min(limit, left))
                    except SandboxTimeout:
                        if left >= limit:
                            raise
                        self.sandbox.kill()  # the budget ran out (not the cell): a half-replayed sandbox is no use
                        self.replayed = self.config.replay_seconds
                        break
                else:
                    return
            except SandboxError as error:  # a cell that finished before did not this time
                record.failure = record.failure or _why(error)
                self.ran.remove(record)
            finally:
                self.replayed += time.monotonic() - began

    def run(self, contract: list[str]) -> None:
        """Every cell in notebook order: code in the sandbox, each test here right after its visible half."""
        session = Session(self.sandbox, restart=self.start)
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        torch.set_num_threads(1)
        bound = None  # (sandbox generation, cells run) when the contract's names were last bound
        for record in self.records:
            step = record.step
            if not step.kind.runs:  # text
                continue
            if step.kind is Kind.SETUP:  # the source's read-only cells run in the grader's namespace too
                quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
                with quiet[0], quiet[1], contextlib.suppress(Exception):  # a broken one fails the tests that need it
                    exec(compile(step.source, f"<{step.grade_id}>", "exec"), namespace)
            self.run_cell(record)
            if step.kind is Kind.TEST:
                bound = self.test(record, session, namespace, contract, bound)

    def run_cell(self, record: Record) -> None:
        """One cell in the sandbox (a test's visible half), within its limit."""
        step = record.step
        limit = self.config.limit(step.grade_id)
        if step.kind is Kind.STUDENT:  # scratch work: bounded in number and in total time
            self.own_cells += 1
            limit = min(limit, self.config.student_seconds - self.own_seconds)
            if self.own_cells > MAX_STUDENT_CELLS or limit <= 0:
                limits = f"{MAX_STUDENT_CELLS} and {self.config.student_seconds:g} s in all"
                record.failure = f"was not run: your own cells beyond the answers are limited to {limits}"
                return
        try:
            if self.sandbox.process is None or self.sandbox.process.poll() is not None:
                self.start()
        except SandboxFailure as error:
            record.failure = f"was not run: {error}"
            return
        started = time.monotonic()
        self.cells_run += 1
        try:
            reply, _ = self.sandbox.request({"op": wire.Op.RUN_CELL, "source": _sandboxed(step)}, timeout=limit)
        except SandboxError as error:
            record.failure = _why(error)
            return
        finally:
            if step.kind is Kind.STUDENT:
                self.own_seconds += time.monotonic() - started
        self.ran.append(record)
        record.outputs = _outputs(reply.get("outputs"))
        if step.kind is Kind.TEST:
            record.sandbox_passed = reply.get("error") is None

    def test(self, record: Record, session: Session, namespace: dict, contract: list[str], bound):
        """One test cell, whole, here; returns when the names were bound (see :meth:`run`)."""
        step, out, err = record.step, io.StringIO(), io.StringIO()
        session.limit = self.config.limit(step.grade_id)
        session.deadline = time.monotonic() + session.limit
        try:
            if bound != (session.generation, self.cells_run) or session.sandbox.process is None:
                session.ensure_running()
                for name in contract:  # a name the student did not define is not bound at all
                    namespace.pop(name, None)
                namespace.update(session.names(contract))
                bound = (session.generation, self.cells_run)
            code = _compile_test(step)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(code, namespace)
            record.passed = True
        except SandboxFailure as error:  # a crash, a time limit or an unreadable value (UnreadableFailure)
            record.passed, record.message, record.sandbox_failed = False, str(error), True
        except Exception as error:
            record.passed, record.message = False, _failure_message(error, step)
        record.test_output = _cap(out.getvalue()) if step.visible == step.source else ""
        record.wrote_stderr = bool(err.getvalue())
        return bound


def _sandboxed(step: Step) -> str:
    return step.visible if step.kind is Kind.TEST else step.source


def _why(error: SandboxError) -> str:
    if isinstance(error, SandboxTimeout):
        return f"{error} (an infinite loop?): its own tests get nothing, the rest is graded"
    return f"stopped the sandbox ({error}): the rest is graded"


def _compile_test(step: Step):
    name = f"<{step.grade_id}>"
    if step.visible == step.source:  # no hidden part: its lines may appear in tracebacks
        linecache.cache[name] = (len(step.source), None, step.source.splitlines(True), name)
    return compile(step.source, name, "exec")


def _failure_message(error: Exception, step: Step) -> str:
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, StudentError) and error.student_traceback:
        text += "\n\nIn your code:\n" + error.student_traceback
    elif step.visible == step.source:  # a visible test: where it failed
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == f"<{step.grade_id}>"]
        if frames:
            text = "".join(traceback.format_list(frames)) + text
    return _cap(text, 8000)


def _outputs(outputs) -> list[dict]:
    """The sandbox's outputs of a cell, as plain, capped data (it may send anything)."""
    kept = []
    for o in outputs if type(outputs) is list else []:
        if type(o) is not dict:
            continue
        if o.get("type") == "stream" and o.get("name") in ("stdout", "stderr"):
            kept.append({"type": "stream", "name": o["name"], "text": _cap(str(o.get("text", "")))})
        elif o.get("type") == "display" and type(o.get("data")) is dict:
            shown = {"text/plain": MAX_OUTPUT_CHARS, "text/html": MAX_OUTPUT_CHARS, "image/png": 2_000_000}
            data = {k: _cap(str(v), shown[k]) for k, v in o["data"].items() if k in shown}
            kept.append({"type": "display", "data": data})
    return kept[:50]


def _cap(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Student text as the grader keeps it: valid, and at most ``limit`` characters."""
    return valid_text(wire.cap(text, limit))


def main() -> None:
    """``python -m word2bert_grader.remote.harness``: a task as JSON on stdin, its result as JSON on stdout."""
    import sys

    sys.stdout.write(grade_in_own_process(Submission.model_validate_json(sys.stdin.buffer.read())).model_dump_json())


if __name__ == "__main__":
    main()
