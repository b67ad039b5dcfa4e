"""What the benchmarks say about the machine they ran on, and the busy neighbour some of them run beside."""

from __future__ import annotations

import contextlib
import os
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
