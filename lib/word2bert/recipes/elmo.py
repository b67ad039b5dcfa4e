"""The course ELMo's recipe: word vocabulary, biLM loss, probes, model card
(``python -m word2bert.scripts.train_elmo``).

The defaults are the course's first recipe (300,000 words, a quarter of them WordNet's, 2 epochs); the committed
checkpoint's is ``make checkpoints``'s command: the English mixture of the committed GPT and BERT, read five times.

Every sentence is read as ``<s> words </s>``. The softmax predicts words of a vocabulary built from the training
text (rarer words become ``<unk>``); the character encoder reads any word. Perplexity is scored on documents
written from the toy world's held-out templates (sentences of shapes the model never saw); the sense, WordNet
sense and part-of-speech probes of ``word2bert.probes`` are scored per layer. Writes the checkpoint (vocabulary
and metrics in its metadata) and its model card (``elmo.md`` next to it).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from .. import elmo
from ..data import ToyWorld, Vocab
from ..device import resolve, seed_everything
from ..elmo import BiLM, ElmoConfig
from ..probes import english_probes, pos_probe, sense_probe
from ..training import TrainConfig
from .base import Recipe, save_card
from .options import command, option


@dataclass
class ElmoRecipe(Recipe):
    """Text, vocabulary, size and training of a course ELMo, and the probes its card reports."""

    script: ClassVar[str] = "word2bert.scripts.train_elmo"

    num_tokens: int = option(300_000, "words of pre-training text")
    out: Path = option(elmo.CHECKPOINT, "the checkpoint (.safetensors)")
    min_count: int = option(3, "rarer words are <unk> for the softmax")
    vocab_size: int = option(10_000, "at most this many output words")
    dim: int = option(128, "token vectors and LSTM outputs")
    cell_dim: int = option(256, "LSTM memory cells (projected down to --dim)")
    filters: str = option("1:32,2:32,3:64,4:64,5:64", "width:count of the character CNN")
    max_characters: int = option(16, "characters read of each word")
    dropout: float = option(0.1, "dropout between the layers")
    epochs: float = option(2.0, "passes over the sentences")
    batch_size: int = option(64, "sentences per step")
    lr: float = option(3e-3, "the peak learning rate")
    warmup_steps: int = option(100, "warm-up steps (at most an epoch's)")
    probe_seeds: list[int] = option([0, 1, 2], "toy worlds the probes average over (none: no probes)")
    sense_n: int = option(20, "sense probe: occurrences per sense per split")
    pos_n: int = option(300, "POS probe: sentences per split")

    def model_config(self, vocab: Vocab) -> ElmoConfig:
        return ElmoConfig(
            vocab_size=len(vocab),
            max_characters=self.max_characters,
            filters=[tuple(int(x) for x in item.split(":")) for item in self.filters.split(",")],
            dim=self.dim,
            cell_dim=self.cell_dim,
            dropout=self.dropout,
        )

    def train_config(self, sentences: int) -> TrainConfig:
        """AdamW for ``epochs`` passes over ``sentences``: linear warm-up, then cosine decay."""
        steps_per_epoch = (sentences + self.batch_size - 1) // self.batch_size
        return TrainConfig(
            threads=self.threads,
            steps=max(1, round(self.epochs * steps_per_epoch)),
            lr=self.lr,
            weight_decay=0.0,
            warmup_steps=min(self.warmup_steps, steps_per_epoch),
            schedule="cosine",
        )


def held_out_sentences(num_tokens: int, seed: int) -> list[list[str]]:
    """The perplexity's text: sentences written only from the toy world's held-out templates, about 5% of
    ``num_tokens`` words."""
    return [s for d in ToyWorld(seed).corpus(max(2000, num_tokens // 20), "heldout") for s in d]


def probe_scores(model: BiLM, recipe: ElmoRecipe) -> dict:
    if not recipe.probe_seeds:
        return {}
    seeds, n, pos_n = recipe.probe_seeds, recipe.sense_n, recipe.pos_n
    results = [sense_probe(model, seeds, n, n), pos_probe(model, seeds, pos_n, pos_n), *english_probes(model)]
    return {r.name: {"mean": r.mean, "std": r.std, "seeds": len(r.scores)} for r in results}


def train(recipe: ElmoRecipe) -> tuple[BiLM, dict]:
    """Train a course ELMo as ``recipe`` says; writes the checkpoint (fp16, its metrics in the metadata) and its model
    card. Returns the model and its metrics."""
    device = resolve(recipe.device)
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    started = time.time()
    seed_everything(recipe.seed)

    sentences = [s for d in recipe.documents() for s in d]
    held_out = held_out_sentences(recipe.num_tokens, recipe.seed)
    vocab = Vocab.build(sentences, min_count=recipe.min_count, max_size=recipe.vocab_size)
    config = recipe.model_config(vocab)
    model = BiLM(config, vocab).to(device)
    train_config = recipe.train_config(len(sentences))
    initial = elmo.perplexity(model, held_out)
    history = elmo.train(model, sentences, train_config, recipe.batch_size, seed=recipe.seed, device=device)
    train_minutes = (time.time() - started) / 60
    tail = history[-max(1, len(history) // 10) :]
    metrics = {
        "device": str(device),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_words": sum(map(len, sentences)),
        "sentences": len(sentences),
        "vocab_size": len(vocab),
        "steps": train_config.steps,
        "history": history,
        "final_train_loss": sum(tail) / len(tail),
        "initial_perplexity": initial,
        "perplexity": elmo.perplexity(model, held_out),
        "train_minutes": train_minutes,
        "probes": probe_scores(model, recipe),
        "minutes": (time.time() - started) / 60,
    }
    # half the bytes, and the card's numbers to the digits shown
    elmo.save(model, recipe.out, {"metrics": {k: v for k, v in metrics.items() if k != "history"}}, torch.float16)
    metrics["checkpoint_bytes"] = Path(recipe.out).stat().st_size
    if recipe.card:
        write_card(recipe, config, train_config, metrics)
    print(json.dumps({k: metrics[k] for k in ("final_train_loss", "perplexity", "probes", "minutes")}, indent=1))
    return model, metrics


def write_card(recipe: ElmoRecipe, config: ElmoConfig, train_config: TrainConfig, metrics: dict) -> Path:
    """``elmo.md`` next to the checkpoint: data, configuration, the exact command, metrics."""
    ppl, first = metrics["perplexity"], metrics["initial_perplexity"]
    return save_card(
        recipe.out,
        name="ELMo",
        summary=(
            "Loaded by `word2bert.elmo.pretrained()`: a `BiLM` (character CNN, forward and backward 2-layer LSTM "
            "language models, shared softmax) with its word vocabulary in the checkpoint's metadata. "
            "`embed_sentence(tokens)` gives 3 layers: the token layer, LSTM 1 and LSTM 2. For teaching only."
        ),
        data=[
            (f"{metrics['train_words']:,} words in {metrics['sentences']:,} sentences from {recipe.text_source()}."),
            (
                f"Output vocabulary: {metrics['vocab_size']:,} words seen at least {recipe.min_count} times (with "
                "the special tokens); the character encoder reads UTF-8 bytes, so it needs no vocabulary."
            ),
        ],
        config=config,
        parameters=metrics["parameters"],
        configuration=[
            (
                f"Training: `{train_config}`, batch {recipe.batch_size} sentences, {recipe.epochs} epochs; AdamW, "
                "linear warm-up then cosine decay, gradient clipping at 1.0."
            ),
            (
                f"Device `{metrics['device']}`: {metrics['train_minutes']:.1f} minutes of data and training, "
                f"{metrics['minutes']:.1f} minutes with evaluation."
            ),
        ],
        command=command(recipe.script, recipe),
        metrics=[
            f"Final training loss (mean of both directions, last 10% of steps): {metrics['final_train_loss']:.3f}",
            (
                f"Perplexity on documents of held-out toy-world templates: forward {ppl['forward']:.1f}, backward "
                f"{ppl['backward']:.1f}, mean {ppl['mean']:.1f} (untrained: {first['mean']:.0f})"
            ),
        ],
        probes={
            f"Probe {name} ({p['seeds']} seed(s), per layer, held-out)": p for name, p in metrics["probes"].items()
        },
        notes=[
            (
                "Sense probes label each occurrence with the nearest sense centroid (on the toy world chance is 0.5 "
                "and a "
                "static vector such as layer 0 scores exactly 0.5); the WordNet probe is the real-English benchmark: "
                "usage examples of words with 2 or more senses, held out of the training text, half of each sense's "
                "for its centroid (chance is about 0.35). The POS probe is a "
                "linear classifier. Two runs of the committed checkpoint's command, one on a GPU and one on a CPU "
                "(`checkpoints/elmo_cpu_run.json`), differed by up to 0.08 on one layer of the toy-world sense probe, "
                "0.05 on the plain sentences, 0.01 on WordNet and POS, and 20% in perplexity: dropout draws other "
                "masks on another device, thread counts and kernels change the order of floating-point sums, and the "
                "run drifts from there. The test suite trains only a tiny configuration."
            ),
        ],
    )
