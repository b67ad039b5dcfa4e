"""What the student and the instructor get back, built by the grader from data alone.

- :func:`page`: the student's feedback, one self-contained HTML page: their cells and outputs, each
  test's verdict and message. Hidden tests appear only as "hidden tests ran here" and their failure
  message (written for the student); their source and output never. Everything the student wrote
  is escaped or sanitized (markdown rendered without raw HTML, HTML outputs cleaned by bleach, images
  only as PNG data), and the page has a size cap of its own.
- :func:`graded_notebook`: the instructor's copy (``autograded/``), with the hidden tests, the
  sandbox's outputs and the verdicts, in nbgrader's cell format. Formgrader shows it unsanitised, so the
  student's markdown is there as fenced text and the outputs as the page has them.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re

import bleach
from markdown_it import MarkdownIt

from word2bert_grader.assignment import Kind
from word2bert_grader.task import Result

MAX_PAGE_CHARS = 2_000_000
# Student text is rendered or cleaned within limits, because the libraries' cost is not linear in it: markdown-it
# takes time quadratic in link reference definitions (switched off: "[a]: b" shows as text) and about 0.1 ms a
# character on other hostile input; html5lib's output and time grow with the square of nested formatting tags
# ("<b id=1><p>" repeated). Past a limit, markdown is shown as plain text and HTML as the output's text/plain.
MAX_MARKDOWN_CHARS = 20_000  # of one student markdown cell or written answer, rendered
MARKDOWN_BUDGET = 100_000  # characters of student markdown rendered per submission
MAX_HTML_CHARS = 20_000  # of one HTML output, cleaned
MAX_HTML_TAGS = 500  # of one HTML output, cleaned (a 30-row table has about 300)
HTML_TAG_BUDGET = 2_000  # tags cleaned per submission
MAX_HTML_GROWTH = 4  # a cleaned output longer than this many times its input is shown as text instead
_markdown = MarkdownIt("commonmark", {"html": False}).disable("reference")  # raw HTML in markdown is shown as text
_TAGS = {
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "p",
    "b",
    "i",
    "em",
    "strong",
    "code",
    "pre",
    "span",
    "div",
    "br",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "sub",
    "sup",
}

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
.cell { margin: 1rem 0; } .label { font-size: .8rem; color: #666; }
.pass { border-left: 4px solid #2a7; padding-left: .6rem; } .fail { border-left: 4px solid #c33; padding-left: .6rem; }
.output { border-left: 2px solid #ccc; padding-left: .6rem; } .note { background: #fff7e0; padding: .5rem; }
img { max-width: 100%; }
"""


class _Budget:
    def __init__(self, chars: int):
        self.left = chars

    def fits(self, n: int) -> bool:
        """Spend ``n`` characters if they are left (once one does not fit, nothing more does)."""
        if n <= self.left:
            self.left -= n
            return True
        self.left = 0
        return False

    def take(self, text: str) -> str:
        if self.fits(len(text)):
            return text
        return "<p class='note'>(more output was left out: the feedback page has a size limit)</p>"


class Sanitizer:
    """Makes a submission's student text safe to show, once, within the limits above."""

    def __init__(self):
        self.markdown_left = MARKDOWN_BUDGET
        self.tags_left = HTML_TAG_BUDGET

    def markdown(self, text: str) -> str:
        """Student markdown as HTML without raw HTML, or as escaped plain text past the limits."""
        if len(text) <= min(MAX_MARKDOWN_CHARS, self.markdown_left):
            self.markdown_left -= len(text)
            return _markdown.render(text)
        return f"<pre>{html.escape(text)}</pre>"

    def outputs(self, records) -> None:
        """Every display output of the records, replaced by the one representation shown (see ``display``)."""
        for record in records:
            record.outputs = [
                o if o.get("type") == "stream" else {"type": "display", "data": dict([self.display(o.get("data", {}))])}
                for o in record.outputs
            ]

    def display(self, data: dict) -> tuple[str, str]:
        """What of a display output the student's page and the instructor's copy show: a PNG that is one, HTML
        cleaned by bleach (no scripts, no attributes) within the limits, or the plain text; nothing else (no
        JavaScript, SVG...)."""
        png = data.get("image/png", "")
        if isinstance(png, str) and png and _is_png(png):
            return "image/png", png
        markup = data.get("text/html")
        if isinstance(markup, str):
            tags = markup.count("<")
            if len(markup) <= MAX_HTML_CHARS and tags <= min(MAX_HTML_TAGS, self.tags_left):
                self.tags_left -= tags
                cleaned = bleach.clean(markup, tags=_TAGS, attributes={}, strip=True)
                if len(cleaned) <= MAX_HTML_GROWTH * max(len(markup), 1000):
                    return "text/html", cleaned
        text = data.get("text/plain", "")
        return "text/plain", text if isinstance(text, str) else ""


def page(result: Result, records, sanitizer: Sanitizer) -> str:
    """The student's page; ``records``' outputs made safe by ``sanitizer`` first (:meth:`Sanitizer.outputs`)."""
    budget = _Budget(MAX_PAGE_CHARS)
    parts = [_header(result)]
    for record in records:
        step = record.step
        if step.kind is Kind.MARKDOWN:
            text = sanitizer.markdown(step.source) if step.student_markdown else _markdown.render(step.source)
            parts.append(budget.take(f"<div class='cell'>{text}</div>"))
        elif step.kind in (Kind.SETUP, Kind.ANSWER, Kind.STUDENT):
            label = {"setup": "read-only cell", "answer": f"your answer: {step.grade_id}", "student": "your cell"}[
                step.kind
            ]
            body = f"<div class='label'>{html.escape(label)}</div><pre>{html.escape(step.source)}</pre>"
            body += "".join(_output(o) for o in record.outputs)
            if record.failure:
                body += f"<p class='note'>This cell {html.escape(record.failure)}.</p>"
            parts.append(budget.take(f"<div class='cell'>{body}</div>"))
        elif step.kind is Kind.TEST:
            parts.append(budget.take(_test(record, result)))
        elif step.kind is Kind.WRITTEN:
            label = f"your written answer: {step.grade_id}, {step.points:g} points, graded by hand"
            answer = sanitizer.markdown(step.source) if step.source.strip() else "<p>(no answer)</p>"
            parts.append(
                budget.take(
                    f"<div class='cell'><div class='label'>{html.escape(label)}</div>"
                    f"<div class='output'>{answer}</div></div>"
                )
            )
    parts.append("</body></html>")
    return "".join(parts)


def _header(result: Result) -> str:
    title = f"{result.assignment}: feedback for {result.student}"
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result.notes)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p><b>Score: {result.score:g} / {result.max_score:g}</b>"
        + (f" and {sum(result.written.values()):g} points of written answers, graded by hand" if result.written else "")
        + "</p>"
        + (f"<div class='note'><p>While grading:</p><ul>{notes}</ul></div>" if notes else "")
    )


def _test(record, result: Result) -> str:
    step = record.step
    hidden = step.visible != step.source
    earned = result.cells.get(step.grade_id, 0.0)
    verdict = "passed" if record.passed else "failed"
    body = (
        f"<div class='label'>test {html.escape(step.grade_id)}: {verdict}, {earned:g} / {step.points:g} "
        f"points</div><pre>{html.escape(step.visible.strip())}"
        + ("\n# (hidden tests ran here)" if hidden else "")
        + "</pre>"
    )
    if record.test_output:
        body += f"<div class='output'><pre>{html.escape(record.test_output)}</pre></div>"
    if not record.passed:
        body += f"<div class='output'><pre>{html.escape(record.message or 'not run')}</pre></div>"
    return f"<div class='cell {'pass' if record.passed else 'fail'}'>{body}</div>"


def _output(output: dict) -> str:
    if output.get("type") == "stream":
        return f"<div class='output'><pre>{html.escape(output['text'])}</pre></div>"
    ((mime, value),) = output["data"].items()  # made safe by Sanitizer.outputs
    if mime == "image/png":
        return f"<div class='output'><img alt='a figure from your cell' src='data:image/png;base64,{value}'></div>"
    if mime == "text/html":
        return f"<div class='output'>{value}</div>"
    return f"<div class='output'><pre>{html.escape(value)}</pre></div>"


def _fenced(markdown: str) -> str:
    """The student's markdown for the instructor's copy, as a fenced block of text: formgrader renders a
    notebook's markdown and outputs without sanitising them, on the instructor's Jupyter session."""
    fence = "`" * max(3, 1 + max(map(len, re.findall(r"`+", markdown)), default=0))
    return f"{fence}text\n{markdown}\n{fence}"


def _is_png(data: str) -> bool:
    if not re.fullmatch(r"[A-Za-z0-9+/=\s]+", data):
        return False
    try:
        return base64.b64decode(data[:64] + "=" * (-len(data[:64]) % 4))[:8] == b"\x89PNG\r\n\x1a\n"
    except (binascii.Error, ValueError):
        return False


def with_lateness(page: str, lateness, score: float) -> str:
    """The page with what the deadline changes (a :class:`~intake.deadlines.Lateness`) under its title:
    when it came in, the due date, the penalty and the score after it."""
    penalty = lateness.penalty(score)
    text = lateness.describe()
    if lateness.late or penalty:
        text += f". Late penalty: {penalty:g} points; score after the penalty: {score - penalty:g}"
    note = f"<p class='note'>Deadline: {html.escape(text)}.</p>"
    head, found, rest = page.partition("</h1>")
    return head + found + note + rest if found else page


def failure_page(result: Result) -> str:
    return _header(result) + f"<p>Your submission could not be graded: {html.escape(result.failure)}.</p></body></html>"


def graded_notebook(source_cells: list[dict], records) -> str:
    """The instructor's graded copy, as nbformat 4 JSON; ``records``' outputs made safe first
    (:meth:`Sanitizer.outputs`)."""
    meta = {
        c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c.get("metadata", {})
        for c in source_cells
        if c.get("metadata", {}).get("nbgrader")
    }
    cells = []
    budget = _Budget(MAX_PAGE_CHARS)  # the instructor's copy has a size cap too
    for record in records:
        step = record.step
        metadata = meta.get(step.grade_id, {}) if step.kind not in (Kind.STUDENT, Kind.MARKDOWN) else {}
        if not step.kind.runs:  # a written answer keeps its grade id: formgrader grades it there
            text = _fenced(step.source) if step.student_markdown else step.source
            cells.append({"cell_type": "markdown", "metadata": metadata, "source": text})
            continue
        outputs = []
        # a test cell shows the grader's verdict only: what its visible half printed in the sandbox (run there to
        # catch tampering, without the course library) is not the test's result and would mislead
        for o in record.outputs if step.kind is not Kind.TEST else []:
            if not budget.fits(len(json.dumps(o))):  # the cleaned output (Sanitizer.outputs) is what is counted
                outputs.append({"output_type": "stream", "name": "stdout", "text": "(output left out: size limit)"})
                break
            if o["type"] == "stream":
                outputs.append({"output_type": "stream", "name": o["name"], "text": o["text"]})
            else:
                outputs.append({"output_type": "display_data", "data": o["data"], "metadata": {}})
        if record.failure:
            outputs.append({"output_type": "error", "ename": "NotGraded", "evalue": record.failure, "traceback": []})
        if step.kind is Kind.TEST:
            if record.test_output:
                outputs.append({"output_type": "stream", "name": "stdout", "text": record.test_output})
            if not record.passed:
                outputs.append(
                    {
                        "output_type": "error",
                        "ename": "TestFailed",
                        "evalue": record.message or "not run",
                        "traceback": [record.message or "not run"],
                    }
                )
        cells.append(
            {
                "cell_type": "code",
                "metadata": metadata,
                "source": step.source,
                "outputs": outputs,
                "execution_count": None,
            }
        )
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i}"
    return json.dumps(nb, indent=1, ensure_ascii=False)
