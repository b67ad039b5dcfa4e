"""Shared fixtures: `built_book`, the book built once per test run for all xdist workers; `browser`, headless
Chromium. What tests share besides fixtures is in `tests/helpers`."""

from __future__ import annotations

import itertools
import json
import os
import re
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression
from filelock import FileLock
from helpers import BOOK_DIR, ROOT
from helpers.browser import start_chromium

BUILD_TIMEOUT_S = 45 * 60  # about 10 minutes alone; CI builds it beside the graders


def current_run_id() -> str:
    """One id per `pytest` invocation, the same on every xdist worker (xdist shares
    PYTEST_XDIST_TESTRUNUID; without xdist, the first call makes one up and keeps it in the
    environment)."""
    return os.environ.get("PYTEST_XDIST_TESTRUNUID") or os.environ.setdefault("W2B_TEST_RUN_ID", uuid.uuid4().hex)


def _jupyter_book() -> str:
    here = Path(sys.executable).with_name("jupyter-book")
    return str(here if here.exists() else ROOT / ".venv" / "bin" / "jupyter-book")


def build_book(book_dir: Path = BOOK_DIR) -> Path:
    """Build the book unless this test run has built it already; return `_build/html`.

    A file lock makes the first worker build while the others wait; a marker file holding the run id
    and the build's exit status lets them reuse its result. A build from an earlier run is rebuilt
    (every page re-read, but executed notebooks come from the jupyter-cache, so an unchanged book
    takes a minute or so).
    """
    build = book_dir / "_build"
    build.mkdir(exist_ok=True)
    marker, log = build / ".built-by-test-run", build / "book-build.log"
    with FileLock(str(build / ".book-build.lock")):
        run_id = current_run_id()
        done = marker.read_text(encoding="utf-8").split() if marker.exists() else []
        if not done or done[0] != run_id:
            # --all: Sphinx re-reads every page, so warnings of pages unchanged since an earlier
            # build are reported again (executed notebooks still come from the jupyter-cache).
            cmd = [
                _jupyter_book(),
                "build",
                str(book_dir),
                "--all",
                "--warningiserror",
                "--nitpick",
                "--keep-going",
            ]
            # Python's deprecation warnings shown, so that tests/test_book.py sees any the build prints
            # (book/_ext/w2b_sphinx.py keeps this setting away from the notebooks' kernels).
            env = {**os.environ, "PYTHONWARNINGS": "default"}
            with open(log, "w", encoding="utf-8") as out:
                rc = subprocess.run(
                    cmd,
                    check=False,
                    cwd=book_dir,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=BUILD_TIMEOUT_S,
                ).returncode
            marker.write_text(f"{run_id} {rc}\n", encoding="utf-8")
            done = [run_id, str(rc)]
    if done[1] != "0":
        tail = log.read_text(encoding="utf-8")[-6000:]
        pytest.fail(
            f"`jupyter-book build` failed (exit {done[1]}); the end of {log}:\n{tail}",
            pytrace=False,
        )
    return build / "html"


@pytest.fixture(scope="session")
def built_book() -> Path:
    """The built site, `_build/html`, built once per test run (see `build_book`)."""
    return build_book()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium driven by Selenium (`helpers.browser`); skips, saying what to install, without it."""
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


# The longest work first, so that it runs beside the rest instead of after it (the slowest-first rule of
# scheduling): pytest-xdist hands out whole files (`--dist loadfile`) in the order of this list when it is given
# `--no-loadscope-reorder` (the Makefile does), where it would otherwise start the files with the most tests first.
# Measured in full runs on 2 cores: the book build 22 min (it runs every notebook), the grading class 17 min; every
# other file under 6 min, the longest of them the hostile class, formgrader's session, the Dask tests (the smoke
# test is the grading class's, graded on Dask, since the load of 300 became benchmarks/grading_throughput.py --load)
# and the term's LMS runs.
# The files that need the built book (the browser's, the archives') stay in the alphabet's order: started early,
# they would wait for the build.
LONGEST_FIRST = (
    "tests/test_book.py",
    "tests/test_grading.py",
    "tests/test_hostile.py",
    "tests/test_formgrader.py",
    "tests/test_dask.py",
    "tests/test_term.py",  # 2.5 min: last in the alphabet, it ran alone at the end of the run, one core idle
    "tests/test_objective_ablation.py",
    "tests/test_elmo.py",
    "tests/test_english.py",
    "tests/test_pretrained_vectors.py",
    "tests/test_executors.py",
    "tests/test_execute_book.py",
)


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        return next((k for k, p in enumerate(LONGEST_FIRST) if item.nodeid.startswith(p)), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: within a rank, the collection's order


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (graders, kernels, sandboxes), user and system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With W2B_CPU_LOG=file, append each test's wall and CPU seconds (set-up and tear-down included) as a JSON line:
    CPU time does not grow when the machine is shared, so it tells what a test costs on a quiet one."""
    log = os.environ.get("W2B_CPU_LOG")
    wall, cpu = time.monotonic(), _cpu_seconds()
    yield
    if log:
        record = {"test": item.nodeid, "wall": time.monotonic() - wall, "cpu": _cpu_seconds() - cpu}
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


def pytest_ignore_collect(collection_path, config):
    """Under ``-m`` (make test-fast: ``not slow and not book``), a module whose own ``pytestmark`` line already rules
    out all its tests is not imported: every xdist worker imports every module it collects, and the graders' and the
    browser's modules bring nbgrader, Dask and Selenium, seconds of CPU per worker for tests that are deselected."""
    expression = config.getoption("markexpr", "")
    if not expression or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    line = re.search(r"^pytestmark = (.*)$", collection_path.read_text(encoding="utf-8"), flags=re.M)
    marks = set(re.findall(r"pytest\.mark\.(\w+)", line.group(1))) if line else set()
    if not marks:
        return None
    others = sorted(set(re.findall(r"\b\w+\b", expression)) - {"and", "or", "not"} - marks)
    compiled = Expression.compile(expression)
    # Ignored only if no test of the module can match, whatever other marks it carries.
    for values in itertools.product((False, True), repeat=len(others)):
        extra = {name for name, value in zip(others, values, strict=True) if value}
        if compiled.evaluate(lambda name, extra=extra: name in marks or name in extra):
            return None
    return True
