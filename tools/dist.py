"""`make dist`: the course's offline copies, versioned, in dist/ and on the site.

- ``word2bert-book-<version>.zip``: the built site (``_build/html``) in one folder. Opened from the
  disk (``index.html``, a ``file://`` address) it works without a network: figures, math (MathJax is
  served from ``_static``), search (Sphinx loads its index as a script, which ``file://`` allows).
- ``word2bert-student-<version>.zip``: the exercise notebooks (``exercises/``), the ``word2bert``
  library as a wheel (with its trained checkpoints), and a README on installing and opening them.

Both are written to ``dist/`` and copied into the site's ``downloads/`` folder, where the landing page
links them (the ``w2b-download`` role of ``book/_ext/w2b_sphinx.py``), so that the published site
serves them. The book's archive holds the student archive but never itself.

Run as ``python tools/dist.py [--site _build/html] [--out dist]`` (``make dist`` builds the book first).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The site's folder that the landing page's links point into (see book/_ext/w2b_sphinx.py).
SITE_DOWNLOADS = "downloads"
# What the library's wheel is built from (the grader, lib/word2bert_grader, is not in it).
WHEEL_SOURCES = ["pyproject.toml", "README.md", "LICENSE", "LICENSE-text"]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "build")


def version() -> str:
    """The library's version, `word2bert.__version__` (tests check it equals pyproject.toml's)."""
    sys.path.insert(0, str(ROOT / "lib"))
    try:
        import word2bert
    finally:
        sys.path.pop(0)
    return word2bert.__version__


def archive_name(kind: str, ver: str | None = None) -> str:
    """``word2bert-<kind>-<version>.zip``, kind ``book`` or ``student``."""
    return f"word2bert-{kind}-{ver or version()}.zip"


def _zip_folder(folder: Path, target: Path, prefix: str, skip=lambda rel: False) -> None:
    """Every file under `folder` into `target`, below the top folder `prefix`, in sorted order."""
    tmp = target.with_suffix(".zip.part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and not path.is_symlink() and not skip(rel):
                archive.write(path, f"{prefix}/{rel}")
    tmp.replace(target)


def pip_wheel(src: Path, out: Path, distribution: str) -> Path:
    """The wheel of ``distribution`` that pip builds from ``src`` into ``out``: no dependencies, no build isolation
    (offline: the installed setuptools)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", str(src)]
        + ["-w", str(out)],
        check=True,
        cwd=src.parent,
    )
    (wheel,) = out.glob(f"{distribution}-*.whl")
    return wheel


def build_wheel(dest: Path, root: Path = ROOT) -> Path:
    """The `word2bert` wheel, built from a copy of the sources (no build/ or egg-info left here)."""
    with tempfile.TemporaryDirectory(prefix="w2b-wheel-") as tmp:
        src = Path(tmp) / "src"
        (src / "lib").mkdir(parents=True)
        for name in WHEEL_SOURCES:
            shutil.copy2(root / name, src / name)
        shutil.copytree(root / "lib" / "word2bert", src / "lib" / "word2bert", ignore=SKIP)
        wheel = pip_wheel(src, Path(tmp) / "wheel", "word2bert")
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheel, dest / wheel.name))


STUDENT_README = """\
# word2bert {version}: the exercises

The graded exercises of the course "From word2vec to BERT", with the course's library:

- `exercises/<name>/<name>.ipynb`: one notebook per chapter;
- `wheels/{wheel}`: the `word2bert` library that the notebooks import (its trained checkpoints
  included).

## Install (once)

You need Python 3.10 or newer (the course is tested with 3.11). In this folder:

```bash
python3 -m venv .venv
# Optional, on a machine without an NVIDIA GPU: the CPU build of PyTorch is much smaller.
.venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
.venv/bin/pip install wheels/{wheel} jupyterlab nbgrader
```

On Windows, use `.venv\\Scripts\\` in place of `.venv/bin/`.

## Open an exercise

```bash
.venv/bin/jupyter lab exercises/01-word2vec/01-word2vec.ipynb
```

Write your code in the cells that say `# YOUR CODE HERE`, run the visible tests below each answer, and
check the whole notebook before you hand it in:

```bash
.venv/bin/nbgrader validate exercises/01-word2vec/01-word2vec.ipynb
```

Hand in the notebook itself, under its own name, as your course asks. The book's page "Exercises: how
to work on them and hand them in" explains the rules (what your answers may use, the time limits, the
hidden tests).
"""

BOOK_README = """\
From word2vec to BERT, version {version}: the whole book, to read without a network.

Open index.html in this folder with a web browser. Search, figures and formulas work offline.
The exercises, with the library to run them, are in downloads/{student}.
"""


def student_archive(out: Path, root: Path = ROOT, ver: str | None = None) -> Path:
    """dist/word2bert-student-<version>.zip: exercises/, the library's wheel, a README."""
    ver = ver or version()
    target = out / archive_name("student", ver)
    with tempfile.TemporaryDirectory(prefix="w2b-student-") as tmp:
        folder = Path(tmp) / "student"
        shutil.copytree(root / "exercises", folder / "exercises", ignore=SKIP)
        wheel = build_wheel(folder / "wheels", root)
        (folder / "README.md").write_text(STUDENT_README.format(version=ver, wheel=wheel.name), encoding="utf-8")
        _zip_folder(folder, target, f"word2bert-student-{ver}")
    return target


def book_archive(site: Path, out: Path, ver: str | None = None) -> Path:
    """dist/word2bert-book-<version>.zip: the site, with its downloads but not any book archive."""
    ver = ver or version()
    target = out / archive_name("book", ver)
    if not (site / "index.html").is_file():
        raise SystemExit(f"no built site at {site} (index.html missing): run `make book` first")

    def itself(rel: str) -> bool:  # this archive, or a book archive of another version
        return rel.startswith(f"{SITE_DOWNLOADS}/word2bert-book-") or rel.endswith(".zip.part")

    with tempfile.TemporaryDirectory(prefix="w2b-book-") as tmp:
        readme = Path(tmp) / "README.txt"
        readme.write_text(BOOK_README.format(version=ver, student=archive_name("student", ver)), encoding="utf-8")
        _zip_folder(site, target, f"word2bert-book-{ver}", skip=itself)
        with zipfile.ZipFile(target, "a", zipfile.ZIP_DEFLATED) as archive:
            archive.write(readme, f"word2bert-book-{ver}/README.txt")
    return target


def publish(archive: Path, site: Path) -> Path:
    """Copy an archive into the site's downloads/, replacing other versions of the same kind."""
    folder = site / SITE_DOWNLOADS
    folder.mkdir(exist_ok=True)
    kind = archive.name.split("-")[1]
    for old in folder.glob(f"word2bert-{kind}-*.zip"):
        if old.name != archive.name:
            old.unlink()
    return Path(shutil.copy2(archive, folder / archive.name))


def make_dist(site: Path = ROOT / "_build" / "html", out: Path = ROOT / "dist", root: Path = ROOT) -> dict[str, Path]:
    """Write both archives into `out` and the site's downloads/; return them by kind."""
    ver = version()
    out.mkdir(parents=True, exist_ok=True)
    student = student_archive(out, root, ver)
    publish(student, site)  # before the book's archive, which carries it
    book = book_archive(site, out, ver)
    publish(book, site)
    return {"book": book, "student": student}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    args = parser.parse_args(argv)
    for kind, path in make_dist(args.site, args.out).items():
        print(
            f"{kind:8} {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
            f"({path.stat().st_size / 2**20:.1f} MiB)"
        )


if __name__ == "__main__":
    main()
