"""The text every pre-trained model of the course learns from: toy-world documents plus WordNet's glosses."""

from __future__ import annotations

import random

from .toyworld import ToyWorld
from .wordnet import WordNet, wordnet_available


def pretraining_documents(num_tokens: int, wordnet_fraction: float = 0.25, seed: int = 0) -> list[list[list[str]]]:
    """About ``num_tokens`` tokens of documents (lists of tokenised sentences), shuffled with ``seed``.

    A ``wordnet_fraction`` of the tokens comes from WordNet (each synset's definition and usage examples form a
    short document) when WordNet is installed; otherwise everything comes from the toy world's training split.
    """
    wordnet_docs: list[list[list[str]]] = []
    if wordnet_fraction > 0 and wordnet_available():
        pool = WordNet().documents()
        random.Random(f"wordnet/{seed}").shuffle(pool)
        budget = int(num_tokens * wordnet_fraction)
        for doc in pool:
            if budget <= 0:
                break
            wordnet_docs.append(doc)
            budget -= sum(map(len, doc))
    taken = sum(len(s) for d in wordnet_docs for s in d)
    docs = ToyWorld(seed).corpus(num_tokens - taken) + wordnet_docs
    random.Random(f"mix/{seed}").shuffle(docs)
    return docs
