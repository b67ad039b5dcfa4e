"""Where tensors live. Every model and trainer takes a ``device`` argument; this picks a default."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import joblib
import torch


def default_device() -> torch.device:
    """CUDA if present, then Apple's MPS, then the CPU. ``W2B_DEVICE=cpu`` (or any torch device) overrides."""
    forced = os.environ.get("W2B_DEVICE")
    if forced:
        return torch.device(forced)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve(device: str | torch.device | None) -> torch.device:
    """``None`` means the default device; strings become ``torch.device``."""
    return default_device() if device is None else torch.device(device)


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python's, NumPy's and torch's global generators; return a fresh CPU generator with that seed."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def _busy_cores(cpus: set[int], seconds: float = 0.1) -> float:
    """How many of ``cpus`` other processes keep busy: their non-idle share over ``seconds`` (/proc/stat), while
    this process sleeps; where /proc is missing (macOS), the 1-minute load average less this process."""

    def sample() -> dict[int, tuple[int, int]]:
        with open("/proc/stat", encoding="utf-8") as f:
            rows = [line.split() for line in f if line.startswith("cpu") and line[3].isdigit()]
        # user nice system idle iowait irq softirq steal: idle and iowait are the idle time
        return {int(r[0][3:]): (int(r[4]) + int(r[5]), sum(map(int, r[1:9]))) for r in rows if int(r[0][3:]) in cpus}

    try:
        before = sample()
        time.sleep(seconds)
        after = sample()
    except (OSError, ValueError, IndexError):
        return max(0.0, os.getloadavg()[0] - 1) if hasattr(os, "getloadavg") else 0.0
    busy = 0.0
    for cpu, (idle, total) in after.items():
        elapsed = total - before[cpu][1]
        busy += 1 - (idle - before[cpu][0]) / elapsed if elapsed > 0 else 0.0
    return busy


def cpu_threads(threads: int | None = None) -> int:
    """The intra-op thread count for a CPU training loop. The first of these that is set wins: ``threads`` (the
    loop's argument or ``TrainConfig.threads``), ``$W2B_THREADS``, ``$OMP_NUM_THREADS`` (torch's own setting, which
    torch already holds); else one per core this process may use that no other process keeps busy, at most torch's
    thread count (``torch.set_num_threads`` lowers it) and at least one.

    The cores this process may use are joblib's count: its CPU affinity (``os.sched_getaffinity``) and its cgroup's
    CPU quota (a container's ``--cpus``); the busy ones are measured over 0.1 s (``_busy_cores``).

    Why not all the cores: torch's threads meet at the end of every operator, so one thread that waits for a core
    holds up the others. On two cores beside two busy processes, two threads trained word2vec and ELMo 10-60 times
    slower than one (benchmarks/README.md); one thread loses only its share of the CPU.
    """
    forced = threads or int(os.environ.get("W2B_THREADS") or 0)
    if forced > 0:
        return forced
    if os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()
    most = min(joblib.cpu_count(), torch.get_num_threads())
    if most <= 1:
        return 1
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    return max(1, min(most, round(len(cpus) - _busy_cores(cpus))))


@contextlib.contextmanager
def training_threads(device: torch.device, threads: int | None = None) -> Iterator[int]:
    """Run a training loop on ``cpu_threads(threads)`` torch threads (on a CPU; other devices are left alone), then
    give back the caller's thread count. Yields the count."""
    if device.type != "cpu":
        yield torch.get_num_threads()
        return
    previous, chosen = torch.get_num_threads(), cpu_threads(threads)
    torch.set_num_threads(chosen)
    try:
        yield chosen
    finally:
        torch.set_num_threads(previous)
