"""The grading throughput benchmark's shutdown check (benchmarks/grading_throughput.py): a process that outlives the
run is reported, and one that ends with it is not. A few seconds (the tests' helpers' imports)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

# Importing the benchmark brings the graders' test helpers (nbformat, nbgrader): seconds of CPU, not for test-fast.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def throughput():
    spec = importlib.util.spec_from_file_location("grading_throughput", ROOT / "benchmarks" / "grading_throughput.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # its dataclasses look it up there
    spec.loader.exec_module(module)
    return module


def test_a_process_left_behind_is_reported_and_its_cpu_counted():
    processes = throughput().Processes()
    tidy = subprocess.Popen(["sh", "-c", "sleep 0.6"])
    # a grandchild that outlives its parent, reparented when the parent ends: what a leaking pool leaves
    leaky = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 0.6"])
    processes.watch(tidy.pid, leaky.pid)
    tidy.wait(), leaky.wait()
    left = processes.left(grace=1)
    try:
        assert [p.cmdline() for p in left] == [["sleep", "30"]], [p.cmdline() for p in left]
        assert len(processes.seen) == 5 and all(cpu >= 0 for cpu in processes.cpu.values())
    finally:
        for p in left:
            p.kill()
