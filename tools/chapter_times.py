"""How long each of the book's notebooks took to execute, from a build's jupyter-cache, into
``book/_diagrams/chapter_times.json``: the course map (``book/_diagrams/draw.py``) and the landing page's table give
the chapters' sums. ``tests/test_book.py`` checks a new build's times against the file.

Run after ``make book`` on the machine the landing page names, then redraw the map and copy the rows it prints into
``book/intro.ipynb`` (a Markdown cell)::

    python tools/chapter_times.py --machine "a quiet 2-core virtual machine, one torch thread per notebook"
    python book/_diagrams/draw.py
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
from pathlib import Path

import yaml
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]
DRAW = ROOT / "book" / "_diagrams" / "draw.py"


def draw_module():
    spec = importlib.util.spec_from_file_location("word2bert_book_diagrams", DRAW)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notebook_seconds(cache_dir: Path, root: Path = ROOT) -> dict[str, float]:
    """Page (its path from ``root`` without suffix) -> seconds its latest cached execution took, for every notebook
    of the book whose execution the cache holds."""
    latest: dict[str, tuple] = {}
    for record in get_cache(str(cache_dir)).list_cache_records():
        seconds = (record.data or {}).get("execution_seconds")
        path = Path(record.uri)
        if seconds is None or root not in path.parents or path.suffix != ".ipynb":
            continue
        page = path.relative_to(root).with_suffix("").as_posix()
        if page.startswith("book/") and (page not in latest or record.created > latest[page][0]):
            latest[page] = (record.created, seconds)
    return {page: round(seconds, 1) for page, (_, seconds) in sorted(latest.items())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    parser.add_argument("--cache", type=Path, default=ROOT / config["execute"]["cache"])
    parser.add_argument("--machine", required=True, help="where the build ran, in words, for the landing page")
    args = parser.parse_args(argv)
    seconds = notebook_seconds(args.cache)
    draw = draw_module()
    data = {"measured": datetime.date.today().isoformat(), "machine": args.machine, "seconds": seconds}
    draw.CHAPTER_TIMES.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {draw.CHAPTER_TIMES.relative_to(ROOT)}; the landing page's rows:")
    print("\n".join(draw.landing_rows()))


if __name__ == "__main__":
    main()
