"""The standard word tests of static vectors, read from the copies that ship in gensim's wheel
(``gensim/test/test_data``), so that nothing is downloaded:

* **WordSim-353** (Finkelstein et al., 2002): 353 word pairs with a mean human rating of how related they are
  (0-10), ``wordsim353.tsv``;
* **SimLex-999** (Hill, Reichart and Korhonen, 2015): 999 pairs rated for similarity proper, not relatedness
  (*cup* and *coffee* are related, not similar), ``simlex999.txt``;
* **Google's analogies** (Mikolov et al., 2013): 19,544 questions *a* : *b* :: *c* : *d* in 14 sections, five
  semantic (capitals, currencies, family) and nine syntactic (``gram1-adjective-to-adverb`` ...),
  ``questions-words.txt``.

The files are parsed by gensim's rules (``KeyedVectors.evaluate_word_pairs`` and ``evaluate_word_analogies``):
a pair file's lines starting with ``#`` are comments and every other line is ``word<TAB>word<TAB>score``; an
analogy file's sections start with ``": "``; a line of the wrong shape is skipped. Scoring lives on the vectors
(:meth:`word2bert.vectors.KeyedVectors.evaluate_word_pairs`, ``evaluate_word_analogies``), as in gensim.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

WORDSIM353 = "wordsim353.tsv"
SIMLEX999 = "simlex999.txt"
QUESTIONS_WORDS = "questions-words.txt"


@dataclass(frozen=True)
class WordPair:
    """Two words and the human rating of their similarity (or relatedness)."""

    a: str
    b: str
    rating: float


@dataclass(frozen=True)
class AnalogyQuestion:
    """*a* is to *b* as *c* is to *expected*."""

    a: str
    b: str
    c: str
    expected: str


@dataclass(frozen=True)
class AnalogySection:
    """One section of an analogy file (``capital-common-countries``, ``gram1-adjective-to-adverb`` ...)."""

    name: str
    questions: tuple[AnalogyQuestion, ...]

    @property
    def syntactic(self) -> bool:
        """Google's syntactic sections are the ones named ``gram...``; the others are semantic."""
        return self.name.startswith("gram")


def standard_set(filename: str) -> Path:
    """The path of one of gensim's test files (``WORDSIM353``, ``SIMLEX999``, ``QUESTIONS_WORDS``), found
    without importing gensim."""
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"{filename} ships in gensim's wheel, and gensim is not installed: run `make setup` in the course's "
            'checkout, or `pip install "gensim>=4.3"`'
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "test" / "test_data" / filename
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: gensim's wheel should hold it (reinstall gensim)")
    return path


def _path(source: str | Path) -> Path:
    return source if isinstance(source, Path) else standard_set(source)


def word_pairs(source: str | Path = WORDSIM353, delimiter: str = "\t") -> list[WordPair]:
    """The rated pairs of a word-pair file, one of gensim's (by name) or any in its format (a ``Path``): comment
    lines start with ``#``."""
    pairs = []
    for line in _path(source).read_text(encoding="utf-8").splitlines():
        fields = line.split(delimiter)
        if line.startswith("#") or len(fields) != 3:
            continue
        try:
            pairs.append(WordPair(fields[0], fields[1], float(fields[2])))
        except ValueError:
            continue
    return pairs


def analogy_sections(source: str | Path = QUESTIONS_WORDS) -> list[AnalogySection]:
    """The sections of an analogy file, one of gensim's (by name) or any in its format (a ``Path``), each with its
    questions, in the file's order."""
    sections: list[tuple[str, list[AnalogyQuestion]]] = []
    for number, line in enumerate(_path(source).read_text(encoding="utf-8").splitlines()):
        if line.startswith(": "):
            sections.append((line[2:].strip(), []))
            continue
        if not sections:
            raise ValueError(f"{source}, line {number + 1}: a question before the first section header")
        words = line.split()
        if len(words) == 4:
            sections[-1][1].append(AnalogyQuestion(*words))
    return [AnalogySection(name, tuple(questions)) for name, questions in sections]
