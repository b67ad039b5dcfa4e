"""How a sandbox is confined before its first instruction: what it may use (:class:`Limits`, and the rlimits the
runner sets on itself), the host uid it runs as, and the command lines of bubblewrap and of :mod:`launch`.

The seccomp filter is :mod:`word2bert_grader.seccomp`'s, the cgroups :mod:`word2bert_grader.cgroups`'; the process
that runs all this is :class:`word2bert_grader.sandbox.Sandbox`.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from word2bert_grader import launch

HERE = Path(__file__).resolve().parent
INSIDE = "/opt/word2bert-sandbox"  # where runner.py and wire.py are mounted
SCRATCH = "/home/student"  # the submission's working directory and $HOME
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
        "--setenv",  # a notebook's own explorations (a real model on the student's sentences) skip while graded
        "W2B_GRADING",
        "1",
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


def rlimits(limits: Limits) -> dict[str, int]:
    return {
        "cpu": limits.cpu_seconds,
        "fsize": limits.file_mb * 2**20,
        "nofile": limits.open_files,
        "nproc": limits.processes,
    }
