"""word2bert's word2vec against gensim's: same corpus, same hyper-parameters, same threads; words/s and accuracy.

    python benchmarks/word2vec_vs_gensim.py [--regime course rare load] [--threads 1 2] [--seeds 3] [--repeats 3]

Two regimes:

* ``course``: the course's pre-training text (toy world plus WordNet glosses, ``pretraining_documents``,
  500k tokens), min_count 5, 100 dimensions. Accuracy: the toy world's category tests (similarity triples,
  neighbour purity, category offsets by 3CosAdd) and, when WordNet is installed, WordNet synonyms and plurals.
* ``rare``: generated corpora with relational analogies and a long tail (``analogy_corpus.py``) of 100k, 300k
  and 1M tokens, min_count 1, 64 dimensions, 5 epochs: most word types occur a handful of times, as in text8 or
  a user's own text. Accuracy: 3CosAdd on every analogy question of the corpus.

Speed counts corpus words (before subsampling) times epochs over training time, vocabulary building included,
with ``workers`` = torch threads = the given thread count for both libraries; the two libraries take turns, run
after run, and words/s is the median over runs (``--repeats`` in the course regime, the seeds in the rare one), so
that a busy machine slows both alike. Accuracy is the mean over seeds.
``load`` times ours (the fused step), ours before (``sgd_step``) and gensim alone and then beside a competing
process that keeps one core busy, and each library's defaults the same way: the slowdown a busy neighbour costs.
``diagnose`` changes one thing at a time to find the rare-word gap's cause. Then ours is timed both ways,
``sgd_step`` (written-out gradient) against ``autograd=True``, and profiled.
gensim comes with `make setup` (the ``glove`` extra, which ``dev`` includes, pinned in constraints.txt).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from gensim.models import Word2Vec as GensimWord2Vec

from word2bert import word2vec as w2v
from word2bert import word_tests
from word2bert.data import pretraining_documents, wordnet_available
from word2bert.vectors import KeyedVectors

sys.path.insert(0, str(Path(__file__).parent))
from analogy_corpus import analogy_corpus  # noqa: E402
from machine import busy_neighbour, load  # noqa: E402


def gensim_vectors(model: GensimWord2Vec) -> KeyedVectors:
    """gensim's vectors in our KeyedVectors, so that both are scored by the same code."""
    return KeyedVectors(list(model.wv.index_to_key), torch.from_numpy(model.wv.vectors.copy()))


def course_scores(wv: KeyedVectors, wordnet_tests) -> dict[str, float]:
    categories = word_tests.toyworld_categories()
    out = {
        "toy similarity": word_tests.similarity_accuracy(wv, word_tests.similarity_triples(categories)),
        "toy purity@5": word_tests.neighbour_purity(wv, categories),
        "toy category offsets": word_tests.analogy_accuracy(wv, word_tests.category_analogies(categories)),
    }
    if wordnet_tests is not None:
        synonyms, plurals = wordnet_tests
        out["WordNet synonyms"] = word_tests.similarity_accuracy(wv, synonyms)
        out["WordNet plurals"] = word_tests.analogy_accuracy(wv, plurals)
    return out


OURS = dict(device="cpu", progress=False)


def train_both(sentences, threads: int, **hyper):
    """(our vectors, seconds), (gensim's vectors, seconds), with the same hyper-parameters and threads."""
    torch.set_num_threads(threads)
    start = time.perf_counter()
    ours = w2v.Word2Vec(sentences, device="cpu", workers=threads, progress=False, **hyper)
    ours_time = time.perf_counter() - start
    start = time.perf_counter()
    theirs = GensimWord2Vec(sentences, workers=threads, **hyper)
    theirs_time = time.perf_counter() - start
    return (ours.wv, ours_time), (gensim_vectors(theirs), theirs_time)


def table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(flush=True)


def course_regime(threads: list[int], repeats: int) -> None:
    """Run i of each cell trains both libraries with seed i: words/s is the median over runs, each score the mean
    ± the spread (population standard deviation) over seeds, so that "within a point" is judged beside it."""
    sentences = [s for doc in pretraining_documents(500_000, wordnet_fraction=0.25, seed=0) for s in doc]
    words = sum(map(len, sentences))
    print(f"course regime: {words:,} tokens, {len(sentences):,} sentences, min_count 5, 5 epochs, {load()}\n")
    hyper = dict(vector_size=100, window=5, negative=5, min_count=5, sample=1e-3, epochs=5, alpha=0.025)
    rows, header = [], None
    for n in threads:
        for sg in (1, 0):
            runs = [train_both(sentences, n, sg=sg, seed=seed, **hyper) for seed in range(repeats)]
            # WordNet tests from one vocabulary (the same for every seed), so both models answer the same questions
            wordnet_tests = word_tests.wordnet_word_tests(runs[0][0][0], n=500) if wordnet_available() else None
            name = "skip-gram" if sg else "CBOW"
            speeds = {}
            for k, who in enumerate(["word2bert", "gensim"]):
                scores = [course_scores(r[k][0], wordnet_tests) for r in runs]
                speeds[who] = words * 5 / statistics.median(r[k][1] for r in runs)
                header = header or ["model", "threads", "words/s", "ours / gensim"] + list(scores[0])
                cells = [
                    f"{100 * statistics.mean(v):.1f} ± {100 * statistics.pstdev(v):.1f}"
                    for v in zip(*(s.values() for s in scores))
                ]
                ratio = f"{speeds['word2bert'] / speeds['gensim']:.2f}x" if who == "gensim" else ""
                rows.append([f"{name}, {who}", str(n), f"{speeds[who]:,.0f}", ratio] + cells)
    print(f"after: {load()}\n")
    table(header, rows)


def rare_regime(threads: list[int], seeds: int, sizes: list[int]) -> None:
    hyper = dict(vector_size=64, window=5, negative=5, min_count=1, sample=1e-3, epochs=5, alpha=0.025)
    print(f"rare-word regime: generated analogy corpora, {hyper}, {seeds} seeds\n")
    rows = []
    for size in sizes:
        for n in threads:
            for sg in (1, 0):
                acc = {"word2bert": [], "gensim": []}
                speed = {"word2bert": [], "gensim": []}
                for seed in range(seeds):
                    sentences, questions = analogy_corpus(size, seed=seed)
                    words = sum(map(len, sentences))
                    (ours, ours_time), (theirs, theirs_time) = train_both(sentences, n, sg=sg, seed=seed, **hyper)
                    for who, wv, seconds in [("word2bert", ours, ours_time), ("gensim", theirs, theirs_time)]:
                        acc[who].append(word_tests.analogy_accuracy(wv, questions))
                        speed[who].append(words * hyper["epochs"] / seconds)
                singletons = sum(c == 1 for c in ours.vocab.counts) / len(ours.vocab)
                ratio = statistics.median(speed["word2bert"]) / statistics.median(speed["gensim"])
                rows.append(
                    [f"{words:,}", f"{singletons:.0%}", "skip-gram" if sg else "CBOW", str(n)]
                    + [f"{100 * statistics.mean(acc[w]):.1f} ± {100 * statistics.pstdev(acc[w]):.1f}" for w in acc]
                    + [f"{statistics.median(speed[w]):,.0f}" for w in speed]
                    + [f"{ratio:.2f}x"]
                )
    table(
        [
            "tokens",
            "word types seen once",
            "model",
            "threads",
            "word2bert analogies %",
            "gensim analogies %",
            "word2bert words/s",
            "gensim words/s",
            "speed, ours / gensim",
        ],
        rows,
    )


def diagnose(seeds: int) -> None:
    """The rare-word gap's cause: one difference from gensim at a time, on the 300k-token generated corpus."""
    hyper = dict(sg=1, vector_size=64, window=5, negative=5, min_count=1, sample=1e-3, epochs=5, alpha=0.025)
    variants = {
        "word2bert as shipped (input vectors in ±1/dim, 1,024 pairs per step)": {},
        "the C code's start, input vectors in ±0.5/dim (word2bert before)": {"start": 0.5},
        "64 pairs per step": {"batch_size": 64},
        "16,384 pairs per step": {"batch_size": 16_384},
    }
    scores = {name: [] for name in [*variants, "gensim"]}
    torch.set_num_threads(1)
    for seed in range(seeds):
        sentences, questions = analogy_corpus(300_000, seed=seed)
        for name, change in variants.items():
            model = w2v.Word2Vec(seed=seed, device="cpu", batch_size=change.get("batch_size", 1024), **hyper)
            model.build_vocab(sentences)
            model.model.input_vectors.weight.data.mul_(change.get("start", 1.0))
            model.train(sentences, workers=1, progress=False)
            scores[name].append(word_tests.analogy_accuracy(model.wv, questions))
        theirs = gensim_vectors(GensimWord2Vec(sentences, workers=1, seed=seed, **hyper))
        scores["gensim"].append(word_tests.analogy_accuracy(theirs, questions))
    print(f"skip-gram, one thread, 300k-token generated corpus, {hyper}, {seeds} seeds\n")
    table(
        ["variant", "analogies %"],
        [[name, f"{100 * statistics.mean(v):.1f} ± {100 * statistics.pstdev(v):.1f}"] for name, v in scores.items()],
    )


def step_timing() -> None:
    sentences, _ = analogy_corpus(100_000, seed=0)
    torch.set_num_threads(1)
    rows = []
    for sg in (1, 0):
        seconds = {}
        for autograd in (False, True):
            start = time.perf_counter()
            w2v.Word2Vec(sentences, vector_size=64, min_count=1, sg=sg, workers=1, progress=False, autograd=autograd)
            seconds[autograd] = time.perf_counter() - start
        rows.append(
            [
                "skip-gram" if sg else "CBOW",
                f"{seconds[False]:.1f}",
                f"{seconds[True]:.1f}",
                f"{seconds[True] / seconds[False]:.1f}x",
            ]
        )
    print("one thread, 100k-token generated corpus, 5 epochs\n")
    table(["model", "sgd_step (s)", "autograd + torch.optim.SGD (s)", "sgd_step is faster by"], rows)


def load_regime(threads: list[int], size: int) -> None:
    """Each library alone, then beside a competing process that keeps one core busy, on the same cores.

    Rows: ours (the fused step), ours before (``sgd_step``, ``fused=False``), gensim, with ``workers`` = the given
    thread count; then each library's defaults (ours: one worker on ``device.cpu_threads()`` threads; ours before:
    ``sgd_step`` on torch's default threads, every core; gensim: three workers)."""
    sentences, questions = analogy_corpus(size, seed=0)
    words = sum(map(len, sentences)) * 5
    # sg=1 for both: gensim's default is CBOW, ours skip-gram (before 2026-11-27 this regime set neither, and so
    # timed our skip-gram against gensim's CBOW, about twice as fast)
    hyper = dict(sg=1, vector_size=64, window=5, negative=5, min_count=1, sample=1e-3, epochs=5, alpha=0.025, seed=0)
    every_core = torch.get_num_threads()
    runs = {}
    for n in threads:
        runs[f"ours, {n} worker(s)"] = lambda n=n: w2v.Word2Vec(sentences, workers=n, threads=1, **OURS, **hyper).wv
        runs[f"ours before (sgd_step), {n} worker(s)"] = lambda n=n: (
            w2v.Word2Vec(sentences, workers=n, threads=1, fused=False, **OURS, **hyper).wv
        )
        runs[f"gensim, {n} worker(s)"] = lambda n=n: gensim_vectors(GensimWord2Vec(sentences, workers=n, **hyper))
    runs["ours, defaults"] = lambda: w2v.Word2Vec(sentences, **OURS, **hyper).wv
    runs[f"ours before, defaults ({every_core} torch threads)"] = lambda: (
        w2v.Word2Vec(sentences, threads=every_core, fused=False, **OURS, **hyper).wv
    )
    runs["gensim, defaults (3 workers)"] = lambda: gensim_vectors(GensimWord2Vec(sentences, **hyper))
    speed, accuracy = {}, {}
    for busy in (False, True):
        with busy_neighbour(busy):
            print(f"{'busy neighbour' if busy else 'alone'}, before: {load()}", flush=True)
            for name, run in runs.items():
                start = time.perf_counter()
                wv = run()
                speed[name, busy] = words / (time.perf_counter() - start)
                accuracy[name, busy] = word_tests.analogy_accuracy(wv, questions)
                print(f"  {name}: {speed[name, busy]:,.0f} words/s, analogies {accuracy[name, busy]:.1%}", flush=True)
            print(f"after: {load()}\n", flush=True)
    print(f"skip-gram, {size:,}-token generated corpus (rare words), {hyper}\n")
    table(
        ["run", "words/s alone", "words/s, busy neighbour", "busy / alone", "analogies % (alone, busy)"],
        [
            [
                name,
                f"{speed[name, False]:,.0f}",
                f"{speed[name, True]:,.0f}",
                f"{speed[name, True] / speed[name, False]:.2f}",
                f"{100 * accuracy[name, False]:.1f}, {100 * accuracy[name, True]:.1f}",
            ]
            for name in runs
        ],
    )
    rows = []
    for busy in (False, True):
        for n in threads:
            theirs = speed[f"gensim, {n} worker(s)", busy]
            for who in (f"ours, {n} worker(s)", f"ours before (sgd_step), {n} worker(s)"):
                rows.append([who, "busy" if busy else "alone", f"{speed[who, busy] / theirs:.2f}x"])
        theirs = speed["gensim, defaults (3 workers)", busy]
        for who in runs:
            if "defaults" in who and not who.startswith("gensim"):
                rows.append([who, "busy" if busy else "alone", f"{speed[who, busy] / theirs:.2f}x"])
    table(["ours", "machine", "speed / gensim (same workers; defaults: gensim's defaults)"], rows)


def profile() -> None:
    """Where one skip-gram run's time goes, by function: on the 100k-token generated corpus (one thread) the torch
    step (``sgd_step``, before) and the fused one (after); then the course corpus with the fused step."""
    sentences, _ = analogy_corpus(100_000, seed=0)
    for fused in (False, True):
        step = "fused_sgd_steps (after)" if fused else "sgd_step (before)"
        profile_one(
            f"one thread, 100k tokens, skip-gram, 5 epochs, {step}", sentences, vector_size=64, min_count=1, fused=fused
        )
    sentences = [s for doc in pretraining_documents(500_000, wordnet_fraction=0.25, seed=0) for s in doc]
    profile_one("one thread, the course corpus (500k tokens), skip-gram, 5 epochs", sentences, vector_size=100)


def profile_one(title: str, sentences, **hyper) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    w2v.Word2Vec(sentences, workers=1, threads=1, progress=False, **hyper)
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    total = sum(tt for _, _, tt, _, _ in stats.values())
    rows = sorted(
        (
            (tt, f"{Path(file).name}:{line} {name}" if line else name)
            for (file, line, name), (_, _, tt, _, _) in stats.items()
        ),
        reverse=True,
    )[:10]
    print(f"{title}: {total:.1f} s in all ({load()})\n")
    table(
        ["function (own time, callees apart)", "seconds", "share"],
        [[f"`{where}`", f"{tt:.2f}", f"{tt / total:.0%}"] for tt, where in rows],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--regime",
        nargs="+",
        choices=["course", "rare", "load", "diagnose", "steps", "profile"],
        default=["course", "rare", "load", "diagnose", "steps", "profile"],
    )
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch threads and workers, each")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per rare-regime cell")
    parser.add_argument("--repeats", type=int, default=3, help="course-regime runs per cell, seeds 0.. (median)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--load-size", type=int, default=100_000, help="tokens of the load regime's corpus")
    args = parser.parse_args(argv)
    import gensim

    print(f"torch {torch.__version__}, gensim {gensim.__version__}\n")
    if "course" in args.regime:
        course_regime(args.threads, args.repeats)
    if "rare" in args.regime:
        rare_regime(args.threads, args.seeds, args.sizes)
    if "load" in args.regime:
        load_regime(args.threads, args.load_size)
    if "diagnose" in args.regime:
        diagnose(args.seeds)
    if "steps" in args.regime:
        step_timing()
    if "profile" in args.regime:
        profile()


if __name__ == "__main__":
    main()
