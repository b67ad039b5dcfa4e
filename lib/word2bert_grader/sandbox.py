"""One confined process per submission: bubblewrap namespaces, cgroup limits, a data-only pipe.

The student's code runs in ``runner.py`` under bubblewrap (Debian's ``bubblewrap``):

- new user, pid, network, ipc, uts and mount namespaces, ``--die-with-parent``, a new session and a
  cleared environment: it cannot see or signal other processes, reach any network (loopback
  included), or outlive the grader;
- the student's uid (65534 inside) is never host root: bubblewrap maps it to the uid that starts it, so
  where the grader runs as root, :mod:`word2bert_grader.launch` starts it as an unprivileged uid of this
  sandbox's own (``SANDBOX_UIDS``), which also gives it per-user kernel quotas of its own;
- ``/proc`` as container runtimes leave it: what changes the host (``/proc/sys``, ``/proc/sysrq-trigger``...)
  read-only, what exposes the kernel (``/proc/kcore``, ``/proc/keys``...) hidden;
- the system, the Python installation and the virtual environment read-only; nothing else of the
  host: not the course folder (solutions, gradebooks, submissions), not ``$HOME``, not the grader's
  code. ``/home/student`` (its working directory and home), ``/tmp`` and ``/dev/shm`` are empty size-capped tmpfs;
- a seccomp filter: the system calls container escapes go through (mounts, namespaces, kernel
  keys and modules, eBPF, io_uring, perf, userfaultfd, ptrace) fail with EPERM, and so do those that take from a
  quota of the whole machine rather than of a user (Linux AIO contexts, ``fs.aio-max-nr``); pseudo-terminals,
  another such quota (``kernel.pty.max``), cannot be opened; nor can sockets of a virtual machine's channel to its
  host (``AF_VSOCK``), which no network namespace isolates;
- limits: memory and processes by cgroup (v1 or v2, where this user may create one; otherwise a
  watchdog that samples the resident set and the process count), CPU time, file size and open files
  by hard rlimits that the runner sets on itself before any student code runs;
- killing the bubblewrap process ends the pid namespace, so every process inside dies with it,
  daemons included.

The grader talks to it through two pipes, one :mod:`wire` frame per message, with a deadline on
every reply. Nothing it sends back is trusted: see :mod:`word2bert_grader.proxy`.

This module runs the process and its pipes; the confinement's parts are their own modules:
:mod:`word2bert_grader.bwrap` (the limits, the uid, bubblewrap's command line), :mod:`word2bert_grader.seccomp`
and :mod:`word2bert_grader.cgroups`.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from word2bert_grader import launch, wire
from word2bert_grader.bwrap import (
    HERE,
    INSIDE,
    Limits,
    Unavailable,
    bwrap_command,
    launch_command,
    rlimits,
    sandbox_uid,
)
from word2bert_grader.cgroups import Cgroup
from word2bert_grader.seccomp import seccomp_filter

__all__ = ["Limits", "Sandbox", "SandboxError", "SandboxTimeout", "Unavailable", "check_available", "printable"]


class SandboxError(Exception):
    """The sandbox did not answer: it died, overran its time, or sent something that is not a message."""


class SandboxTimeout(SandboxError):
    pass


def printable(text: str) -> str:
    """Text from student code, safe for a terminal and a CSV: no control characters or escapes."""
    return "".join(c if c.isprintable() or c in "\n\t" else "?" for c in text)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat", encoding="utf-8").read()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


@dataclass
class Sandbox:
    """A running runner.py, confined; ``request`` sends one message and waits for its reply."""

    limits: Limits = field(default_factory=Limits)
    unsafe: bool = False  # no bubblewrap: a separate process, but not confined (said loudly by the caller)
    process: subprocess.Popen | None = None
    generation: int = 0  # how many times it was started
    death: str = ""  # why it died, once it has
    watchdog_note: str = ""
    started: bool = False  # the runner has answered its first request
    _cgroup: Cgroup | None = None

    def start(self) -> dict:
        self.close()
        self.generation += 1
        self.death = ""
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        runner = [sys.executable, "-E", "-s", f"{INSIDE}/runner.py", str(to_child), str(from_child)]
        keep = [to_child, from_child]
        uid = None
        if self.unsafe:
            runner[3] = str(HERE / "runner.py")
            argv = runner
        else:
            try:
                uid = sandbox_uid()
            except Unavailable as error:
                raise SandboxError(str(error)) from None
            argv = bwrap_command(self.limits, staged=uid is not None)
            program = seccomp_filter()
            if program is not None:
                rules, write_end = os.pipe()
                os.write(write_end, program)
                os.close(write_end)
                keep.append(rules)
                argv += ["--seccomp", str(rules)]
            argv += runner
        self._cgroup = Cgroup.create(self.limits)
        cmd = launch_command(argv, self._cgroup.procs_files() if self._cgroup else [], uid)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        if self.unsafe:
            env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1", W2B_GRADING="1")  # as bwrap_command sets them
        self.process = subprocess.Popen(
            cmd,
            pass_fds=keep,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            cwd="/" if not self.unsafe else None,
        )
        for fd in keep:
            os.close(fd)
        os.set_blocking(from_parent, False)  # writes wait in select, with the request's deadline
        self._out = from_parent
        self._in = to_parent
        self._log = bytearray()
        threading.Thread(target=self._drain, args=(self.process.stdout,), daemon=True).start()
        if self._cgroup is None:
            self.watchdog_note = "no cgroup available: memory and processes watched by sampling"
            threading.Thread(target=self._watch, args=(self.process,), daemon=True).start()
        self.started = False
        reply, _ = self.request({"op": wire.Op.HELLO, "limits": rlimits(self.limits)}, timeout=120)
        self.started = True
        return reply

    def _drain(self, stream) -> None:
        """Keep the last 64 KB of what the sandbox wrote to its own stdout/stderr (for crash reports)."""
        for chunk in iter(lambda: stream.read1(65536), b""):
            self._log += chunk
            del self._log[:-65536]

    def _watch(self, process) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while process.poll() is None:
            pids = _descendants(process.pid)
            rss = 0
            for pid in pids:
                try:
                    rss += int(open(f"/proc/{pid}/statm", encoding="utf-8").read().split()[1]) * page
                except (OSError, ValueError, IndexError):
                    pass
            if rss > self.limits.memory_mb * 2**20:
                self.death = f"used more than {self.limits.memory_mb} MB of memory"
                self.kill()
            elif len(pids) > self.limits.processes:
                self.death = f"started more than {self.limits.processes} processes"
                self.kill()
            time.sleep(0.1)

    def log(self) -> str:
        return bytes(self._log).decode("utf-8", errors="replace")

    def request(self, header: dict, tensors: dict | None = None, timeout: float = 30.0) -> tuple[dict, dict]:
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
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass
        if self._cgroup is not None:
            self._cgroup.kill()
        if self.process is not None:
            try:
                self.process.wait(timeout=10)  # reaped, so that poll() tells it is dead
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        """Kill everything inside and free the cgroup."""
        if self.process is not None:
            self.kill()
            self.process.wait()
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.process = None
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None


def check_available(limits: Limits | None = None) -> None:
    """Raise :class:`Unavailable`, naming the cause and the fix, where bubblewrap cannot sandbox."""
    if shutil.which("bwrap") is None:
        raise Unavailable(
            "bubblewrap (bwrap) is not installed, and the grader runs every submission in it.\n"
            "Fix: `make system-deps` (or `sudo apt-get install bubblewrap`). To grade without any "
            "confinement anyway, pass --unsafe-no-sandbox (read the instructors' page first)."
        )
    uid = sandbox_uid()
    cmd = launch_command([*bwrap_command(limits or Limits(), staged=uid is not None), "/bin/true"], [], uid)
    run = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd="/")
    if run.returncode != 0:
        raise Unavailable(
            f"bubblewrap cannot create the sandbox here: {run.stderr.strip()[:300]}\n"
            "The usual cause is that unprivileged user namespaces are switched off. Fix: "
            "`sudo sysctl kernel.unprivileged_userns_clone=1` (Debian), "
            "`sudo sysctl user.max_user_namespaces=15000`, or on Ubuntu 24.04 "
            "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`; inside a container, run it "
            "with user namespaces allowed (e.g. docker --security-opt seccomp=unconfined). "
            "--unsafe-no-sandbox grades without confinement (read the instructors' page first)."
        )
