"""Four fixes for the book's build, loaded from _config.yml (`sphinx.local_extensions`).

1. Redrawn text. Output that redraws itself with carriage returns (a progress bar of another
   library, a counter) reaches the page as many stream messages. myst-nb's `nb_merge_streams` joins
   them with a newline between messages, which leaves every redraw on its own line. Here the
   messages are joined as a terminal would show them, so only the final state is left.
2. Duplicate scripts. Sphinx 7.4 keeps an inline script added after the builder starts twice (once
   with filename None, once with ''), so sphinx-thebe's `const THEBE_JS_URL = ...` and
   sphinx-togglebutton's settings appear twice on every page, and the second `const` is a console
   error. Each page keeps the first copy.
3. No progress bars on the pages. A finished bar ("100%|████| 200/200 [00:41, 4.8it/s]") says nothing
   to a reader. The notebooks' kernels inherit this process's environment, and tqdm's own switch,
   `TQDM_DISABLE=1`, silences every bar the library shows (`word2bert.training.progress_bar`); in
   a terminal or a notebook of one's own the bars stay. Outputs executed before this switch existed
   live on in the jupyter-cache: `jupyter-book clean --all` drops them.
4. Sharp charts. The kernels' inline figures are PNGs at twice their resolution ("retina"), shown at their size
   in inches: on a phone, which shrinks a 5-inch chart to fit, and on a high-density screen, the labels stay sharp.
   The kernels read it from an IPython profile of the build's own (`IPYTHONDIR`), made here and removed at the end;
   a reader's own Jupyter keeps its settings.

And one role, ``{w2b-download}`book``` (or ``student``, or ``{w2b-download}`text <book>```): a link to
this version's offline archive, ``downloads/word2bert-<kind>-<version>.zip`` at the site's root, which
``make dist`` (tools/dist.py) writes there. The version is the library's, ``word2bert.__version__``.
"""

import os
import re
import shutil
import tempfile
from pathlib import Path

import myst_nb.core.render
from docutils import nodes

_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n])")  # text that a later carriage return on its line redraws


def _terminal_text(text: str) -> str:
    while (shorter := re.sub(r"[^\n\x08]\x08", "", text)) != text:  # a backspace erases the character before
        text = shorter
    return _OVERWRITTEN.sub("", text)


def coalesce_streams(outputs: list) -> list:
    """Join a cell's stdout messages into one output, and its stderr ones, as a terminal would."""
    merged, streams = [], {}
    for output in outputs or []:
        if output["output_type"] != "stream":
            merged.append(output)
        elif output["name"] in streams:
            streams[output["name"]]["text"] += output["text"]
        else:
            streams[output["name"]] = output
            merged.append(output)
    for output in streams.values():
        output["text"] = _terminal_text(output["text"])
    return merged


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (script.filename or "", tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


_DOWNLOAD = re.compile(r"^(?:(?P<text>.*?)\s*<(?P<kind>[a-z]+)>|(?P<bare>[a-z]+))$", re.S)
DOWNLOAD_KINDS = ("book", "student")


def download_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{w2b-download}`book``` -> a link to ``<site root>/downloads/word2bert-book-<version>.zip``."""
    import word2bert

    match = _DOWNLOAD.match(text.strip())
    kind = match and (match["kind"] or match["bare"])
    if kind not in DOWNLOAD_KINDS:
        msg = inliner.reporter.error(
            f"w2b-download: {text!r} is not one of {DOWNLOAD_KINDS} (or 'text <kind>')", line=lineno
        )
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    filename = f"word2bert-{kind}-{word2bert.__version__}.zip"
    docname = inliner.document.settings.env.docname
    uri = "../" * docname.count("/") + f"downloads/{filename}"
    label = (match["text"] if match["kind"] else None) or filename
    node = nodes.reference(rawtext, "", refuri=uri, classes=["w2b-download"])
    node += nodes.literal(label, label) if label == filename else nodes.Text(label)
    return [node], []


def retina_profile() -> Path:
    """An IPython folder whose kernels draw inline figures at twice their resolution (also used by
    tools/execute_book.py, which runs the notebooks before the build)."""
    folder = Path(tempfile.mkdtemp(prefix="w2b-ipython-"))
    (folder / "profile_default").mkdir()
    config = 'c.InlineBackend.figure_formats = {"retina"}\n'
    (folder / "profile_default" / "ipython_kernel_config.py").write_text(config, encoding="utf-8")
    return folder


def setup(app):
    os.environ["TQDM_DISABLE"] = "1"  # read by tqdm when a notebook's kernel imports it
    profile = retina_profile()
    os.environ["IPYTHONDIR"] = str(profile)  # read by each notebook's kernel when it starts
    app.connect("build-finished", lambda app, exception: shutil.rmtree(profile, ignore_errors=True))
    # Warnings settings of the build (the tests show deprecation warnings) are not the notebooks': their
    # kernels, which inherit this environment, keep Python's defaults, and their pages stay the same.
    os.environ.pop("PYTHONWARNINGS", None)
    myst_nb.core.render.coalesce_streams = coalesce_streams
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.add_role("w2b-download", download_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
