"""One style for the code, checked on every test run (CI runs `make test`): ruff's rules, the line length
included, and `ruff format` (settings in pyproject.toml). `make lint` runs the same two commands."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT


def ruff() -> str:
    here = Path(sys.executable).with_name("ruff")
    found = str(here) if here.exists() else shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed: pip install -c constraints.txt -e '.[dev]'")
    return found


def paths() -> list[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.search(r"^PY_DIRS := (.+)$", makefile, re.M).group(1).split()


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["rules", "format"])
def test_the_code_passes_ruff(command):
    done = subprocess.run([ruff(), *command, *paths()], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"ruff {' '.join(command)} (run `make lint`):\n{done.stdout[-3000:]}{done.stderr}"
