"""`tools/execute_book.py`, which `make book` runs before `jupyter-book build`: the book's notebooks executed a few
at a time into the build's jupyter-cache, under the key myst-nb looks them up by, so that the build finds them
there; a failing notebook is reported and left out of the cache (the build runs it again and says why); a notebook
the cache holds is not run again; the exercises' notebooks, which _config.yml excludes, are never run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT
from jupyter_cache import get_cache

pytestmark = pytest.mark.slow

CONFIG = """execute:
  execute_notebooks: cache
  cache: _build/.jupyter_cache
  timeout: 60
  allow_errors: false
  exclude_patterns:
    - exercises/*/*.ipynb
"""


def tool():
    spec = importlib.util.spec_from_file_location("execute_book", ROOT / "tools" / "execute_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(root: Path) -> subprocess.CompletedProcess:
    """As `make book` runs it."""
    command = [sys.executable, str(ROOT / "tools" / "execute_book.py"), "--root", str(root), "--jobs", "2"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def notebook(path: Path, *sources: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources]), str(path))
    return path


def test_notebooks_run_into_the_cache_that_the_build_reads(tmp_path):
    (tmp_path / "_config.yml").write_text(CONFIG, encoding="utf-8")
    good = notebook(tmp_path / "book" / "a.ipynb", "import os", "print(os.environ.get('TQDM_DISABLE'), 6 * 7)")
    bad = notebook(tmp_path / "book" / "b.ipynb", "raise ValueError('broken page')")
    exercise = notebook(tmp_path / "book" / "exercises" / "e" / "e.ipynb", "raise SystemExit('never run')")
    execute_book = tool()
    assert execute_book.book_notebooks(tmp_path) == [good, bad]

    first = run(tmp_path)
    assert first.returncode == 1, "a failing notebook fails the run"
    assert "book/b.ipynb FAILED" in first.stdout and "broken page" in first.stdout, first.stdout + first.stderr
    cache = get_cache(str(tmp_path / "_build" / ".jupyter_cache"))
    record = cache.match_cache_notebook(nbformat.read(str(good), as_version=4))  # myst-nb's lookup
    _, merged = cache.merge_match_into_notebook(nbformat.read(str(good), as_version=4))
    assert merged.cells[1].outputs[0]["text"] == "1 42\n", "run as the build runs its kernels (TQDM_DISABLE=1)"
    assert record.data["execution_seconds"] > 0
    for missing in (bad, exercise):
        with pytest.raises(KeyError):
            cache.match_cache_notebook(nbformat.read(str(missing), as_version=4))

    assert "1 notebook(s) to run" in run(tmp_path).stdout, "only the one the cache does not hold"
