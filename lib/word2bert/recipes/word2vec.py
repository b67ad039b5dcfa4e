"""The course word2vec's recipe: skip-gram on all of its ordinary English, the word vectors kept
(``python -m word2bert.scripts.train_word2vec``).

Skip-gram with negative sampling (``word2bert.word2vec``) reads the cleaned English of ``word2bert.data.english``
(WordNet's glosses and examples, GCIDE and fortune: about 6 million words) and its word vectors are stored in
float16 in ``checkpoints/word2vec-english.safetensors``, which ``word2bert.vectors.pretrained("word2vec-english")``
loads. Chapter 1 sets them beside GloVe 6B on the standard word tests; the model card records those scores,
measured from the stored file.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from ..data.english import LICENCES, english_documents
from ..vectors import WORD2VEC_ENGLISH, KeyedVectors
from ..word2vec import Word2Vec
from ..word_tests import ANALOGY_VOCAB, standard_word_tests
from .base import save_card
from .options import command, option


@dataclass
class Word2VecRecipe:
    """How much of the course's English to read (all unless ``num_tokens``), skip-gram's settings, and where the
    vectors go."""

    script: ClassVar[str] = "word2bert.scripts.train_word2vec"

    num_tokens: int | None = option(None, "train on the first sentences, this many words")
    vector_size: int = option(50, "50, as the GloVe 6B vectors it is compared with")
    window: int = option(5, "the largest window (each is shrunk at random, as in the C code)")
    min_count: int = option(5, "rarer words are dropped")
    epochs: int = option(5, "passes over the text")
    seed: int = option(0, "the seed of the weights and the samples")
    threads: int | None = option(None, "torch threads (training uses one worker: repeatable)")
    out: Path = option(WORD2VEC_ENGLISH, "the vectors (.safetensors)")
    card: bool = option(True, "write the model card next to the vectors (--no-card: do not)")


def train(recipe: Word2VecRecipe) -> KeyedVectors:
    """Train the course's word2vec as ``recipe`` says; writes its vectors (fp16) and their model card. Returns the
    vectors as stored."""
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    start = time.perf_counter()
    documents, stats = english_documents()
    sentences = [s for d in documents for s in d]
    if recipe.num_tokens:
        ends = itertools.accumulate(map(len, sentences))
        sentences = sentences[: next((i + 1 for i, n in enumerate(ends) if n >= recipe.num_tokens), len(sentences))]
    model = Word2Vec(
        sentences,
        vector_size=recipe.vector_size,
        window=recipe.window,
        min_count=recipe.min_count,
        epochs=recipe.epochs,
        seed=recipe.seed,
        device="cpu",
        threads=recipe.threads,
    )
    minutes = (time.perf_counter() - start) / 60
    model.wv.save(recipe.out, dtype=torch.float16)
    stored = KeyedVectors.load(recipe.out)
    if not recipe.card:
        return stored

    scores = standard_word_tests(stored)
    words = sum(map(len, sentences))
    sources = ", ".join(f"{name} {s['tokens']:,}" for name, s in stats.sources.items())
    analogies = scores.analogies
    save_card(
        recipe.out,
        name="word2vec",
        summary=(
            'Loaded by `word2bert.vectors.pretrained("word2vec-english")`: the word vectors (input vectors) of the '
            "course's skip-gram, trained on all of the course's ordinary English, as a `KeyedVectors` in float16. "
            "Chapter 1 compares them with GloVe 6B, trained on a thousand times more text."
        ),
        data=[
            f"{words:,} words in {len(sentences):,} sentences: `word2bert.data.english.english_documents()`"
            + (f", its first sentences up to {recipe.num_tokens:,} words" if recipe.num_tokens else "")
            + f" (the corpus's words per source: {sources}; cleaned, near-duplicates dropped, the real-English sense "
            "benchmark "
            f"held out; licences: {', '.join(LICENCES)}, as the book's licences page records)"
            + (f"; missing sources: {', '.join(stats.missing)}" if stats.missing else ""),
            f"Vocabulary: the {len(stored):,} words seen at least {recipe.min_count} times, most frequent first.",
        ],
        config=model.config,
        parameters=stored.vectors.numel(),
        configuration=[
            "Skip-gram with negative sampling, as the C code: unigram^3/4 noise, frequent-word subsampling, shrunk "
            "windows, a learning rate falling linearly; one worker, so that a run is repeatable.",
            f"Stored: the input vectors only ({len(stored):,} x {stored.vector_size}) in float16.",
            f"Device `cpu`, {minutes:.1f} minutes in all (reading the text and training).",
        ],
        command=command(recipe.script, recipe),
        metrics_title="Metrics (the standard sets that ship in gensim's wheel, scored from the stored file)",
        metrics=[
            f"WordSim-353: Spearman {scores.wordsim353.spearman:.3f} on {scores.wordsim353.pairs} pairs "
            f"({scores.wordsim353.unknown} with an unknown word skipped)",
            f"SimLex-999: Spearman {scores.simlex999.spearman:.3f} on {scores.simlex999.pairs} pairs "
            f"({scores.simlex999.unknown} skipped)",
            f"Google's analogies (3CosAdd among the {ANALOGY_VOCAB:,} most frequent words): "
            f"{analogies.accuracy:.3f} on {analogies.answered:,} questions ({analogies.unknown:,} skipped); "
            f"semantic {analogies.semantic:.3f}, syntactic {analogies.syntactic:.3f}",
        ],
        notes=[
            "Re-running the command on a CPU gives these numbers up to small floating-point differences "
            "(thread counts change the order of sums)."
        ],
    )
    return stored
