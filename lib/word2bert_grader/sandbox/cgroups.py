"""A cgroup of its own for each sandbox: memory, processes and CPU, on cgroup v2 or in v1's hierarchies."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import psutil

from word2bert_grader.sandbox.bwrap import Limits

CGROUP = Path("/sys/fs/cgroup")
CPU_PERIOD = 100_000  # microseconds: the window of a cgroup's CPU quota
PREFIX = "word2bert-"  # then the grading process's pid: see remove_orphans


class Cgroup:
    """The folders of one sandbox's cgroup (one on v2; memory, pids and, where it is ours, cpu on v1)."""

    def __init__(self, dirs: list[Path]):
        self.dirs = dirs

    @classmethod
    def create(cls, limits: Limits) -> Cgroup | None:
        """A cgroup with ``limits``; None where this user cannot make one."""
        group, name = cls([]), f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            if _v2():
                parent = _parents()[0]
                enabled = set((parent / "cgroup.subtree_control").read_text(encoding="utf-8").split())
                if not {"memory", "pids"} <= enabled:
                    return None
                quota = {"cpu.max": f"{limits.cpus * CPU_PERIOD} {CPU_PERIOD}"} if "cpu" in enabled else {}
                memory = {"memory.max": limits.memory_mb * 2**20, "memory.swap.max": 0}
                group._make(parent / name, {**memory, "pids.max": limits.processes, **quota})
            else:
                memory, pids, cpu = _parents()
                group._make(memory / name, {"memory.limit_in_bytes": limits.memory_mb * 2**20})
                group._make(pids / name, {"pids.max": limits.processes})
                quota, own = {"cpu.cfs_period_us": CPU_PERIOD, "cpu.cfs_quota_us": limits.cpus * CPU_PERIOD}, cls([])
                try:  # a CPU quota where the cpu hierarchy is ours too; without it, memory and pids still hold
                    own._make(cpu / name, quota)
                    group.dirs += own.dirs
                except OSError:
                    own.remove()
            return group
        except (OSError, ValueError, IndexError):
            group.remove()
            return None

    def _make(self, folder: Path, settings: dict) -> None:
        folder.mkdir()
        self.dirs.append(folder)
        for name, value in settings.items():
            (folder / name).write_text(str(value), encoding="utf-8")

    @classmethod
    def remove_orphans(cls) -> None:
        """Kill and remove what is left in the cgroups of grading processes that are gone (killed)."""
        try:
            found = [d for parent in _parents() for d in parent.glob(f"{PREFIX}*-*")]
        except (OSError, ValueError, IndexError):
            return
        pids = {d: d.name.removeprefix(PREFIX).split("-")[0] for d in found}  # the grading process that made it
        cls([d for d, pid in pids.items() if not (pid.isdigit() and psutil.pid_exists(int(pid)))]).remove()

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def out_of_memory(self) -> bool:
        for d in self.dirs:
            try:
                if (d / "memory.events").exists():
                    events = (d / "memory.events").read_text(encoding="utf-8").splitlines()
                    return any(line.split()[0] == "oom_kill" and int(line.split()[1]) > 0 for line in events)
                if (d / "memory.failcnt").exists():
                    return int((d / "memory.failcnt").read_text(encoding="utf-8")) > 0
            except (OSError, ValueError, IndexError):
                return False
        return False

    def kill(self) -> None:
        for path in self.procs_files():
            with contextlib.suppress(OSError, ValueError):
                for pid in open(path, encoding="utf-8").read().split():
                    os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.02)


def _v2() -> bool:
    return (CGROUP / "cgroup.controllers").exists()


def _parents() -> list[Path]:
    """Where this process may make child cgroups: its own cgroup (v2), or in v1's memory, pids and cpu trees."""
    lines = open("/proc/self/cgroup", encoding="utf-8").read().splitlines()
    if _v2():
        return [CGROUP / lines[0].split("::", 1)[1].lstrip("/")]
    own = {c: path.lstrip("/") for line in lines for _, cs, path in [line.split(":", 2)] for c in cs.split(",")}
    return [CGROUP / c / own.get(c, "") for c in ("memory", "pids", "cpu")]
