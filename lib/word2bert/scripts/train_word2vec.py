"""Train the course's word2vec on all of its ordinary English and keep the word vectors.

Skip-gram with negative sampling (``word2bert.word2vec``) reads the cleaned English of ``word2bert.data.english``
(WordNet's glosses and examples, GCIDE and fortune: about 6 million words) and its word vectors are stored in
float16 in ``checkpoints/word2vec-english.safetensors``, which ``word2bert.vectors.pretrained("word2vec-english")``
loads. Chapter 1 sets them beside GloVe 6B on the standard word tests; the model card records those scores,
measured from the stored file.

    python -m word2bert.scripts.train_word2vec --threads 1
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import torch

from word2bert.data.english import LICENCES, english_documents
from word2bert.vectors import WORD2VEC_ENGLISH, KeyedVectors
from word2bert.word2vec import Word2Vec
from word2bert.word_tests import ANALOGY_VOCAB, standard_word_tests

from .common import save_card


def main(argv: list[str] | None = None) -> KeyedVectors:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-tokens", type=int, default=None, help="train on the first sentences, this many words")
    p.add_argument("--vector-size", type=int, default=50, help="50, as the GloVe 6B vectors it is compared with")
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch threads (training uses one worker: repeatable)")
    p.add_argument("--out", type=Path, default=WORD2VEC_ENGLISH)
    p.add_argument("--no-card", action="store_true")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    start = time.perf_counter()
    documents, stats = english_documents()
    sentences = [s for d in documents for s in d]
    if args.num_tokens:
        ends = itertools.accumulate(map(len, sentences))
        sentences = sentences[: next((i + 1 for i, n in enumerate(ends) if n >= args.num_tokens), len(sentences))]
    model = Word2Vec(
        sentences,
        vector_size=args.vector_size,
        window=args.window,
        min_count=args.min_count,
        epochs=args.epochs,
        seed=args.seed,
        device="cpu",
        threads=args.threads,
    )
    minutes = (time.perf_counter() - start) / 60
    model.wv.save(args.out, dtype=torch.float16)
    stored = KeyedVectors.load(args.out)
    if args.no_card:
        return stored

    scores = standard_word_tests(stored)
    words = sum(map(len, sentences))
    sources = ", ".join(f"{name} {s['tokens']:,}" for name, s in stats.sources.items())
    analogies = scores.analogies
    save_card(
        args.out,
        name="word2vec",
        summary=(
            'Loaded by `word2bert.vectors.pretrained("word2vec-english")`: the word vectors (input vectors) of the '
            "course's skip-gram, trained on all of the course's ordinary English, as a `KeyedVectors` in float16. "
            "Chapter 1 compares them with GloVe 6B, trained on a thousand times more text."
        ),
        data=[
            f"{words:,} words in {len(sentences):,} sentences: `word2bert.data.english.english_documents()`"
            + (f", its first sentences up to {args.num_tokens:,} words" if args.num_tokens else "")
            + f" (the corpus's words per source: {sources}; cleaned, near-duplicates dropped, the real-English sense "
            "benchmark "
            f"held out; licences: {', '.join(LICENCES)}, as the book's licences page records)"
            + (f"; missing sources: {', '.join(stats.missing)}" if stats.missing else ""),
            f"Vocabulary: the {len(stored):,} words seen at least {args.min_count} times, most frequent first.",
        ],
        config=model.config,
        parameters=stored.vectors.numel(),
        configuration=[
            "Skip-gram with negative sampling, as the C code: unigram^3/4 noise, frequent-word subsampling, shrunk "
            "windows, a learning rate falling linearly; one worker, so that a run is repeatable.",
            f"Stored: the input vectors only ({len(stored):,} x {stored.vector_size}) in float16.",
            f"Device `cpu`, {minutes:.1f} minutes in all (reading the text and training).",
        ],
        script="word2bert.scripts.train_word2vec",
        argv=argv,
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


if __name__ == "__main__":
    main()
