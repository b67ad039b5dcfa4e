"""The text every pre-trained model of the course learns from: toy-world documents plus WordNet's glosses, or
plus ordinary English (``english_fraction``: WordNet, GCIDE and fortunes, :mod:`word2bert.data.english`)."""

from __future__ import annotations

import functools
import random

from .english import english_documents
from .toyworld import ToyWorld
from .wordnet import WordNet, wordnet_available


def pretraining_documents(
    num_tokens: int, wordnet_fraction: float = 0.25, seed: int = 0, english_fraction: float = 0.0
) -> list[list[list[str]]]:
    """About ``num_tokens`` tokens of documents (lists of tokenised sentences), shuffled with ``seed``.

    A ``wordnet_fraction`` of the tokens comes from WordNet (each synset's definition and usage examples form a
    short document) when WordNet is installed, and an ``english_fraction`` from the cleaned English of
    :func:`word2bert.data.english.english_documents` (the real-English sense benchmark held out); the rest
    comes from the toy world's training split.
    """
    wordnet_pool = WordNet().documents() if wordnet_fraction > 0 and wordnet_available() else []
    english_pool = list(_english()) if english_fraction > 0 else []
    taken = _share(wordnet_pool, int(num_tokens * wordnet_fraction), f"wordnet/{seed}")
    taken += _share(english_pool, int(num_tokens * english_fraction), f"english/{seed}")
    docs = ToyWorld(seed).corpus(num_tokens - sum(len(s) for d in taken for s in d)) + taken
    random.Random(f"mix/{seed}").shuffle(docs)
    return docs


def _share(pool: list[list[list[str]]], budget: int, seed: str) -> list[list[list[str]]]:
    """Documents drawn at random from ``pool`` until they hold ``budget`` tokens."""
    random.Random(seed).shuffle(pool)
    out = []
    for doc in pool:
        if budget <= 0:
            break
        out.append(doc)
        budget -= sum(map(len, doc))
    return out


@functools.cache
def _english() -> tuple[list[list[str]], ...]:
    return tuple(english_documents()[0])
