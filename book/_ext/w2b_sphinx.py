"""Two fixes for the book's build, loaded from _config.yml (`sphinx.local_extensions`).

1. Progress bars. tqdm redraws its bar with carriage returns, and the kernel sends the redraws as
   many stream messages. myst-nb's `nb_merge_streams` joins them with a newline between messages,
   which leaves every redraw on its own line. Here the messages are joined as a terminal would show
   them, so a finished progress bar reads as one line of text.
2. Duplicate scripts. Sphinx 7.4 keeps an inline script added after the builder starts twice (once
   with filename None, once with ''), so sphinx-thebe's `const THEBE_JS_URL = ...` and
   sphinx-togglebutton's settings appear twice on every page, and the second `const` is a console
   error. Each page keeps the first copy.
"""

import re

import myst_nb.core.render

_OVERWRITTEN = re.compile(
    r"[^\n]*\r(?=[^\n])"
)  # text that a later carriage return on its line redraws


def _terminal_text(text: str) -> str:
    while (
        shorter := re.sub(r"[^\n\x08]\x08", "", text)
    ) != text:  # a backspace erases the character before
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


def setup(app):
    myst_nb.core.render.coalesce_streams = coalesce_streams
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
