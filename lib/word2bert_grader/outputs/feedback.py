"""What the student and the instructor get back, built from data alone: the student's page (hidden tests never shown,
student text escaped or cleaned, a size cap) and the instructor's graded copy, in nbgrader's format."""

import base64
import binascii
import contextlib
import json
import re

import bleach
from markdown_it import MarkdownIt
from markupsafe import Markup

from word2bert_grader.assignment import Kind, meta
from word2bert_grader.outputs import _PAGES
from word2bert_grader.task import Result

MAX_PAGE_CHARS = 2_000_000
# Student text is rendered or cleaned within limits (markdown-it is quadratic in link reference definitions, switched
# off; html5lib in nested formatting tags): past them, markdown shows as plain text and HTML as the text/plain.
MAX_MARKDOWN_CHARS = 20_000  # of one student markdown cell or written answer, rendered
MARKDOWN_BUDGET = 100_000  # characters of student markdown rendered per submission
MAX_HTML_CHARS = 20_000  # of one HTML output, cleaned
MAX_HTML_TAGS = 500  # of one HTML output, cleaned (a 30-row table has about 300)
HTML_TAG_BUDGET = 2_000  # tags cleaned per submission
MAX_HTML_GROWTH = 4  # a cleaned output longer than this many times its input is shown as text instead
_markdown = MarkdownIt("commonmark", {"html": False}).disable("reference")  # raw HTML in markdown is shown as text
_TAGS = set("table thead tbody tr th td p b i em strong code pre span div br ul ol li h1 h2 h3 h4 sub sup".split())
_parts = _PAGES.get_template("feedback.html").module  # the page's macros


class Sanitizer:
    """Makes a submission's student text safe to show, once, within the limits above."""

    def __init__(self):
        self.markdown_left = MARKDOWN_BUDGET
        self.tags_left = HTML_TAG_BUDGET

    def markdown(self, text: str) -> Markup:
        """Student markdown as HTML without raw HTML, or as escaped plain text past the limits."""
        if len(text) <= min(MAX_MARKDOWN_CHARS, self.markdown_left):
            self.markdown_left -= len(text)
            return Markup(_markdown.render(text))
        return Markup("<pre>{}</pre>").format(text)

    def outputs(self, records) -> None:
        """Every display output of the records, replaced by the one representation shown (see ``display``)."""
        for record in records:
            shown = [o if o.get("type") == "stream" else self.display(o.get("data", {})) for o in record.outputs]
            record.outputs = [o if isinstance(o, dict) else {"type": "display", "data": dict([o])} for o in shown]

    def display(self, data: dict) -> tuple[str, str]:
        """What a display output shows: a PNG that is one, HTML cleaned by bleach within limits, or its plain text."""
        png = data.get("image/png", "")
        with contextlib.suppress(binascii.Error, ValueError):  # a PNG that is one: base64 of its magic number
            head = base64.b64decode(png[:64] + "=" * (-len(png[:64]) % 4)) if isinstance(png, str) and png else b""
            if re.fullmatch(r"[A-Za-z0-9+/=\s]+", png or "-") and head[:8] == b"\x89PNG\r\n\x1a\n":
                return "image/png", png
        markup = data.get("text/html")
        if isinstance(markup, str):
            tags = markup.count("<")
            if len(markup) <= MAX_HTML_CHARS and tags <= min(MAX_HTML_TAGS, self.tags_left):
                self.tags_left -= tags
                cleaned = bleach.clean(markup, tags=_TAGS, attributes={}, strip=True)
                if len(cleaned) <= MAX_HTML_GROWTH * max(len(markup), 1000):
                    return "text/html", Markup(cleaned)
        text = data.get("text/plain", "")
        return "text/plain", text if isinstance(text, str) else ""


def page(result: Result, records, sanitizer: Sanitizer) -> str:
    """The student's page; ``records``' outputs made safe by ``sanitizer`` first (:meth:`Sanitizer.outputs`)."""
    left, parts = MAX_PAGE_CHARS, [_parts.head(result)]
    labels = {Kind.SETUP: "read-only cell", Kind.ANSWER: "your answer: {}", Kind.STUDENT: "your cell"}
    for record in records:
        step = record.step
        if step.kind is Kind.MARKDOWN:
            shown = sanitizer.markdown(step.source) if step.student_markdown else Markup(_markdown.render(step.source))
            part = _parts.markdown(shown)
        elif step.kind in labels:
            part = _parts.code(record, labels[step.kind].format(step.grade_id))
        elif step.kind is Kind.TEST:
            part = _parts.test(record, result.cells.get(step.grade_id, 0.0))
        else:
            part = _parts.written(step, sanitizer.markdown(step.source) if step.source.strip() else "")
        if len(part) > left:  # the page's size cap: nothing more after the first part that does not fit
            parts.append(_parts.cut())
            break
        left -= len(part)
        parts.append(part)
    return "".join(parts) + "</body></html>"


def failure_page(result: Result) -> str:
    return str(_parts.failure(result))


def with_lateness(page: str, lateness, score: float) -> str:
    """The page with when it came in, the due date, the penalty and the score after it, under its title."""
    penalty, text = lateness.penalty(score), lateness.describe()
    if lateness.late or penalty:
        text += f". Late penalty: {penalty:g} points; score after the penalty: {score - penalty:g}"
    head, found, rest = page.partition("</h1>")
    return head + found + str(_parts.deadline(text)) + rest if found else page


def graded_notebook(source_cells: list[dict], records) -> str:
    """The instructor's graded copy, as nbformat 4 JSON (outputs made safe by :meth:`Sanitizer.outputs` first)."""
    metadata = {meta(c).get("grade_id"): c.get("metadata", {}) for c in source_cells if meta(c)}
    cells, left = [], MAX_PAGE_CHARS  # the instructor's copy has a size cap too
    for record in records:
        step = record.step
        own = metadata.get(step.grade_id, {}) if step.kind not in (Kind.STUDENT, Kind.MARKDOWN) else {}
        if not step.kind.runs:  # a written answer keeps its grade id: formgrader grades it there
            # the student's markdown as fenced text: formgrader renders the instructor's copy unsanitised
            fence = "`" * max(3, 1 + max(map(len, re.findall(r"`+", step.source)), default=0))
            text = f"{fence}text\n{step.source}\n{fence}" if step.student_markdown else step.source
            cells.append({"cell_type": "markdown", "metadata": own, "source": text})
            continue
        outputs = []
        # a test cell shows the grader's verdict only, not what its visible half printed in the sandbox
        for o in record.outputs if step.kind is not Kind.TEST else []:
            left -= len(json.dumps(o))  # the cleaned output (Sanitizer.outputs) is what is counted
            if left < 0:
                outputs.append({"output_type": "stream", "name": "stdout", "text": "(output left out: size limit)"})
                break
            if o["type"] == "stream":
                outputs.append({"output_type": "stream", "name": o["name"], "text": o["text"]})
            else:
                outputs.append({"output_type": "display_data", "data": o["data"], "metadata": {}})
        if record.failure:
            outputs.append({"output_type": "error", "ename": "NotGraded", "evalue": record.failure, "traceback": []})
        if step.kind is Kind.TEST and record.test_output:
            outputs.append({"output_type": "stream", "name": "stdout", "text": record.test_output})
        if step.kind is Kind.TEST and not record.passed:
            message = record.message or "not run"
            outputs.append({"output_type": "error", "ename": "TestFailed", "evalue": message, "traceback": [message]})
        cells.append({"cell_type": "code", "metadata": own, "source": step.source, "outputs": outputs})
        cells[-1]["execution_count"] = None
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i}"
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, ensure_ascii=False)
