"""word2bert's word2vec against gensim's: same corpus, same hyper-parameters, words per second and accuracy.

    python benchmarks/word2vec_vs_gensim.py [--tokens 500000] [--epochs 5] [--threads 2]

The corpus is the course's pre-training text (toy world plus WordNet glosses, ``pretraining_documents``). Speed
counts corpus words (before subsampling) times epochs over training time, vocabulary building included. Accuracy:
the toy world's category tests (similarity triples, neighbour purity, category offsets by 3CosAdd) and, when WordNet is
installed, WordNet synonyms (similarity) and regular plurals (analogies). gensim is a benchmark-only dependency:
``pip install -c constraints.txt gensim==4.4.0``.
"""

from __future__ import annotations

import argparse
import time

import torch
from gensim.models import Word2Vec as GensimWord2Vec

from word2bert import word2vec as w2v
from word2bert.data import pretraining_documents, wordnet_available


def gensim_vectors(model: GensimWord2Vec) -> w2v.KeyedVectors:
    """gensim's vectors in our KeyedVectors, so that both are scored by the same code."""
    return w2v.KeyedVectors(list(model.wv.index_to_key), torch.from_numpy(model.wv.vectors.copy()))


def scores(wv: w2v.KeyedVectors, wordnet_tests) -> dict[str, float]:
    categories = w2v.toyworld_categories()
    out = {
        "toy similarity": w2v.similarity_accuracy(wv, w2v.similarity_triples(categories)),
        "toy purity@5": w2v.neighbour_purity(wv, categories),
        "toy category offsets": w2v.analogy_accuracy(wv, w2v.category_analogies(categories)),
    }
    if wordnet_tests is not None:
        synonyms, plurals = wordnet_tests
        out["WordNet synonyms"] = w2v.similarity_accuracy(wv, synonyms)
        out["WordNet plurals"] = w2v.analogy_accuracy(wv, plurals)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=500_000)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="torch threads and gensim workers")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sentences = [s for doc in pretraining_documents(args.tokens, wordnet_fraction=0.25, seed=0) for s in doc]
    words = sum(map(len, sentences))
    print(f"corpus: {words:,} tokens, {len(sentences):,} sentences; {args.epochs} epochs, "
          f"{args.threads} threads/workers, torch {torch.__version__}")
    hyper = dict(vector_size=100, window=5, negative=5, min_count=5, sample=1e-3, epochs=args.epochs, alpha=0.025,
                 seed=0)
    rows = []
    for sg in (1, 0):
        start = time.perf_counter()
        ours = w2v.Word2Vec(sentences, sg=sg, device="cpu", progress=False, **hyper)
        ours_time = time.perf_counter() - start
        start = time.perf_counter()
        theirs = GensimWord2Vec(sentences, sg=sg, workers=args.threads, **hyper)
        theirs_time = time.perf_counter() - start
        # WordNet tests from one vocabulary, so both models answer the same questions
        wordnet_tests = w2v.wordnet_word_tests(ours.wv, n=500) if wordnet_available() else None
        name = "skip-gram" if sg else "CBOW"
        for who, wv, seconds in [("word2bert", ours.wv, ours_time), ("gensim", gensim_vectors(theirs), theirs_time)]:
            rows.append((f"{name}, {who}", words * args.epochs / seconds, scores(wv, wordnet_tests)))
    header = ["model", "words/s"] + list(rows[0][2])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, speed, result in rows:
        print(f"| {name} | {speed:,.0f} | " + " | ".join(f"{v:.1%}" for v in result.values()) + " |")


if __name__ == "__main__":
    main()
