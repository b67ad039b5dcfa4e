"""Words of prose per page and the share of long sentences, for the book's voice (issue 51): at most 2,200 words of
prose on a content page, and at most 2 % of its sentences over 40 words.

Prose is what a reader reads as running text: the paragraphs and list items of a page's Markdown (a ``.md`` file, or
the Markdown cells of a notebook). Headings, tables, code, display math, MyST directives' option lines, labels and
HTML comments are not prose; inside prose, a role such as ``{glue:text}`x``` or inline code is one word, a citation
none, and a link its text. A sentence ends at ``.``, ``!`` or ``?`` before a space or the end of its paragraph, and at
the end of every paragraph or list item (common abbreviations do not end one).

    python tools/prose_stats.py                  # every page of _toc.yml but the API pages
    python tools/prose_stats.py book/intro.ipynb book/01-word-vectors --long   # some pages, with their long sentences
    python tools/prose_stats.py --check          # exit 1 when a page is over either limit
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_WORDS = 2200
MAX_LONG_SHARE = 0.02
LONG = 40  # a sentence of more words than this is long

ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "cf.", "vs.", "etc.", "Fig.", "Eq.", "No.", "approx.", "Dr.", "Mr.")
PROSE_DIRECTIVES = {
    "note",
    "tip",
    "warning",
    "important",
    "admonition",
    "caution",
    "hint",
    "seealso",
    "attention",
    "danger",
    "error",
    "figure",
    "margin",
    "sidebar",
    "topic",
    "epigraph",
}
_CITE_TEXT = re.compile(r"\{cite:t\}`[^`]*`")  # a citation in the text reads "Levy et al. (2015)": two words
_CITE = re.compile(r"\{cite(?::[a-z]+)?\}`[^`]*`")
_ROLE_WITH_TITLE = re.compile(r"\{[a-z:-]+\}`([^`<]*?)\s*<[^`]*>`")  # {doc}`the API pages <api/index>` -> its text
_ROLE = re.compile(r"\{[a-z0-9:-]+\}`[^`]*`")  # {glue:text}`x:.2f`, {term}`scalar mix`: one word
_CODE = re.compile(r"``?[^`]+``?")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MATH = re.compile(r"\$[^$]+\$")
_END = re.compile(r"(?<=\.)[\"'’”)*_]*\s+|(?<=[!?])[\"'’”)*_]*\s+(?![a-z])")  # "(*same sense?* yes)" goes on
_WORD = re.compile(r"\w[\w’'.-]*")  # e.g. is one word


@dataclass
class PageStats:
    page: str
    sentences: list[str] = field(default_factory=list)

    @property
    def words(self) -> int:
        return sum(count_words(s) for s in self.sentences)

    @property
    def long(self) -> list[str]:
        return [s for s in self.sentences if count_words(s) > LONG]

    @property
    def long_share(self) -> float:
        return len(self.long) / len(self.sentences) if self.sentences else 0.0

    @property
    def longest(self) -> int:
        return max((count_words(s) for s in self.sentences), default=0)


def count_words(sentence: str) -> int:
    return len(_WORD.findall(sentence))


def markdown_of(path: Path) -> str:
    """A page's Markdown: the file, or a notebook's Markdown cells joined."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return text
    cells = json.loads(text)["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def paragraphs(markdown: str) -> list[str]:
    """The prose blocks of ``markdown``: paragraphs and list items, each as one line of text."""
    markdown = re.sub(r"<!--.*?-->", "", markdown, flags=re.S)
    blocks: list[list[str]] = []
    current: list[str] = []
    fence = None  # the fence of the code block being skipped
    glossary = None  # the fence of a glossary, whose unindented lines are its terms
    math = False

    def close():
        nonlocal current
        if current:
            blocks.append(current)
        current = []

    for line in markdown.splitlines():
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and stripped.rstrip("`~:") == "":
                fence = None
            continue
        if glossary:
            if stripped == glossary:
                close()
                glossary = None
                continue
            if line[:1] not in (" ", "\t"):  # a term: its definition, indented, is the prose
                close()
                continue
        opening = re.match(r"^(`{3,}|~{3,})\s*(\{([a-z-]+)\})?", stripped)
        if opening:  # a code block, or a directive in backticks: a glossary's, an admonition's body is prose
            close()
            if opening.group(3) == "glossary":
                glossary = opening.group(1)
            elif opening.group(3) in PROSE_DIRECTIVES:
                pass
            else:
                fence = opening.group(1)
            continue
        if stripped and stripped.rstrip("`~") == "":  # the end of a prose directive in backticks
            close()
            continue
        if re.match(r"^:{3,}\s*\{", stripped) or re.match(r"^:{3,}\s*$", stripped):
            close()  # a directive's fence: its body is prose (an admonition, a figure's caption), its options not
            continue
        if stripped.startswith("$$"):
            close()
            math = not (math or stripped.endswith("$$") and len(stripped) > 2)
            continue
        if math:
            continue
        if (
            not stripped
            or stripped.startswith(("#", "|", ":"))  # headings, tables, directive options (:alt:, :class:)
            or re.match(r"^\(.*\)=$", stripped)  # a label
            or re.match(r"^-{3,}$", stripped)
        ):
            close()
            continue
        if re.match(r"^([*+-]|\d+[.)])\s+", stripped):  # a list item starts a block of its own
            close()
            stripped = re.sub(r"^([*+-]|\d+[.)])\s+", "", stripped)
        current.append(stripped)
    close()
    return [" ".join(block) for block in blocks]


def sentences_of(paragraph: str) -> list[str]:
    text = _CITE_TEXT.sub("Author (year)", paragraph)
    text = _CITE.sub("", text)
    text = _ROLE_WITH_TITLE.sub(r"\1", text)
    text = _ROLE.sub("X", text)
    text = _CODE.sub("X", text)
    text = _LINK.sub(r"\1", text)
    text = _MATH.sub("X", text)
    for abbreviation in ABBREVIATIONS:
        text = text.replace(abbreviation, abbreviation.replace(".", "\0"))
    parts = [p.replace("\0", ".").strip() for p in _END.split(text)]
    return [p for p in parts if count_words(p)]


def page_stats(path: Path) -> PageStats:
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    stats = PageStats(page)
    for paragraph in paragraphs(markdown_of(path)):
        stats.sentences += sentences_of(paragraph)
    return stats


def toc_pages() -> list[Path]:
    """Every page of ``_toc.yml``, in reading order, but the API pages (generated from the docstrings)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]

    def walk(entries):
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections", []) + entry.get("chapters", []))

    walk(toc.get("parts", []))
    pages = []
    for name in files:
        if name.startswith("book/api/"):
            continue
        for suffix in (".md", ".ipynb"):
            if (ROOT / (name + suffix)).exists():
                pages.append(ROOT / (name + suffix))
    return pages


def expand(paths: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        if path.is_dir():
            out += sorted(
                p for p in path.rglob("*") if p.suffix in (".md", ".ipynb") and ".ipynb_checkpoints" not in p.parts
            )
        else:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="pages or folders (default: every page of _toc.yml)")
    parser.add_argument("--long", action="store_true", help="print each page's sentences over 40 words")
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is over either limit")
    args = parser.parse_args(argv)
    pages = expand([p.resolve() for p in args.paths]) if args.paths else toc_pages()
    stats = [page_stats(p) for p in pages]
    width = max((len(s.page) for s in stats), default=4)
    print(f"{'page':<{width}}  words  sentences  >40 words  share  longest")
    over = []
    for s in stats:
        flags = []
        if s.words > MAX_WORDS:
            flags.append(f"over {MAX_WORDS:,} words")
        if s.long_share > MAX_LONG_SHARE:
            flags.append(f"over {MAX_LONG_SHARE:.0%} long")
        if flags:
            over.append(s.page)
        print(
            f"{s.page:<{width}}  {s.words:>5}  {len(s.sentences):>9}  {len(s.long):>9}  {s.long_share:>5.1%}  "
            f"{s.longest:>7}" + (f"  <- {', '.join(flags)}" if flags else "")
        )
        if args.long:
            for sentence in s.long:
                print(f"    [{count_words(sentence)}] {sentence}")
    every = [sentence for s in stats for sentence in s.sentences]
    long = sum(count_words(x) > LONG for x in every)
    words = sorted(s.words for s in stats)
    if every:
        print(
            f"{'all':<{width}}  {sum(words):>5}  {len(every):>9}  {long:>9}  {long / len(every):>5.1%}  "
            f"{max(map(count_words, every)):>7}   median page {words[len(words) // 2]:,} words"
        )
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
