"""`pip install` of the project builds a wheel that carries the trained checkpoints."""

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_FILES = ["pyproject.toml", "README.md", "LICENSE", "LICENSE-text"]


def wheel_names(src: Path, tmp_path: Path, distribution: str) -> set[str]:
    """The files of the wheel that `make dist` would build from ``src`` (tools/dist.py's ``pip_wheel``)."""
    spec = importlib.util.spec_from_file_location("w2b_dist", ROOT / "tools" / "dist.py")
    dist = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dist)
    return set(zipfile.ZipFile(dist.pip_wheel(src, tmp_path / "wheel", distribution)).namelist())


@pytest.mark.slow
def test_wheel_includes_checkpoints(tmp_path):
    # Build from a copy, so that setuptools' build/ and egg-info never land in the working tree,
    # with one tiny checkpoint of each declared kind next to the repository's own checkpoints.
    src = tmp_path / "src"
    src.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "lib", src / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    checkpoints = src / "lib" / "word2bert" / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    for name in ["tiny-test.safetensors", "tiny-test.json", "tiny-test.md"]:
        (checkpoints / name).write_bytes(b"tiny test checkpoint\n")
    expected = {
        f"word2bert/checkpoints/{p.name}"
        for p in checkpoints.iterdir()
        if p.is_file() and p.suffix in {".safetensors", ".json", ".md"}
    }

    names = wheel_names(src, tmp_path, "word2bert")
    missing = expected - names
    assert not missing, f"checkpoint files left out of the wheel (package-data in pyproject.toml?): {missing}"
    assert "word2bert/__init__.py" in names and "word2bert/data/toyworld.py" in names
    assert "word2bert/data/toyworld_grammar.toml" in names, "the toy world's grammar is a data file of the package"
    assert not any(n.startswith("word2bert_grader/") for n in names), (
        "the students' library must not carry the grading pipeline"
    )
    assert "word2bert/testing.py" in names, "the exercises' test helpers ship with the library"


@pytest.mark.slow
def test_grader_is_a_distribution_of_its_own(tmp_path):
    src = tmp_path / "grader"
    shutil.copytree(
        ROOT / "lib" / "word2bert_grader", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    names = wheel_names(src, tmp_path, "word2bert_grader")
    grader = ROOT / "lib" / "word2bert_grader"
    for module in [*grader.rglob("*.py"), *grader.rglob("templates/*.html")]:
        if "egg-info" not in str(module) and "build" not in module.parts:
            assert f"word2bert_grader/{module.relative_to(grader)}" in names, module
    assert not any(n.startswith("word2bert/") for n in names)


@pytest.mark.slow
def test_importing_the_library_leaves_the_warning_filters_alone():
    """A library that silences a warning does it around its own call, never for the program that imports it."""
    code = """
import importlib, pkgutil, warnings
import torch, word2bert
before = list(warnings.filters)
modules = [m.name for m in pkgutil.walk_packages(word2bert.__path__, "word2bert.")]
for name in modules:
    importlib.import_module(name)
changed = [f for f in warnings.filters if f not in before]
assert len(modules) > 20 and not changed, changed or modules
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
