"""A cgroup of its own for each sandbox: memory, processes and CPU, one small class per cgroup version."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from word2bert_grader.sandbox.bwrap import Limits

CGROUP = Path("/sys/fs/cgroup")
CPU_PERIOD = 100_000  # microseconds: the window of a cgroup's CPU quota


class Cgroup:
    """A memory and pids cgroup for one sandbox, or None where this user cannot make one. Making one and reading its
    out-of-memory count differ between cgroup v2 and v1 (:class:`CgroupV2`, :class:`CgroupV1`); killing what is
    in it and removing it do not."""

    def __init__(self, dirs: dict[str, Path]):
        self.dirs = dirs

    @staticmethod
    def version() -> type[Cgroup]:
        return CgroupV2 if (CGROUP / "cgroup.controllers").exists() else CgroupV1

    @staticmethod
    def parents() -> dict[str, Path]:
        """Where this process may make child cgroups (a user may own its subtree only). Pool processes share their
        parent's, so the parent finds them."""
        raise NotImplementedError

    @classmethod
    def make(cls, name: str, limits: Limits, made: dict[str, Path]) -> Cgroup | None:
        """Make cgroup ``name`` with ``limits``, noting each folder in ``made`` as it is made (removed on failure)."""
        raise NotImplementedError

    def out_of_memory(self) -> bool:
        raise NotImplementedError

    @classmethod
    def create(cls, limits: Limits) -> Cgroup | None:
        name = f"word2bert-{os.getpid()}-{uuid.uuid4().hex[:12]}"  # the pid: see remove_orphans
        made: dict[str, Path] = {}
        try:
            return cls.version().make(name, limits, made)
        except (OSError, ValueError, IndexError):
            Cgroup(made).remove()
            return None

    @classmethod
    def remove_orphans(cls, pid: int) -> None:
        """Kill what is left in the cgroups of process ``pid``'s sandbox and remove them (a grading process that
        was killed cannot remove its own)."""
        try:
            dirs = [d for parent in cls.version().parents().values() for d in parent.glob(f"word2bert-{pid}-*")]
        except (OSError, ValueError, IndexError):
            return
        Cgroup({str(i): d for i, d in enumerate(dirs)}).remove()

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


class CgroupV2(Cgroup):
    """cgroup v2: one child of this process's own cgroup, with every controller in it."""

    @staticmethod
    def parents() -> dict[str, Path]:
        own = Path(open("/proc/self/cgroup", encoding="utf-8").read().strip().split("::", 1)[1])
        return {"v2": CGROUP / own.relative_to("/")}

    @classmethod
    def make(cls, name: str, limits: Limits, made: dict[str, Path]) -> CgroupV2 | None:
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


class CgroupV1(Cgroup):
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
    def make(cls, name: str, limits: Limits, made: dict[str, Path]) -> CgroupV1:
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
            Cgroup({"cpu": made.pop("cpu")}).remove()
        return cls(made)

    def out_of_memory(self) -> bool:
        try:
            return int((self.dirs["memory"] / "memory.failcnt").read_text(encoding="utf-8")) > 0
        except (OSError, ValueError, KeyError):
            return False
