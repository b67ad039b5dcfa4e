"""What pre-training at scale buys downstream: all-MiniLM-L6-v2's real weights fine-tuned beside the course's BERT.

    python -m word2bert.scripts.finetune_minilm --threads 1     # the committed results (one CPU thread)

Chapter 5's ``FineTuner`` fine-tunes each encoder on sentiment and entailment (``finetune.finetune``: the chapter's
400 training examples, 200 steps of 16, 200 held-out-template examples), with the same seeds, so the same examples,
batches and held-out sentences; the task's baseline (no pre-training) is scored on them too. MiniLM, a model 12 times
the course BERT's size pre-trained on billions of words, is fine-tuned at a BERT-sized learning rate
(``LEARNING_RATES``: the paper's range is 2e-5 to 5e-5), the course BERT at the chapter's. Each run records its
metrics and the CPU time it took (one thread: the process's CPU time). A MiniLM run takes minutes of CPU, too long for
the book's build, so chapter 5's sentence-classification page reads the results, ``checkpoints/finetune_minilm.json``;
``tests/test_finetune_minilm.py`` runs this script on a tiny configuration and checks the committed results.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from word2bert import bert
from word2bert import finetune as ft

RESULTS = Path(__file__).resolve().parent.parent / "checkpoints" / "finetune_minilm.json"
TASKS = ("sentiment", "nli")
CONFIG = ft.FinetuneConfig(n_train=400, n_test=200)  # chapter 5's sentence-classification page's
# Each encoder's learning rate: the course BERT at the chapter's, MiniLM at a BERT-sized model's.
LEARNING_RATES = {"course BERT": CONFIG.lr, "all-MiniLM-L6-v2": 5e-5}
# How far a score computed again may land from the committed one, seed for seed: the same examples and seeds, but
# another CPU's floating-point kernels (PyTorch's AVX2, AVX-512 or plain ones, MKL's code path, the thread count) move
# a few held-out predictions of the baseline, whose L-BFGS fit stops before it converges. Measured on the 200 held-out
# examples: up to 0.02 under PyTorch's default kernels or MKL's compatible path on an AMD EPYC, 0.03 on an Intel Xeon
# (issue 49). 0.05 is 10 examples, about one standard deviation of the baselines' three seeds (0.03 to 0.04).
AGREE_WITHIN = 0.05


def agree(committed: list[float], again: list[float], within: float = AGREE_WITHIN) -> bool:
    """Seed for seed, every score of ``again`` within ``within`` of ``committed`` (float32's rounding of an accuracy
    aside)."""
    return len(committed) == len(again) and all(abs(a - b) <= within + 1e-6 for a, b in zip(committed, again))


def encoder(name: str) -> bert.Bert:
    """The encoder to fine-tune: the course checkpoint's (its pre-training heads stay behind) or MiniLM."""
    return bert.pretrained(device="cpu").bert if name == "course BERT" else bert.pretrained(name, device="cpu")


def run(name: str, task: str, seed: int, config: ft.FinetuneConfig, device) -> dict:
    """One fine-tuning run: its metrics and the CPU and wall-clock seconds it took."""
    model = encoder(name)
    cpu, wall = time.process_time(), time.perf_counter()
    result = ft.finetune(task, model, replace(config, lr=LEARNING_RATES[name]), seed, device)
    return {
        "model": name,
        "task": task,
        "seed": seed,
        "metrics": result.metrics,
        "final_loss": sum(result.losses[-20:]) / len(result.losses[-20:]),
        "cpu_seconds": time.process_time() - cpu,
        "wall_seconds": time.perf_counter() - wall,
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(ft.TASKS))
    p.add_argument("--models", nargs="+", default=list(LEARNING_RATES), choices=list(LEARNING_RATES))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--n-train", type=int, default=CONFIG.n_train)
    p.add_argument("--n-test", type=int, default=CONFIG.n_test)
    p.add_argument("--steps", type=int, default=CONFIG.steps)
    p.add_argument("--threads", type=int, default=None, help="CPU threads (1: CPU time is one core's)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    config = replace(CONFIG, n_train=args.n_train, n_test=args.n_test, steps=args.steps)
    results = {
        "settings": {
            "config": asdict(config),
            "learning_rates": {m: LEARNING_RATES[m] for m in args.models},
            "threads": torch.get_num_threads(),
            "device": args.device,
            "torch": torch.__version__,
        },
        "baselines": {
            t: [ft.baseline(t, config.n_train, config.n_test, s, config.test_split) for s in args.seeds]
            for t in args.tasks
        },
        "runs": [],
    }
    for task in args.tasks:
        for name in args.models:
            for seed in args.seeds:
                results["runs"].append(run(name, task, seed, config, args.device))
                print({k: v for k, v in results["runs"][-1].items()}, flush=True)
                args.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
