"""A generated corpus with relational analogies and many rare words, for word2vec benchmarks.

The course's toy world has categories but no relations, and its vocabulary is small and frequent. Users train
word2vec on text8 or their own text, where most word types are rare. This corpus has both:

* **relations**: each relation r has pairs (x_i, y_i), like country and capital. An x appears beside its
  relation's "A-side" cue words and the pair's own identity words, its y beside the "B-side" cues and the same
  identity words; so y_i - x_i is about the same offset for every pair, and x_i : y_i :: x_j : ? asks for y_j;
* **a long tail**: filler words drawn from a Zipf distribution over a large vocabulary, and pairs whose frequency
  is Zipfian too, so that many analogy words occur only a handful of times.

``analogy_corpus(tokens, seed)`` returns (sentences, questions); questions are (a, b, c, {d}) for
``word_tests.analogy_accuracy``. Every generated word is a made-up string, so no model has seen them before.
"""

from __future__ import annotations

import random
from itertools import accumulate


def _word(rng: random.Random, used: set[str]) -> str:
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    while True:
        w = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4)))
        if w not in used:
            used.add(w)
            return w


def analogy_corpus(
    tokens: int,
    seed: int = 0,
    relations: int = 6,
    pairs: int = 20,
    filler_vocab: int = 30_000,
    relational_share: float = 0.5,
    cues: int = 6,
    identity: int = 3,
):
    """About ``tokens`` tokens of sentences (lists of words), and analogy questions over every pair."""
    rng = random.Random(seed)
    used: set[str] = set()
    filler = [_word(rng, used) for _ in range(filler_vocab)]
    filler_weights = list(accumulate(1 / (k + 1) for k in range(filler_vocab)))  # Zipf, exponent 1
    rels = []
    for _ in range(relations):
        side_cues = ([_word(rng, used) for _ in range(cues)], [_word(rng, used) for _ in range(cues)])
        members = [
            (_word(rng, used), _word(rng, used), [_word(rng, used) for _ in range(identity)]) for _ in range(pairs)
        ]
        rels.append((side_cues, members))
    pair_weights = list(accumulate(1 / (k + 1) ** 0.8 for k in range(pairs)))  # some pairs are rare

    def fill(n: int) -> list[str]:
        return rng.choices(filler, cum_weights=filler_weights, k=n)

    sentences, total = [], 0
    while total < tokens:
        if rng.random() < relational_share:
            side_cues, members = rng.choice(rels)
            x, y, ident = rng.choices(members, cum_weights=pair_weights)[0]
            side = rng.randrange(2)
            core = [rng.choice(side_cues[side]), (x, y)[side], rng.choice(ident), rng.choice(side_cues[side])]
            if rng.random() < 0.5:
                core.append(rng.choice(ident))
            rng.shuffle(core)
            words = fill(rng.randint(1, 4)) + core + fill(rng.randint(1, 4))
        else:
            words = fill(rng.randint(6, 18))
        sentences.append(words)
        total += len(words)
    questions = []
    for _, members in rels:
        for i, (a, b, _) in enumerate(members):
            for j, (c, d, _) in enumerate(members):
                if i != j:
                    questions.append((a, b, c, frozenset({d})))
    rng.shuffle(questions)
    return sentences, questions
