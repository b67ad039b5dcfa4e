"""One confined process per submission: ``runner.py`` under bubblewrap (:mod:`.bwrap`, :mod:`.seccomp`, :mod:`.launch`)
in a cgroup (:mod:`.cgroups`), behind two pipes, one :mod:`.wire` frame per message with a deadline on each reply."""

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import psutil

from word2bert_grader.assignment import printable
from word2bert_grader.sandbox import bwrap, launch, wire
from word2bert_grader.sandbox.bwrap import Limits, Unavailable
from word2bert_grader.sandbox.cgroups import Cgroup
from word2bert_grader.sandbox.seccomp import seccomp_filter

__all__ = ["Limits", "Sandbox", "SandboxError", "SandboxTimeout", "Unavailable", "check_available"]


class SandboxError(Exception):
    """The sandbox did not answer: it died, overran its time, or sent something that is not a message."""


class SandboxTimeout(SandboxError):
    pass


@dataclass
class Sandbox:
    """A running runner.py, confined; ``request`` sends one message and waits for its reply."""

    limits: Limits = field(default_factory=Limits)
    unsafe: bool = False  # no bubblewrap: a separate process, but not confined (said loudly by the caller)
    process: subprocess.Popen | None = None
    generation: int = 0  # how many times it was started
    death: str = ""  # why it died, once it has
    started: bool = False  # the runner has answered its first request
    _cgroup: Cgroup | None = None

    def start(self) -> dict:
        self.close()
        self.generation, self.death = self.generation + 1, ""
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        runner = [sys.executable, "-E", "-s", f"{bwrap.INSIDE}/runner.py", str(to_child), str(from_child)]
        keep = [to_child, from_child]
        uid = None
        if self.unsafe:
            runner[3] = str(bwrap.HERE / "runner.py")
            argv = []
        else:
            try:
                uid = bwrap.sandbox_uid()
            except Unavailable as error:
                raise SandboxError(str(error)) from None
            argv = bwrap.bwrap_command(self.limits, staged=uid is not None)
        self._cgroup = Cgroup.create(self.limits)
        program = None if self.unsafe else seccomp_filter(uncounted=self._cgroup is None)
        if program is not None:
            rules, write_end = os.pipe()
            os.write(write_end, program)
            os.close(write_end)
            keep.append(rules)
            argv += ["--seccomp", str(rules)]
        argv += runner
        cmd = bwrap.launch_command(argv, self._cgroup.procs_files() if self._cgroup else [], uid)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        if self.unsafe:
            env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1", W2B_GRADING="1")  # as bwrap sets them
        pipes = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}
        cwd = "/" if not self.unsafe else None
        self.process = subprocess.Popen(cmd, pass_fds=keep, env=env, start_new_session=True, cwd=cwd, **pipes)
        for fd in keep:
            os.close(fd)
        os.set_blocking(from_parent, False)  # writes wait in select, with the request's deadline
        self._out, self._in, self._log = from_parent, to_parent, bytearray()
        threading.Thread(target=self._drain, args=(self.process.stdout,), daemon=True).start()
        if self._cgroup is None:
            threading.Thread(target=self._watch, args=(self.process,), daemon=True).start()
        self.started = False
        own = self.limits
        limits = dict(cpu=own.cpu_seconds, fsize=own.file_mb * 2**20, nofile=own.open_files, nproc=own.processes)
        reply, _ = self.request({"op": wire.Op.HELLO, "limits": limits}, timeout=120)
        self.started = True
        return reply

    def _drain(self, stream) -> None:
        """Keep the last 64 KB of what the sandbox wrote to its own stdout/stderr (for crash reports)."""
        for chunk in iter(lambda: stream.read1(65536), b""):
            self._log += chunk
            del self._log[:-65536]

    def _watch(self, process) -> None:
        """Where no cgroup could be made: the sandbox's memory and process count, sampled."""
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                break
            rss = 0
            for child in tree:
                with contextlib.suppress(psutil.Error):
                    rss += child.memory_info().rss
            if rss > self.limits.memory_mb * 2**20:
                self.death = f"used more than {self.limits.memory_mb} MB of memory"
                self.kill()
            elif len(tree) > self.limits.processes:
                self.death = f"started more than {self.limits.processes} processes"
                self.kill()
            time.sleep(0.1)

    def log(self) -> str:
        return bytes(self._log).decode("utf-8", errors="replace")

    def request(self, header: dict, tensors: dict | None = None, *, timeout: float = 30.0) -> tuple[dict, dict]:
        if self.process is None or self.process.poll() is not None:
            raise SandboxError(self.why_dead())
        deadline = time.monotonic() + timeout
        try:
            data = wire.frame_bytes(header, tensors)
        except TypeError as error:
            raise SandboxError(f"could not send the request: {error}") from None
        self._write(data, deadline, timeout)
        try:
            return wire.read_frame(lambda n: self._read(n, deadline, timeout), self.limits.max_message_mb * 2**20)
        except wire.WireError as error:
            self.kill()
            raise SandboxError(f"the sandbox sent something that is not a message ({error})") from None

    def _write(self, data: bytes, deadline: float, timeout: float) -> None:
        """Write a request, within the deadline: a sandbox that stops reading cannot block the grader."""
        view = memoryview(data)
        while view:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([], [self._out], [], wait)[1]:
                self.kill()
                self.death = f"ran past the {timeout:g} s limit (it stopped reading its requests)"
                raise SandboxTimeout(self.death)
            try:
                view = view[os.write(self._out, view[:65536]) :]
            except BlockingIOError:
                continue
            except OSError:
                raise SandboxError(self.why_dead()) from None

    def _read(self, n: int, deadline: float, timeout: float) -> bytes:
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([self._in], [], [], wait)[0]:
                self.kill()
                self.death = f"ran past the {timeout:g} s limit"
                raise SandboxTimeout(self.death)
            chunk = os.read(self._in, min(left, 1 << 20))
            if not chunk:
                raise SandboxError(self.why_dead())
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def why_dead(self) -> str:
        if self.death:
            return self.death
        if self.process is None:
            return "the sandbox is not running"
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.wait()
        if self._cgroup is not None and self._cgroup.out_of_memory():
            self.death = f"ran out of memory (the limit is {self.limits.memory_mb} MB)"
        elif code in (-signal.SIGSEGV, 128 + signal.SIGSEGV) or "Segmentation fault" in self.log():
            self.death = "the Python process crashed (a segmentation fault)"
        elif code == launch.JOIN_FAILED:
            self.death = "could not join the sandbox's cgroup"
        elif code == launch.STAGE_FAILED:
            self.death = "could not prepare the sandbox's user: " + printable(self.log().strip()[-300:])
        elif not self.started and "bwrap:" in self.log():  # before the runner answered: bubblewrap's own words
            self.death = "bubblewrap could not start: " + printable(self.log().strip().splitlines()[-1][:200])
        else:
            self.death = f"the Python process exited (code {code}), e.g. os._exit, a crash or a kill"
        return self.death

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
        if self._cgroup is not None:
            self._cgroup.kill()
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)  # reaped, so that poll() tells it is dead

    def close(self) -> None:
        """Kill everything inside and free the cgroup."""
        if self.process is not None:
            self.kill()
            self.process.wait()
            for fd in (self._out, self._in):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.process = None
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None


_UNSAFE = "--unsafe-no-sandbox grades without any confinement (read the instructors' page first)."


def check_available(limits: Limits | None = None) -> None:
    """Raise :class:`Unavailable`, naming the cause and the fix, where bubblewrap cannot sandbox."""
    if shutil.which("bwrap") is None:
        fix = "`make system-deps` (or `sudo apt-get install bubblewrap`)"
        raise Unavailable(f"bubblewrap (bwrap) is not installed; every submission runs in it.\nFix: {fix}. {_UNSAFE}")
    uid = bwrap.sandbox_uid()
    cmd = bwrap.launch_command([*bwrap.bwrap_command(limits or Limits(), staged=uid is not None), "/bin/true"], [], uid)
    run = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd="/")
    if run.returncode != 0:
        fix = "`sudo sysctl kernel.unprivileged_userns_clone=1` (Debian), `sudo sysctl user.max_user_namespaces=15000`,"
        fix += " or on Ubuntu 24.04 `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`; in a container, allow"
        fix += " user namespaces (e.g. docker --security-opt seccomp=unconfined)"
        why = f"bubblewrap cannot create the sandbox here: {run.stderr.strip()[:300]}\nThe usual cause is that "
        raise Unavailable(f"{why}unprivileged user namespaces are switched off. Fix: {fix}. {_UNSAFE}")
