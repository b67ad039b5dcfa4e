"""Execute the book's notebooks a few at a time into the build's jupyter-cache, before `jupyter-book build`.

myst-nb executes a page's notebook when Sphinx reads the page, one page after another, and most notebooks keep one
core busy: on two cores, half the machine waits. Here each notebook that the cache does not hold yet runs in a
process of its own, ``--jobs`` at a time (the longest first, by the times on the landing page), exactly as myst-nb
would run it (the same executor, working directory, timeout and environment), and its outputs go into the same
cache under the same key. The build then finds every notebook there. A notebook that fails is reported and left
out of the cache, so the build runs it again and reports the failure as it always does.

Run by `make book`; ``python tools/execute_book.py --jobs 2 [paths...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from w2b_sphinx import retina_profile  # noqa: E402  (the build's extension: its kernels' settings are ours)

TIMES = ROOT / "book" / "_diagrams" / "chapter_times.json"


def execute_config(root: Path = ROOT) -> dict:
    """The `execute:` section of the book's _config.yml: cache, timeout, allow_errors, exclude_patterns."""
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["execute"]


def book_notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks the build executes: every .ipynb under book/ but those _config.yml excludes."""
    excluded = execute_config(root)["exclude_patterns"]
    return [
        p
        for p in sorted((root / "book").rglob("*.ipynb"))
        if ".ipynb_checkpoints" not in p.parts and not any(p.match(pattern) for pattern in excluded)
    ]


def execute(path: Path, timeout: int, allow_errors: bool) -> tuple[Path, nbformat.NotebookNode, float, str | None]:
    """One notebook, as myst-nb's cache mode executes it (myst_nb.core.execute.cache)."""
    nb = nbformat.read(path, as_version=4)
    result = single_nb_execution(
        nb, cwd=str(path.parent), allow_errors=allow_errors, timeout=timeout, meta_override=True
    )
    return path, nb, result.time, result.exc_string if result.err is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: the book's)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's folder (its _config.yml)")
    args = parser.parse_args(argv)
    execute_settings = execute_config(args.root)
    timeout, allow_errors = int(execute_settings["timeout"]), bool(execute_settings["allow_errors"])
    cache = get_cache(str(args.root / execute_settings.get("cache", "_build/.jupyter_cache")))

    def cached(path: Path) -> bool:
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            return False
        return True

    todo = [p.resolve() for p in (args.paths or book_notebooks(args.root)) if not cached(p)]
    seconds = json.loads(TIMES.read_text(encoding="utf-8"))["seconds"] if TIMES.exists() else {}
    todo.sort(key=lambda p: -seconds.get(str(p.relative_to(args.root).with_suffix("")), 0))
    # What the build gives its kernels (book/_ext/w2b_sphinx.py): no progress bars, Python's default warnings, figures
    # at twice their resolution; and one torch thread per notebook when several share the cores.
    os.environ["TQDM_DISABLE"] = "1"
    os.environ.pop("PYTHONWARNINGS", None)
    profile = retina_profile()  # figures at twice their resolution, as the build draws them
    os.environ["IPYTHONDIR"] = str(profile)
    if args.jobs > 1:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(f"execute_book: {len(todo)} notebook(s) to run, {args.jobs} at a time", flush=True)
    start, failed = time.monotonic(), []
    with ProcessPoolExecutor(args.jobs) as pool:
        runs = [pool.submit(execute, p, timeout, allow_errors) for p in todo]
        for run in runs:
            path, nb, took, error = run.result()
            name = path.relative_to(args.root)
            if error is not None:
                failed.append(name)
                print(f"execute_book: {name} FAILED (the build runs it again and reports it):\n{error}", flush=True)
                continue
            bundle = CacheBundleIn(nb, str(path), data={"execution_seconds": took})
            cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
            print(f"execute_book: {name} in {took:.0f} s", flush=True)
    print(f"execute_book: {len(todo) - len(failed)} executed, {len(failed)} failed, {time.monotonic() - start:.0f} s")
    shutil.rmtree(profile, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
