"""Run the book's notebooks as plain Python, on a machine that has the library's dependencies but no Jupyter: a GPU
box, say, where the book's asserts must hold too (issue 49). Each notebook runs in a process of its own, from its own
folder, its code cells in order in one namespace, with matplotlib's Agg backend; ``IPython.display`` and ``myst_nb``
are stood in for where they are missing (a Markdown or Code object is only built, and ``glue`` does nothing), so every
computation and every hidden assert runs as in the book's build. A cell whose assert fails is recorded and the next
cells run, so that one run reports every claim that does not hold. Prints one line per notebook and writes a JSON
summary: its seconds, and each failing cell's index and traceback.

    python tools/run_notebooks_plain.py --jobs 4 --out results.json book            # every notebook under book/
    W2B_DEVICE=cuda python tools/run_notebooks_plain.py book/03-gpt/03-training.ipynb

A notebook whose first error is a missing module (the real weights' packages, say) is reported as skipped with the
module's name, not as a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def _stand_ins() -> None:
    """Minimal ``IPython.display`` and ``myst_nb`` where the real ones are not installed."""
    try:
        import IPython.display  # noqa: F401
    except ImportError:
        display = types.ModuleType("IPython.display")

        class _Shown:
            def __init__(self, data=None, *args, **kwargs):
                self.data = data

        for name in ("Markdown", "Code", "HTML", "Image", "SVG", "Latex", "JSON"):
            setattr(display, name, type(name, (_Shown,), {}))
        display.display = lambda *objects, **kwargs: None
        ipython = types.ModuleType("IPython")
        ipython.display = display
        ipython.get_ipython = lambda: None  # matplotlib asks whether it runs under IPython, and which
        ipython.version_info = (9, 0, 0)
        sys.modules |= {"IPython": ipython, "IPython.display": display}
    try:
        import myst_nb  # noqa: F401
    except ImportError:
        myst_nb = types.ModuleType("myst_nb")
        myst_nb.glue = lambda name, value, display=True: None
        sys.modules["myst_nb"] = myst_nb


def run_one(path: Path) -> dict:
    """In this process: every code cell of ``path``; the index and traceback of the first that raises."""
    import traceback

    import matplotlib

    matplotlib.use("Agg")
    _stand_ins()
    import matplotlib.pyplot as plt

    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    os.chdir(path.parent)
    namespace: dict = {"__name__": "__main__"}
    failures = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            exec(compile(source, f"{path.name}[{index}]", "exec"), namespace)
        except ModuleNotFoundError as error:
            if not failures:
                return {"status": "skipped", "cell": index, "missing": error.name}
            failures.append({"cell": index, "error": traceback.format_exc(limit=6)})
        except AssertionError:  # a claim that does not hold: the later cells still run, to check theirs
            failures.append({"cell": index, "error": traceback.format_exc(limit=6)})
        except BaseException:
            failures.append({"cell": index, "error": traceback.format_exc(limit=6)})
            break
        plt.close("all")
    if failures:
        return {"status": "failed", "cell": failures[0]["cell"], "error": failures[0]["error"], "failures": failures}
    return {"status": "passed"}


def run(path: Path, timeout: float) -> dict:
    """``run_one`` in a fresh interpreter, timed."""
    started = time.time()
    command = [sys.executable, __file__, "--one", str(path.resolve())]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        tail = done.stdout.strip().splitlines()
        result = json.loads(tail[-1]) if tail else {"status": "failed", "error": done.stderr[-3000:]}
    except subprocess.TimeoutExpired:
        result = {"status": "failed", "error": f"over {timeout:.0f} s"}
    except json.JSONDecodeError:
        result = {"status": "failed", "error": done.stderr[-3000:]}
    return {"notebook": str(path), "seconds": round(time.time() - started, 1), **result}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", type=Path, default=[Path("book")])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per notebook")
    p.add_argument("--out", type=Path, default=None, help="the JSON summary")
    p.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one)))
        return 0
    # notebooks named one by one run in the order given (the longest first, say); a folder's in name order
    notebooks = [
        nb
        for path in args.paths
        for nb in ([path] if path.suffix == ".ipynb" else sorted(path.rglob("*.ipynb")))
        if ".ipynb_checkpoints" not in nb.parts and "_build" not in nb.parts
    ]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = []
        for result in pool.map(lambda nb: run(nb, args.timeout), notebooks):
            results.append(result)
            print(f"{result['status']:8} {result['seconds']:7.1f} s  {result['notebook']}", flush=True)
            if result["status"] != "passed":
                for failure in result.get("failures") or [result]:
                    text = failure.get("error") or f"missing module {failure.get('missing')}"
                    print("  " + text.replace("\n", "\n  "))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return int(any(r["status"] == "failed" for r in results))


if __name__ == "__main__":
    sys.exit(main())
