"""How a sandbox is confined before its first instruction: what it may use (:class:`Limits`, and the rlimits the
runner sets on itself), the host uid it runs as, and the command lines of bubblewrap and of :mod:`.launch`."""

import json
import os
import pwd
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from word2bert_grader.sandbox import launch

HERE = Path(__file__).resolve().parent
INSIDE = "/opt/word2bert-sandbox"  # where runner.py and wire.py are mounted
SCRATCH = "/home/student"  # the submission's working directory and $HOME
# Host uids of sandboxes started by root, one each (plus the grader's pid), between systemd's ranges: no account's.
SANDBOX_UIDS = range(0x70000000, 0x70000000 + 2**22)
# /proc as runc leaves it: read-only where a write changes the host, hidden where a read exposes the kernel.
PROC_READ_ONLY = ("bus", "fs", "irq", "sys", "sysrq-trigger")
PROC_MASKED = "acpi asound interrupts kcore keys latency_stats sched_debug scsi timer_list timer_stats".split()
SYSTEM = "/usr /bin /lib /lib64 /lib32 /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d /etc/alternatives".split()
SYSTEM += ["/etc/fonts", "/etc/localtime"]  # what the sandbox sees of the system, read-only, where it exists
ENVIRONMENT = {"MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp", "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
ENVIRONMENT["W2B_GRADING"] = "1"  # a notebook's own explorations (a real model on the student's sentences) skip


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Times are enforced by the grader, per request."""

    memory_mb: int = 2048
    cpus: int = 1  # cores it may keep busy, where the cgroup's cpu controller is ours (so it cannot starve a classmate)
    processes: int = 128  # processes and threads
    cpu_seconds: int = 900
    file_mb: int = 64  # largest file it may write
    scratch_mb: int = 256  # each of /home/student, /tmp and /dev/shm
    open_files: int = 256
    max_message_mb: int = 256  # largest reply read from it
    grader_mb: int = 2048  # the grader's own process testing it (about 0.5 GB at most for honest work); 0: no cap


class Unavailable(RuntimeError):
    """This machine cannot sandbox (no bubblewrap, no user namespaces): the message says how to fix it."""


def sandbox_uid() -> int | None:
    """The unprivileged host uid of this process's sandbox where the grader is root; None otherwise."""
    if os.geteuid() != 0:
        return None
    uid = SANDBOX_UIDS.start + os.getpid()
    try:
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        return uid
    raise Unavailable(f"host uid {uid}, meant for a sandbox, belongs to the account {owner}: grade as another user")


def private_paths() -> list[Path]:
    """What the sandbox shows besides the system: Python, the virtual environment, the runner and the wire."""
    return [*sorted({Path(sys.base_prefix), Path(sys.prefix)}), HERE / "runner.py", HERE / "wire.py"]


def bwrap_command(limits: Limits, staged: bool = False) -> list[str]:
    """bubblewrap's arguments; ``staged``: the private paths bound from :mod:`.launch`'s staging folder."""
    cmd = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    cmd += ["--uid", "65534", "--gid", "65534", "--hostname", "sandbox", "--die-with-parent", "--new-session"]
    env = {"PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "HOME": SCRATCH, **ENVIRONMENT, "LANG": "C.UTF-8"}
    cmd += ["--clearenv", *(arg for name, value in env.items() for arg in ("--setenv", name, value))]
    # no pseudo-terminals: their number is a quota of the whole machine (kernel.pty.max)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", "/dev/null", "/dev/pts/ptmx"]
    for name in PROC_READ_ONLY:  # only what this kernel has: a mount point must exist
        if os.path.exists(f"/proc/{name}"):
            cmd += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in PROC_MASKED:
        path = f"/proc/{name}"
        if os.path.isdir(path):
            cmd += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            cmd += ["--ro-bind", "/dev/null", path]
    for path in ("/dev/shm", "/tmp", SCRATCH):  # the writable places first: a later mount would hide a bind beneath
        cmd += ["--size", str(limits.scratch_mb * 2**20), "--tmpfs", path]
    for path in SYSTEM:
        cmd += ["--ro-bind-try", path, path]
    destinations = [*map(str, private_paths()[:-2]), f"{INSIDE}/runner.py", f"{INSIDE}/wire.py"]
    for i, (source, destination) in enumerate(zip(private_paths(), destinations)):
        cmd += ["--ro-bind", f"{launch.STAGE}/{i}" if staged else str(source), destination]
    return [*cmd, "--remount-ro", "/", "--chdir", SCRATCH]  # its own root read-only: no uncapped writes elsewhere


def launch_command(argv: list[str], cgroups: list[str], uid: int | None) -> list[str]:
    """The command that runs ``argv`` through :mod:`.launch`: in ``cgroups``, and as ``uid``."""
    spec = {"cgroups": cgroups, "uid": uid, "stage": [str(p) for p in private_paths()], "argv": argv}
    return [sys.executable, "-I", "-S", str(HERE / "launch.py"), json.dumps(spec)]
