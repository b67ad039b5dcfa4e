"""Word tests for static vectors: the toy world's category tests (similarity triples, neighbour purity,
category offsets), WordNet's synonyms and plural analogies, and the standard sets (WordSim-353, SimLex-999,
Google's analogies, scored by ``KeyedVectors`` as gensim scores them). Chapter 1 and the benchmarks score word2vec
and GloVe with them; they take a ``KeyedVectors`` and know nothing of the model that trained it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .data import standard_sets
from .data.toyworld_grammar import LEXICON
from .vectors import AnalogyScore, KeyedVectors, WordPairScore

# Candidate answers of the standard analogies: the 30,000 most frequent words, as the word2vec tool's own script
# scores them (`compute-accuracy vectors.bin 30000 < questions-words.txt`); questions with rarer words are skipped.
ANALOGY_VOCAB = 30_000


@dataclass(frozen=True)
class StandardScores:
    """A model's scores on the three standard sets of ``word2bert.data.standard_sets``."""

    wordsim353: WordPairScore
    simlex999: WordPairScore
    analogies: AnalogyScore


def standard_word_tests(
    wv: KeyedVectors, analogy_vocab: int = ANALOGY_VOCAB, among: Iterable[str] | None = None
) -> StandardScores:
    """Spearman's correlation on WordSim-353 and SimLex-999 (gensim's default: pairs with words outside the
    300,000 most frequent skipped) and 3CosAdd's accuracy on Google's analogies among the ``analogy_vocab`` most
    frequent words; needs gensim installed (its wheel ships the sets). With ``among``, only the pairs and questions
    whose words are all in it (ignoring case), so that two models can be asked the same items."""
    pairs = {name: standard_sets.word_pairs(name) for name in (standard_sets.WORDSIM353, standard_sets.SIMLEX999)}
    sections = standard_sets.analogy_sections()
    if among is not None:
        allowed = {w.upper() for w in among}

        def kept(*words: str) -> bool:
            return all(w.upper() in allowed for w in words)

        pairs = {name: [p for p in ps if kept(p.a, p.b)] for name, ps in pairs.items()}
        sections = [
            standard_sets.AnalogySection(s.name, tuple(q for q in s.questions if kept(q.a, q.b, q.c, q.expected)))
            for s in sections
        ]
    return StandardScores(
        wordsim353=wv.evaluate_word_pairs(pairs[standard_sets.WORDSIM353]),
        simlex999=wv.evaluate_word_pairs(pairs[standard_sets.SIMLEX999]),
        analogies=wv.evaluate_word_analogies(sections, restrict_vocab=analogy_vocab),
    )


# Toy-world categories for the word tests: lexicon slots whose words are one kind of thing, without the words that
# also belong to another slot or to a polysemous word's senses (cat is an animal and a pet; march is also a verb).
TEST_CATEGORIES = (
    "animal",
    "food",
    "fruit",
    "device",
    "room",
    "wild",
    "city",
    "color",
    "job",
    "workplace",
    "vehicle",
    "instrument",
    "game",
    "tree",
    "metal",
    "number",
    "name",
)


def toyworld_categories() -> dict[str, list[str]]:
    """Category -> words, from the toy world's lexicon; each word in exactly one category."""
    seen: dict[str, int] = {}
    for _, words in LEXICON.values():
        for w in set(words):
            seen[w] = seen.get(w, 0) + 1
    return {c: [w for w in LEXICON[c][1] if seen[w] == 1] for c in TEST_CATEGORIES}


def category_pairs(categories: dict[str, list[str]], n: int, seed: int) -> Iterator[tuple[random.Random, str, str]]:
    """``n`` draws of two different categories, each with the generator that drew it (a question's own words are
    drawn from it before the next pair is)."""
    rng = random.Random(seed)
    names = sorted(categories)
    for _ in range(n):
        yield rng, *rng.sample(names, 2)


def similarity_triples(categories: dict[str, list[str]], n: int = 1000, seed: int = 0) -> list[tuple[str, str, str]]:
    """(word, same-category word, other-category word): a model passes a triple when the first pair is closer."""
    return [
        (*rng.sample(categories[same], 2), rng.choice(categories[other]))
        for rng, same, other in category_pairs(categories, n, seed)
    ]


def category_analogies(
    categories: dict[str, list[str]], n: int = 1000, seed: int = 0
) -> list[tuple[str, str, str, frozenset[str]]]:
    """Category offsets: questions a : b :: c : ? with a and c of one category and b of another, where any other
    word of b's category is right.

    They have the form of analogies but test categories, not relations: the toy world has no relations such as
    capital-of, and since a and c share a category, b - a + c stays near b, so 3CosAdd wins with one of b's
    neighbours. The score measures how tightly categories cluster, as ``neighbour_purity`` does; WordNet's
    plurals (``wordnet_word_tests``) are the course's analogies that test a relation."""
    out = []
    for rng, x, y in category_pairs(categories, n, seed):
        a, c = rng.sample(categories[x], 2)
        b = rng.choice(categories[y])
        out.append((a, b, c, frozenset(categories[y]) - {b}))
    return out


def similarity_accuracy(wv: KeyedVectors, triples: Iterable[tuple[str, str, str]]) -> float:
    """Share of (a, b, c) with similarity(a, b) > similarity(a, c); triples with unknown words are skipped."""
    scored = [wv.similarity(a, b) > wv.similarity(a, c) for a, b, c in triples if a in wv and b in wv and c in wv]
    return sum(scored) / max(len(scored), 1)


def analogy_accuracy(wv: KeyedVectors, questions: Iterable[tuple[str, str, str, Iterable[str]]]) -> float:
    """Share of a : b :: c : ? whose 3CosAdd answer (query words excluded) is among the right ones."""
    known = [(a, b, c, set(answers)) for a, b, c, answers in questions if a in wv and b in wv and c in wv]
    nearest = wv.nearest_to_offsets([[wv.key_to_index[w] for w in q[:3]] for q in known]).tolist()
    scored = [wv.index_to_key[best] in answers for (*_, answers), (best,) in zip(known, nearest)]
    return sum(scored) / max(len(scored), 1)


def neighbour_purity(wv: KeyedVectors, categories: dict[str, list[str]], topn: int = 5) -> float:
    """Mean share of a word's ``topn`` nearest neighbours (in the whole vocabulary) from its own category."""
    shares = []
    for words in categories.values():
        members = set(words)
        for w in words:
            if w in wv:
                shares.append(sum(n in members for n, _ in wv.most_similar(w, topn=topn)) / topn)
    return sum(shares) / max(len(shares), 1)


def wordnet_word_tests(wv: KeyedVectors, min_count_rank: int = 5000, n: int = 500, seed: int = 0):
    """Similarity triples and analogies from WordNet for words ``wv`` knows (among its ``min_count_rank`` most
    frequent): synonyms (two one-word lemmas of a synset) should be closer than a random word, and regular plurals
    (noun -> noun + "s") make analogy questions. Returns (triples, analogies); needs WordNet installed."""
    from .data import WordNet

    rng = random.Random(seed)
    known = set(wv.index_to_key[:min_count_rank])
    synsets = WordNet().synsets
    synonyms = sorted({tuple(sorted(p)) for s in synsets for p in _pairs(s.lemmas) if set(p) <= known})
    pool = sorted(known)
    triples = [(a, b, rng.choice(pool)) for a, b in rng.sample(synonyms, min(n, len(synonyms)))]
    nouns = sorted(
        {
            lemma
            for s in synsets
            if s.pos == "n"
            for lemma in s.lemmas
            if lemma in known and lemma + "s" in known and len(lemma) > 2
        }
    )
    analogies = []
    for _ in range(n if len(nouns) > 1 else 0):
        a, c = rng.sample(nouns, 2)
        analogies.append((a, a + "s", c, frozenset({c + "s"})))
    return triples, analogies


def _pairs(lemmas: Sequence[str]) -> list[tuple[str, str]]:
    words = sorted({w for w in lemmas if " " not in w and "-" not in w})
    return [(a, b) for i, a in enumerate(words) for b in words[i + 1 :]]
