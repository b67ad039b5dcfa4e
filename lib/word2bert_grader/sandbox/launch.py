"""Starts bubblewrap for one sandbox: ``python -I -S launch.py SPEC``, before any student code, as the grader's user,
with nothing but the standard library. It joins the sandbox's cgroups; where the grader is root, it becomes an
unprivileged uid of this sandbox's own (``spec["uid"]``: no groups, no capabilities), so that bubblewrap maps the
student to it and never to host root (a write checked against the uid, ``/proc/sys`` say, is refused; per-user
quotas are the sandbox's own), having first bound the paths the sandbox shows (Python under /root, say) under /mnt
in a mount namespace of its own, where that uid reaches them; then it execs bubblewrap. Nothing on the host changes.
"""

import ctypes
import json
import os
import sys

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x1000, 0x4000, 0x40000
STAGE = "/mnt"  # FHS: a mount point for temporarily mounted file systems
JOIN_FAILED, STAGE_FAILED = 97, 96  # exit codes the grader explains


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def stage(sources: list[str]) -> None:
    """Bind each of ``sources`` at /mnt/<its index>, in a private mount namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    _check(libc.mount(b"word2bert", STAGE.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755,size=64k"), STAGE)
    for i, source in enumerate(sources):
        target = f"{STAGE}/{i}"
        if os.path.isdir(source):
            os.mkdir(target)
        else:
            open(target, "w", encoding="utf-8").close()
        _check(libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {source}")


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        for path in spec["cgroups"]:
            with open(path, "w", encoding="utf-8") as procs:
                procs.write(str(os.getpid()))
    except OSError as error:
        print(f"could not join the sandbox's cgroup: {error}", file=sys.stderr)
        os._exit(JOIN_FAILED)
    uid = spec["uid"]
    if uid is not None:
        try:
            stage(spec["stage"])
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)  # from root to another uid: every capability is dropped with it
        except OSError as error:
            print(f"could not prepare the sandbox's user: {error}", file=sys.stderr)
            os._exit(STAGE_FAILED)
    os.execv(spec["argv"][0], spec["argv"])


if __name__ == "__main__":
    main()
