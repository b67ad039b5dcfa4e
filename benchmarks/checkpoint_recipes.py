"""``make checkpoints``' training, before and after: each model's pre-training step at its recipe's size, timed in
this checkout and in an earlier one, turn about, on one thread (the recipe's ``--threads 1``).

    git worktree add /tmp/before 1675abd   # the commit before issue 41's speed work
    python benchmarks/checkpoint_recipes.py --before /tmp/before [--repeats 3] [--seconds 20]

Each stage runs in a fresh interpreter whose ``word2bert`` is the checkout's (``PYTHONPATH``), with
``OMP_NUM_THREADS=1``, for about ``--seconds`` of training after a warm-up, and reports its words or tokens per
second; the two checkouts alternate, and the table has the medians. The stages and the recipe's sizes (the
``checkpoints`` target of the Makefile):

* word2vec: skip-gram, 50 dimensions, on the course's ordinary English (``english_documents``; the vocabulary is
  built from all of it, training reads the first sentences), words/s; the recipe reads 5.9 million words 5 times.
* ELMo: the committed biLM (its vocabulary of 12,000 words), batches of 64 sentences, words/s; the recipe reads a
  million words 5 times.
* GPT: the committed model (4 layers of 128, 8,000 BPE tokens), batches of 32 windows of 64, tokens/s; 4,000
  steps.
* BERT: the committed model, the course's pre-training objective (MLM and NSP), batches of 16 pairs of 64 pieces
  then of 128, tokens/s; 27,000 and 2,700 steps.

The projection is the recipe's words or tokens over the measured speed: training alone (reading the text,
tokenizers, probes and model cards are apart; their code did not change).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import load  # same folder

# stage -> (unit, recipe's units of work: words or tokens trained on)
RECIPE = {
    "word2vec": ("words/s", 5_933_124 * 5),
    "ELMo": ("words/s", 1_000_000 * 5),
    "GPT": ("tokens/s", 4_000 * 32 * 64),
    "BERT, 64 pieces": ("tokens/s", 27_000 * 16 * 64),
    "BERT, 128 pieces": ("tokens/s", 2_700 * 16 * 128),
}


def stage(name: str, seconds: float) -> tuple[float, float]:
    """(units trained on, seconds) for one stage, in this interpreter's word2bert."""
    import copy

    import torch

    from word2bert import bert, elmo, gpt
    from word2bert.data.toyworld import ToyWorld
    from word2bert.training import TrainConfig, train

    torch.manual_seed(0)
    documents = ToyWorld(0).corpus(200_000)

    def timed(units, fn):
        fn(1)  # warm-up: first calls, lazy set-up, word2vec's kernel
        steps = 2
        while True:
            start = time.perf_counter()
            fn(steps)
            took = time.perf_counter() - start
            if took >= seconds / 4 or steps >= 1 << 20:
                return units(steps), took
            steps *= 2

    if name == "word2vec":
        from word2bert.data.english import english_documents
        from word2bert.word2vec import Word2Vec

        sentences = [s for d in english_documents()[0] for s in d]
        model = Word2Vec(vector_size=50, epochs=1, device="cpu")
        model.build_vocab(sentences)  # the recipe's vocabulary, 38k words: the tables' size sets the caches' hits

        def word2vec(n):  # one epoch over the first 300n sentences
            model.train(sentences[: 300 * n], progress=False)

        return timed(lambda n: sum(map(len, sentences[: 300 * n])), word2vec)
    if name == "ELMo":
        bilm = elmo.pretrained("cpu")
        sentences = [s for d in documents for s in d][:4000]
        per_sentence = sum(map(len, sentences)) / len(sentences)

        def elmo_steps(n):
            config = TrainConfig(steps=n, warmup_steps=1)
            elmo.train(copy.deepcopy(bilm), sentences, config, batch_size=64)

        return timed(lambda n: n * 64 * per_sentence, elmo_steps)
    if name == "GPT":
        causal = gpt.pretrained("cpu")
        ids = torch.randint(0, causal.config.vocab_size, (32, 64))

        def gpt_steps(n):
            train(copy.deepcopy(causal), [ids], lambda m, b: m.loss(b), TrainConfig(steps=n, warmup_steps=1), "cpu")

        return timed(lambda n: n * ids.numel(), gpt_steps)
    from word2bert.pretraining import PretrainConfig, pretrain

    try:
        from word2bert.pretraining_data import create_pretraining_instances, tokenize_documents
    except ImportError:  # before commit 3ceaf8f they were in word2bert.pretraining
        from word2bert.pretraining import create_pretraining_instances, tokenize_documents

    masked = bert.pretrained("cpu")
    length = int(name.split()[1])
    instances = create_pretraining_instances(tokenize_documents(masked.tokenizer, documents[:600]), length, seed=0)

    def bert_steps(n):
        config = PretrainConfig(train=TrainConfig(steps=n, warmup_steps=1), batch_size=16, eval_every=0)
        pretrain(copy.deepcopy(masked), instances, masked.tokenizer, config, device="cpu")

    return timed(lambda n: n * 16 * length, bert_steps)


def run_stage(checkout: Path, name: str, seconds: float) -> float:
    """Words or tokens per second of one stage, in a fresh interpreter with ``checkout``'s word2bert."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "lib"), "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import checkpoint_recipes as c; "
    code += f"import json; print(json.dumps(c.stage({name!r}, {seconds})))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode:
        raise RuntimeError(f"{name} in {checkout}: {done.stderr.strip().splitlines()[-1]}")
    units, took = json.loads(done.stdout.strip().splitlines()[-1])
    return units / took


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the earlier commit")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="training time per timed run, about")
    parser.add_argument("--stages", nargs="+", choices=list(RECIPE), default=list(RECIPE))
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    print(f"before: {args.before}, after: {here}; start: {load()}", flush=True)
    rows, totals = [], {"before": 0.0, "after": 0.0}
    for name in args.stages:
        speeds = {"before": [], "after": []}
        for _ in range(args.repeats):
            for who, checkout in [("before", args.before), ("after", here)]:
                speeds[who].append(run_stage(checkout, name, args.seconds))
                print(f"  {name}, {who}: {speeds[who][-1]:,.0f} {RECIPE[name][0]}; {load()}", flush=True)
        unit, work = RECIPE[name]
        before, after = statistics.median(speeds["before"]), statistics.median(speeds["after"])
        totals["before"] += work / before
        totals["after"] += work / after
        row = [name, f"{before:,.0f} {unit}", f"{after:,.0f} {unit}", f"{after / before:.2f}x"]
        rows.append(row + [f"{work / before / 60:.1f}", f"{work / after / 60:.1f}"])
    print(f"end: {load()}\n")
    print("| stage | before | after | after / before | recipe's training, before (min) | after (min) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    before, after = totals["before"] / 60, totals["after"] / 60
    print(f"| all | | | {before / after:.2f}x | {before:.1f} | {after:.1f} |")


if __name__ == "__main__":
    main()
