"""A reader for Princeton WordNet 3.0's data files: glosses, usage examples, and examples grouped by sense.

WordNet is real English written by lexicographers: every synset (a sense) has a definition and often usage
examples, so the examples of a polysemous lemma come grouped by its senses, a gold standard for chapter 2.
Debian ships it as ``wordnet-base`` (files under /usr/share/wordnet); ``WORDNET_DIR`` points elsewhere.
WordNet 3.0 licence: Copyright 2006 by Princeton University, used under the WordNet 3.0 license (see LICENSE).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .toyworld import SenseOccurrence
from .vocab import tokenize

DEFAULT_DIR = "/usr/share/wordnet"
POS_FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}


class WordNetNotFound(FileNotFoundError):
    pass


def wordnet_dir() -> Path:
    return Path(os.environ.get("WORDNET_DIR", DEFAULT_DIR))


def wordnet_available(root: str | Path | None = None) -> bool:
    return (Path(root) if root else wordnet_dir()).joinpath("data.noun").is_file()


@dataclass(frozen=True)
class Synset:
    id: str  # "02330245-n": offset and part of speech, as WordNet names synsets
    pos: str
    lemmas: tuple[str, ...]
    definition: str
    examples: tuple[str, ...]


def parse_line(line: str, pos: str) -> Synset:
    """One line of a ``data.*`` file: ``offset lex_filenum ss_type w_cnt word lex_id ... | gloss``."""
    fields, _, gloss = line.partition(" | ")
    parts = fields.split()
    w_cnt = int(parts[3], 16)
    lemmas = tuple(parts[4 + 2 * i].lower().replace("_", " ").split("(")[0] for i in range(w_cnt))
    chunks = [c.strip() for c in gloss.strip().split(";")]
    definition = "; ".join(c for c in chunks if not c.startswith('"'))
    examples = tuple(c.strip('"') for c in chunks if c.startswith('"') and len(c) > 2)
    return Synset(f"{parts[0]}-{pos}", pos, lemmas, definition, examples)


class WordNet:
    """WordNet 3.0 from its data files. ``WordNet()`` reads ``$WORDNET_DIR`` or /usr/share/wordnet."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root else wordnet_dir()
        if not wordnet_available(self.root):
            raise WordNetNotFound(
                f"WordNet 3.0 was not found in {self.root}. Install Debian's package "
                "(`sudo apt-get install wordnet-base`, or run `make setup`) or set WORDNET_DIR to a folder "
                "holding WordNet 3.0's data.noun, data.verb, data.adj and data.adv."
            )

    @cached_property
    def synsets(self) -> list[Synset]:
        out = []
        for pos, name in POS_FILES.items():
            with open(self.root / name, encoding="utf-8", errors="replace") as f:
                out += [parse_line(line, pos) for line in f if not line.startswith("  ")]
        return out

    def documents(self) -> list[list[list[str]]]:
        """One short document per synset that has examples: its definition, then its usage examples."""
        return [[tokenize(s.definition)] + [tokenize(e) for e in s.examples] for s in self.synsets if s.examples]

    def sentences(self) -> list[list[str]]:
        """Every definition and usage example, tokenised."""
        return [tokenize(t) for s in self.synsets for t in (s.definition, *s.examples)]

    def sense_examples(self, lemma: str, pos: str | None = None) -> dict[str, list[list[str]]]:
        """Usage examples that contain ``lemma`` as a token, grouped by synset (sense) id."""
        out: dict[str, list[list[str]]] = {}
        for s in self.synsets:
            if lemma in s.lemmas and (pos is None or s.pos == pos):
                hits = [t for t in map(tokenize, s.examples) if lemma in t]
                if hits:
                    out[s.id] = hits
        return out

    def sense_occurrences(
        self, pos: str | None = "n", min_senses: int = 2, min_examples: int = 2
    ) -> list[SenseOccurrence]:
        """Occurrences of one-word lemmas that have at least ``min_senses`` senses with ``min_examples`` examples
        each: a real-text version of the toy world's sense task (the sense is the lemma and the synset id,
        ``"mouse.02330245-n"``: a synset shared by two lemmas is a sense of each). ``pos=None`` takes
        every part of speech, so a word's noun and verb senses compete too (the course's real-English benchmark)."""
        by_lemma: dict[str, dict[str, list[list[str]]]] = {}
        for s in self.synsets:
            if pos is not None and s.pos != pos:
                continue
            for lemma in s.lemmas:
                if " " in lemma:
                    continue
                hits = [t for t in map(tokenize, s.examples) if lemma in t]
                if hits:
                    by_lemma.setdefault(lemma, {})[s.id] = hits
        out = []
        for lemma, senses in sorted(by_lemma.items()):
            senses = {k: v for k, v in senses.items() if len(v) >= min_examples}
            if len(senses) < min_senses:
                continue
            for sense, examples in senses.items():
                out += [
                    SenseOccurrence(tuple(t), t.index(lemma), lemma, f"{lemma}.{sense}", "wordnet", sense)
                    for t in examples
                ]
        return out
