"""Ordinary English for pre-training, read offline from Debian's packages and cleaned.

The toy world teaches the course's controlled experiments; it does not teach English. These sources do, and
each is optional (a missing package is skipped and named in the statistics):

* **WordNet 3.0** (``wordnet-base``): every synset's gloss and usage examples, one short document per synset.
  WordNet 3.0 licence (Princeton University, permissive, BSD-like).
* **GCIDE 0.48** (``dict-gcide``): the Collaborative International Dictionary of English, Webster's 1913 with
  later supplements; its definitions, notes and quotations, one document per entry. GPL-2.0-or-later. Its
  paragraphs taken from WordNet (tagged ``[WordNet 1.5]``) are left out: WordNet comes from WordNet itself.
* **fortunes** (``fortunes-min``, ``fortunes``): BSD-style fortune-cookie files of quotations and jokes, one
  document per fortune, prose files only (no ASCII art).

Cleaning turns dictionary markup into plain sentences: etymologies, pronunciations, source tags and labels
(everything in square brackets), sense numbers, subject labels such as ``(Zool.)``, quotation attributions
(``--Shak.``), cross-references (``See under ...``) and list-like lines are removed. Then :func:`deduplicate`
drops sentences seen before, exactly or nearly (every 8-gram already seen).

Held out: the usage examples of :func:`word2bert.data.wordnet.WordNet.sense_occurrences` form the course's
real-English sense benchmark, so :func:`english_documents` leaves them, and any sentence equal to one of them
in another source, out of the text.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import platformdirs

from .vocab import tokenize
from .wordnet import WordNet, wordnet_available, wordnet_dir

GCIDE = Path("/usr/share/dictd/gcide.dict.dz")
FORTUNES = Path("/usr/share/games/fortunes")
# each source's licence, as the model cards of checkpoints trained on this text state it (the book's licences
# page gives the full terms)
LICENCES = ("WordNet 3.0's own", "GCIDE GPL-2.0-or-later", "fortune BSD")
# the fortune files that are prose (the others are ASCII art, word lists or not English)
FORTUNE_FILES = (
    "fortunes",
    "literature",
    "wisdom",
    "science",
    "people",
    "humorists",
    "education",
    "work",
    "love",
    "pets",
    "platitudes",
    "politics",
    "riddles",
    "magic",
    "medicine",
    "miscellaneous",
    "news",
    "food",
    "law",
    "computers",
    "family",
    "kids",
    "sports",
    "songs-poems",
)
MIN_WORDS = 4  # a "sentence" with fewer words is a label or a fragment of a list
SHINGLE = 8  # near-duplicates: sentences whose every 8-gram was seen before


@dataclass
class CorpusStats:
    """What each source gave, before and after cleaning, and what was left out."""

    sources: dict[str, dict[str, int]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    held_out: int = 0
    duplicates: int = 0
    near_duplicates: int = 0


# ----------------------------------------------------------------------------------------------------- GCIDE

_ACCENT = re.compile(r"\[[\"=^`'~.]?([a-zA-Z])[a-zA-Z]{0,4}[\^`~]?\]")  # [=u], ["u], [i^], [imac], [ae] -> the letter
_BRACKETS = re.compile(r"\[[^\[\]]*\]")  # etymologies, sources, labels, after the accents are gone
_HEADER = re.compile(r"^[^\\]*\\[^\\]*\\[^,.]*[,.]?\s*(?:(?:[a-z]\.\s*)+(?:&\s*(?:[a-z]\.\s*)+)?)?")
_SPELLING = re.compile(r"\\[^\\]*\\")  # a headword spelt in syllables with its stress, as \Sta*min"e*al\
_ATTRIBUTION = re.compile(r"--\s?[A-Z][\w.,' ]{0,40}?\.(?=\s|$)")
_SENSE_NUMBER = re.compile(r"(?:(?<=\s)|^)(?:\d{1,2}\.|\([a-z]\))(?=\s)")
_LABEL = re.compile(r"\((?:[A-Z][a-z]*\.?\s?)+(?:&\s(?:[A-Z][a-z]*\.?\s?)+)?\)")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z\"'(])")


def _remove_brackets(text: str) -> str:
    text = _ACCENT.sub(r"\1", text)
    while True:
        shorter = _BRACKETS.sub(" ", text)
        if shorter == text:
            return text.replace("[", " ").replace("]", " ")
        text = shorter


def gcide_paragraph(paragraph: str, first: bool = False) -> str:
    """One paragraph of an entry as plain text (``first``: the entry's head, whose headword is dropped)."""
    text = " ".join(paragraph.split())
    if first:
        text = _HEADER.sub(" ", text, count=1)
    text = _remove_brackets(_SPELLING.sub(" ", text))
    text = _ATTRIBUTION.sub(" ", text).replace("{", "").replace("}", "").replace("--", " , ")
    text = _LABEL.sub(" ", _SENSE_NUMBER.sub(" ", text))
    return re.sub(r"^\s*(?:Note|Syn)\s*[:.]\s*", "", text.strip())


def gcide_entries(path: Path = GCIDE) -> Iterator[list[str]]:
    """Each entry's paragraphs of plain text, WordNet's paragraphs left out."""
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as stream:
        text = stream.read()
    for entry in re.split(r"\n\n(?=\S)", text)[1:]:  # the first block is the database's own description
        paragraphs = [p for p in entry.split("\n\n") if p.strip() and "[WordNet" not in p]
        yield [gcide_paragraph(p, first=(k == 0)) for k, p in enumerate(paragraphs)]


def sentences_of(text: str) -> list[list[str]]:
    """A paragraph's sentences, tokenised; fragments, cross-references and lists dropped."""
    out = []
    for sentence in _SENTENCE_END.split(text):
        tokens = tokenize(sentence)
        words = [t for t in tokens if t.isalpha()]
        if len(words) < MIN_WORDS or tokens[0] == "see" or "?" in tokens[:-1]:
            continue  # too short, "See under ...", or characters GCIDE could not write (Greek)
        if tokens.count(",") > len(words) / 3:
            continue  # a list of names or words, not a sentence
        out.append(tokens)
    return out


# -------------------------------------------------------------------------------------------------- fortunes


def fortunes(root: Path = FORTUNES) -> Iterator[str]:
    """Every fortune of the prose files under ``root``, as one line of text."""
    for name in FORTUNE_FILES:
        path = root / name
        if path.is_file():
            with open(path, encoding="utf-8", errors="replace") as stream:
                for fortune in stream.read().split("\n%\n"):
                    lines = [line.strip() for line in fortune.splitlines() if not line.strip().startswith("--")]
                    yield " ".join(line for line in lines if line and line != "%")


# ---------------------------------------------------------------------------------------------- the mixture


def _normal(tokens: Iterable[str]) -> tuple[str, ...]:
    return tuple(t for t in tokens if t.isalnum())


def deduplicate(documents: list[list[list[str]]], stats: CorpusStats | None = None) -> list[list[list[str]]]:
    """Drop every sentence seen before (punctuation aside), and every sentence of ``SHINGLE`` words or more whose
    ``SHINGLE``-grams were all seen before (the same quotation under two headwords, say). Empty documents go."""
    stats = stats or CorpusStats()
    seen: set[tuple[str, ...]] = set()
    shingles: set[tuple[str, ...]] = set()
    out = []
    for doc in documents:
        kept = []
        for sentence in doc:
            words = _normal(sentence)
            if words in seen:
                stats.duplicates += 1
                continue
            grams = {words[i : i + SHINGLE] for i in range(len(words) - SHINGLE + 1)}
            if grams and grams <= shingles:
                stats.near_duplicates += 1
                continue
            seen.add(words)
            shingles |= grams
            kept.append(sentence)
        if kept:
            out.append(kept)
    return out


def english_documents(
    sources: Iterable[str] = ("wordnet", "gcide", "fortunes"), wordnet: WordNet | None = None
) -> tuple[list[list[list[str]]], CorpusStats]:
    """The cleaned, deduplicated English documents of ``sources``, with the sense benchmark's examples held out,
    and what each source gave. A source whose package is not installed is skipped and listed in ``missing``.

    Cleaning takes about 20 s on one core, so the result of the installed packages (``wordnet=None``) is kept on
    disk (``cache_dir()``), under a key made of the sources, their files' sizes and times and this package's code:
    a changed package or cleaning rule cleans again."""
    sources = tuple(sources)
    if wordnet is not None:  # a WordNet of the caller's own: nothing to key a cache on
        return _clean(sources, wordnet)
    path = cache_dir() / f"english-{_fingerprint(sources)}.txt"
    try:
        with open(path, encoding="utf-8") as stream:
            stats = CorpusStats(**json.loads(stream.readline()))
            return [[s.split(" ") for s in doc.split("\n")] for doc in stream.read().split("\n\n") if doc], stats
    except (OSError, ValueError, TypeError):
        pass
    documents, stats = _clean(sources, WordNet() if wordnet_available() else None)
    try:  # written whole, then renamed: a reader never sees half a file, and two writers do not mix
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False) as stream:
            stream.write(json.dumps(asdict(stats)) + "\n")
            stream.write("\n\n".join("\n".join(" ".join(s) for s in doc) for doc in documents))
        os.replace(stream.name, path)
    except OSError:  # a read-only home, say: clean again next time
        pass
    return documents, stats


def cache_dir() -> Path:
    """``$WORD2BERT_CACHE``, else the user's cache folder as the platform names it (platformdirs: on Linux
    ``$XDG_CACHE_HOME/word2bert``, else ``~/.cache/word2bert``; on macOS ``~/Library/Caches/word2bert``)."""
    return Path(os.environ.get("WORD2BERT_CACHE") or platformdirs.user_cache_dir("word2bert", appauthor=False))


def _fingerprint(sources: tuple[str, ...]) -> str:
    digest = hashlib.sha256(repr(sources).encode())
    for code in sorted(Path(__file__).parent.glob("*.py")):  # the cleaning rules, the tokenizer, the benchmark
        digest.update(code.read_bytes())
    inputs = [GCIDE, *(FORTUNES / name for name in FORTUNE_FILES), *sorted(wordnet_dir().glob("*"))]
    for f in inputs:
        stat = f.stat() if f.is_file() else None
        digest.update(f"{f}:{stat and stat.st_size}:{stat and stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _clean(sources: tuple[str, ...], wordnet: WordNet | None) -> tuple[list[list[list[str]]], CorpusStats]:
    stats = CorpusStats()
    held_out = {_normal(o.tokens) for o in wordnet.sense_occurrences(pos=None)} if wordnet else set()
    documents: list[list[list[str]]] = []
    for source in sources:
        if source == "wordnet" and wordnet is not None:
            docs = [[w for t in (s.definition, *s.examples) if (w := tokenize(t))] for s in wordnet.synsets]
        elif source == "gcide" and GCIDE.is_file():
            docs = [[s for p in entry for s in sentences_of(p)] for entry in gcide_entries(GCIDE)]
        elif source == "fortunes" and FORTUNES.is_dir():
            docs = [sentences_of(f) for f in fortunes(FORTUNES)]
        else:
            stats.missing.append(source)
            continue
        before = sum(map(len, docs))
        kept = [[s for s in doc if _normal(s) not in held_out] for doc in docs]
        stats.held_out += before - sum(map(len, kept))
        kept = [doc for doc in kept if doc]
        stats.sources[source] = {
            "documents": len(kept),
            "sentences": sum(map(len, kept)),
            "tokens": sum(len(s) for d in kept for s in d),
        }
        documents += kept
    return deduplicate(documents, stats), stats
