"""What the benchmarks say about the machine they ran on, and the busy neighbour some of them run beside."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def busy_neighbour(on: bool):
    """A competing process that keeps one core busy, on the same cores as the benchmark."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.5)
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def median_seconds(fns: dict, repeats: int, warmup: int = 2) -> dict:
    """Median seconds per call of each function; calls are interleaved so load changes hit all alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}
