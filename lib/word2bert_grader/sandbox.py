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
"""

from __future__ import annotations

import json
import os
import pwd
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from word2bert_grader import launch, wire

HERE = Path(__file__).resolve().parent
INSIDE = "/opt/word2bert-sandbox"  # where runner.py and wire.py are mounted
SCRATCH = "/home/student"  # the submission's working directory and $HOME
CGROUP = Path("/sys/fs/cgroup")
CPU_PERIOD = 100_000  # microseconds: the window of a cgroup's CPU quota
# Host uids for sandboxes started by root: one each (the start plus the grading process's pid, unique while it
# runs), above systemd's container ranges and below its "foreign" range, so no account's.
SANDBOX_UIDS = range(0x70000000, 0x70000000 + 2**22)
# /proc as runc leaves it: read-only where a write changes the host, hidden where a read exposes the kernel.
PROC_READ_ONLY = ("bus", "fs", "irq", "sys", "sysrq-trigger")
PROC_MASKED = (
    "acpi",
    "asound",
    "interrupts",
    "kcore",
    "keys",
    "latency_stats",
    "sched_debug",
    "scsi",
    "timer_list",
    "timer_stats",
)


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Times are enforced by the grader, per request."""

    memory_mb: int = 2048
    cpus: int = 1  # cores it may keep busy, where the cgroup's cpu controller is ours (so it cannot starve a classmate)
    processes: int = 128  # processes and threads
    cpu_seconds: int = 900
    file_mb: int = 64  # largest file it may write
    scratch_mb: int = 256  # each of /work, /tmp and /dev/shm
    open_files: int = 256
    max_message_mb: int = 256  # largest reply read from it
    grader_mb: int = 2048  # the grader's own process testing it (about 0.5 GB at most for honest work); 0: no cap


class SandboxError(Exception):
    """The sandbox did not answer: it died, overran its time, or sent something that is not a message."""


class SandboxTimeout(SandboxError):
    pass


class Unavailable(RuntimeError):
    """This machine cannot sandbox (no bubblewrap, no user namespaces): the message says how to fix it."""


def sandbox_uid() -> int | None:
    """The unprivileged host uid this process's sandbox runs as, where the grader is root; None otherwise
    (bubblewrap then maps the student to the grader's own uid, which is not root)."""
    if os.geteuid() != 0:
        return None
    uid = SANDBOX_UIDS.start + os.getpid()
    try:
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        return uid
    raise Unavailable(f"host uid {uid}, meant for a sandbox, belongs to the account {owner}: grade as another user")


def private_paths() -> list[Path]:
    """What the sandbox shows of this installation besides the system: Python, the virtual environment, the
    runner and its wire protocol (where the grader is root, :mod:`launch` stages them for the sandbox's user)."""
    venv, base = Path(sys.prefix), Path(sys.base_prefix)
    return [*sorted({base, venv}), HERE / "runner.py", HERE / "wire.py"]


def bwrap_command(limits: Limits, staged: bool = False) -> list[str]:
    """bubblewrap's arguments, up to the program it runs; ``staged``: the private paths are bound from
    :mod:`launch`'s staging folder instead of from where they are."""
    venv = Path(sys.prefix)
    mb = 2**20
    cmd = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv",
        "PATH",
        f"{venv}/bin:/usr/bin:/bin",
        "--setenv",
        "HOME",
        SCRATCH,
        "--setenv",
        "MPLBACKEND",
        "Agg",
        "--setenv",
        "MPLCONFIGDIR",
        "/tmp",
        "--setenv",
        "OMP_NUM_THREADS",
        "1",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--ro-bind",  # no pseudo-terminals: their number is a quota of the whole machine (kernel.pty.max)
        "/dev/null",
        "/dev/pts/ptmx",
    ]
    for name in PROC_READ_ONLY:  # only what this kernel has: a mount point must exist
        if os.path.exists(f"/proc/{name}"):
            cmd += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in PROC_MASKED:
        path = f"/proc/{name}"
        if os.path.isdir(path):
            cmd += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            cmd += ["--ro-bind", "/dev/null", path]
    # The writable places first: a mount made later would hide a read-only bind beneath it.
    for path in ("/dev/shm", "/tmp", SCRATCH):
        cmd += ["--size", str(limits.scratch_mb * mb), "--tmpfs", path]
    for path in (
        "/usr",
        "/bin",
        "/lib",
        "/lib64",
        "/lib32",
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
        "/etc/fonts",
        "/etc/localtime",
    ):
        cmd += ["--ro-bind-try", path, path]
    destinations = [*map(str, private_paths()[:-2]), f"{INSIDE}/runner.py", f"{INSIDE}/wire.py"]
    for i, (source, destination) in enumerate(zip(private_paths(), destinations)):
        cmd += ["--ro-bind", f"{launch.STAGE}/{i}" if staged else str(source), destination]
    cmd += ["--remount-ro", "/"]  # the sandbox's own root: no uncapped writes outside the scratch folders
    return [*cmd, "--chdir", SCRATCH]


def launch_command(argv: list[str], cgroups: list[str], uid: int | None) -> list[str]:
    """The command that runs ``argv`` (bubblewrap's, or the runner's without it) through :mod:`launch`: in
    ``cgroups``, and as ``uid`` (None: this process's user) with the private paths staged for it."""
    spec = {"cgroups": cgroups, "uid": uid, "stage": [str(p) for p in private_paths()], "argv": argv}
    return [sys.executable, "-I", "-S", str(HERE / "launch.py"), json.dumps(spec)]


# System calls student code has no use for, that container escapes go through: kernel modules and keys, mounts
# and namespaces, eBPF, io_uring, perf, userfaultfd, handles to other file systems' files, other processes'
# memory; inotify, whose instances are a per-user quota; and Linux AIO, whose contexts are a quota of the whole
# machine (one sandbox could take all of fs.aio-max-nr). Numbers per architecture: (x86_64, aarch64).
_SYSCALLS = {
    "ptrace": (101, 117),
    "pivot_root": (155, 41),
    "mount": (165, 40),
    "umount2": (166, 39),
    "reboot": (169, 142),
    "init_module": (175, 105),
    "delete_module": (176, 106),
    "io_setup": (206, 0),
    "kexec_load": (246, 104),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "inotify_init": (253, None),
    "unshare": (272, 97),
    "inotify_init1": (294, 26),
    "perf_event_open": (298, 241),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    "setns": (308, 268),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "finit_module": (313, 273),
    "kexec_file_load": (320, 294),
    "bpf": (321, 280),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
}
_ARCHITECTURES = {"x86_64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1)}  # AUDIT_ARCH_*, column of _SYSCALLS
# socket() of the virtual machine's channel to its host (AF_VSOCK): no network namespace isolates it, so a sandbox
# in a VM could reach the host's services through it (Docker's default profile refuses it too)
_SOCKET, AF_VSOCK = (41, 198), 40


def seccomp_filter() -> bytes | None:
    """A classic-BPF seccomp program (for ``bwrap --seccomp``) that fails the calls above, and socket(AF_VSOCK, ...),
    with EPERM.

    Other architectures of this machine's kernel (x32 on x86_64, 32-bit ARM) are killed outright.
    """
    machine = os.uname().machine
    if machine not in _ARCHITECTURES:
        return None
    arch, column = _ARCHITECTURES[machine]
    numbers = sorted(nr[column] for nr in _SYSCALLS.values() if nr[column] is not None)
    ld_w_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny, kill = 0x7FFF0000, 0x00050000 | 1, 0x80000000  # ALLOW, ERRNO(EPERM), KILL_PROCESS
    program = [(ld_w_abs, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, kill), (ld_w_abs, 0, 0, 0)]
    if machine == "x86_64":
        program.append((jge, len(numbers) + 4, 0, 0x40000000))  # x32 system calls
    for i, nr in enumerate(numbers):
        program.append((jeq, len(numbers) - i + 3, 0, nr))
    # socket(): its first argument (the low word of args[0], at offset 16 of seccomp_data) is not AF_VSOCK
    program += [(jeq, 0, 2, _SOCKET[column]), (ld_w_abs, 0, 0, 16), (jeq, 1, 0, AF_VSOCK)]
    program += [(ret, 0, 0, allow), (ret, 0, 0, deny)]  # every jump above lands on `deny`
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def rlimits(limits: Limits) -> dict[str, int]:
    return {
        "cpu": limits.cpu_seconds,
        "fsize": limits.file_mb * 2**20,
        "nofile": limits.open_files,
        "nproc": limits.processes,
    }


class _Cgroup:
    """A memory and pids cgroup for one sandbox, or None where this user cannot make one. Making one and reading its
    out-of-memory count differ between cgroup v2 and v1 (:class:`_CgroupV2`, :class:`_CgroupV1`); killing what is
    in it and removing it do not."""

    def __init__(self, dirs: dict[str, Path]):
        self.dirs = dirs

    @staticmethod
    def version() -> type[_Cgroup]:
        return _CgroupV2 if (CGROUP / "cgroup.controllers").exists() else _CgroupV1

    @staticmethod
    def parents() -> dict[str, Path]:
        """Where this process may make child cgroups (a user may own its subtree only). Pool processes share their
        parent's, so the parent finds them."""
        raise NotImplementedError

    @classmethod
    def make(cls, name: str, limits: Limits, made: dict[str, Path]) -> _Cgroup | None:
        """Make cgroup ``name`` with ``limits``, noting each folder in ``made`` as it is made (removed on failure)."""
        raise NotImplementedError

    def out_of_memory(self) -> bool:
        raise NotImplementedError

    @classmethod
    def create(cls, limits: Limits) -> _Cgroup | None:
        name = f"word2bert-{os.getpid()}-{uuid.uuid4().hex[:12]}"  # the pid: see remove_orphans
        made: dict[str, Path] = {}
        try:
            return cls.version().make(name, limits, made)
        except (OSError, ValueError, IndexError):
            _Cgroup(made).remove()
            return None

    @classmethod
    def remove_orphans(cls, pid: int) -> None:
        """Kill what is left in the cgroups of process ``pid``'s sandbox and remove them (a grading process that
        was killed cannot remove its own)."""
        try:
            dirs = [d for parent in cls.version().parents().values() for d in parent.glob(f"word2bert-{pid}-*")]
        except (OSError, ValueError, IndexError):
            return
        _Cgroup({str(i): d for i, d in enumerate(dirs)}).remove()

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def kill(self) -> None:
        for path in self.procs_files():
            try:
                for pid in open(path, encoding="utf-8").read().split():
                    os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def remove(self) -> None:
        for d in self.dirs.values():
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.02)


class _CgroupV2(_Cgroup):
    """cgroup v2: one child of this process's own cgroup, with every controller in it."""

    @staticmethod
    def parents() -> dict[str, Path]:
        own = Path(open("/proc/self/cgroup", encoding="utf-8").read().strip().split("::", 1)[1])
        return {"v2": CGROUP / own.relative_to("/")}

    @classmethod
    def make(cls, name: str, limits: Limits, made: dict[str, Path]) -> _CgroupV2 | None:
        parent = cls.parents()["v2"]
        enabled = (parent / "cgroup.subtree_control").read_text(encoding="utf-8").split()
        if not {"memory", "pids"} <= set(enabled):
            return None
        folder = made["v2"] = parent / name
        folder.mkdir()
        (folder / "memory.max").write_text(str(limits.memory_mb * 2**20), encoding="utf-8")
        (folder / "memory.swap.max").write_text("0", encoding="utf-8")
        (folder / "pids.max").write_text(str(limits.processes), encoding="utf-8")
        if "cpu" in enabled:
            (folder / "cpu.max").write_text(f"{limits.cpus * CPU_PERIOD} {CPU_PERIOD}", encoding="utf-8")
        return cls(made)

    def out_of_memory(self) -> bool:
        try:
            events = (self.dirs["v2"] / "memory.events").read_text(encoding="utf-8")
            return any(line.split()[0] == "oom_kill" and int(line.split()[1]) > 0 for line in events.splitlines())
        except (OSError, ValueError, KeyError):
            return False


class _CgroupV1(_Cgroup):
    """cgroup v1: a child of this process's own cgroup in each hierarchy (memory, pids, and cpu where it can)."""

    @staticmethod
    def parents() -> dict[str, Path]:
        own = {}
        for line in open("/proc/self/cgroup", encoding="utf-8").read().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path.lstrip("/")
        return {c: CGROUP / c / own.get(c, "") for c in ("memory", "pids", "cpu")}

    @classmethod
    def make(cls, name: str, limits: Limits, made: dict[str, Path]) -> _CgroupV1:
        parents = cls.parents()
        for controller in ("memory", "pids"):
            made[controller] = parents[controller] / name
            made[controller].mkdir()
        (made["memory"] / "memory.limit_in_bytes").write_text(str(limits.memory_mb * 2**20), encoding="utf-8")
        (made["pids"] / "pids.max").write_text(str(limits.processes), encoding="utf-8")
        try:  # a CPU quota where the cpu hierarchy is ours too; without it, memory and pids still hold
            made["cpu"] = parents["cpu"] / name
            made["cpu"].mkdir()
            (made["cpu"] / "cpu.cfs_period_us").write_text(str(CPU_PERIOD), encoding="utf-8")
            (made["cpu"] / "cpu.cfs_quota_us").write_text(str(limits.cpus * CPU_PERIOD), encoding="utf-8")
        except OSError:
            _Cgroup({"cpu": made.pop("cpu")}).remove()
        return cls(made)

    def out_of_memory(self) -> bool:
        try:
            return int((self.dirs["memory"] / "memory.failcnt").read_text(encoding="utf-8")) > 0
        except (OSError, ValueError, KeyError):
            return False


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
    _cgroup: _Cgroup | None = None

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
        self._cgroup = _Cgroup.create(self.limits)
        cmd = launch_command(argv, self._cgroup.procs_files() if self._cgroup else [], uid)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        if self.unsafe:
            env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1")
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
        reply, _ = self.request({"op": "hello", "limits": rlimits(self.limits)}, timeout=120)
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
