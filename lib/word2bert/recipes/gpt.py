"""The course GPT's recipe: byte-level BPE vocabulary, next-token loss, model card
(``python -m word2bert.scripts.train_gpt``).

The defaults are the course's first recipe (2,048 tokens, a million words, a quarter of them WordNet's, 600 steps);
the committed checkpoint's is ``make checkpoints``'s command: the vocabulary and data of the committed BERT, read for
enough steps that the English half moves its sense probes (as ``recipes.english_curve`` measured for BERT).

The documents are joined into one stream of BPE tokens, separated by ``<|endoftext|>`` (as GPT-2's WebText), and
cut into windows of ``block_size`` tokens. Two held-out sets are scored: documents of the same mixture the model
never saw, and documents written from the toy world's held-out templates (sentences of new shapes). Writes the
checkpoint (tokenizer in its metadata) and its model card (``gpt.md`` next to it).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from .. import gpt
from ..bpe import ENDOFTEXT, BPETokenizer
from ..data import ToyWorld
from ..device import resolve, seed_everything
from ..gpt import GPT, GPTConfig, document_text, next_token_loss, token_stream, windows
from ..training import TrainConfig
from ..training import train as train_loop
from .base import TransformerRecipe, save_card
from .options import command, option


@dataclass
class GPTRecipe(TransformerRecipe):
    """Text, vocabulary, size and training of a course GPT. The text is read about once, so there is little to
    over-fit: no dropout."""

    script: ClassVar[str] = "word2bert.scripts.train_gpt"

    num_tokens: int = option(1_000_000, "words of pre-training text")
    out: Path = option(gpt.CHECKPOINT, "the checkpoint (.safetensors)")
    eval_fraction: float = option(0.02, "documents held out for the loss")
    vocab_size: int = option(2048, "BPE vocabulary size (with 256 bytes)")
    block_size: int = option(64, "tokens per window")
    post_ln: bool = option(False, "GPT-1's post-LN block instead of GPT-2's pre-LN")
    steps: int = option(600, "training steps")
    batch_size: int = option(32, "windows per step")
    lr: float = option(2e-3, "the peak learning rate")
    warmup_steps: int = option(60, "linear warm-up steps, then cosine decay")
    weight_decay: float = option(0.1, "AdamW's, on the weight matrices")
    probes: bool = option(False, "score the sense probe (left and right cues) for the card")

    def model_config(self, tokenizer: BPETokenizer) -> GPTConfig:
        return GPTConfig(
            vocab_size=tokenizer.vocab_size,
            block_size=self.block_size,
            n_layer=self.layers,
            n_head=self.heads,
            n_embd=self.hidden,
            dropout=self.dropout,
            post_ln=self.post_ln,
        )

    def train_config(self) -> TrainConfig:
        """AdamW with GPT's betas, linear warm-up, then cosine decay."""
        return TrainConfig(
            threads=self.threads,
            steps=self.steps,
            lr=self.lr,
            weight_decay=self.weight_decay,
            betas=(0.9, 0.95),
            warmup_steps=self.warmup_steps,
            schedule="cosine",
        )


def held_out_templates(num_tokens: int, seed: int) -> list[list[list[str]]]:
    """Toy-world documents written only from held-out templates: about 1% of ``num_tokens`` words."""
    return ToyWorld(seed).corpus(max(2000, num_tokens // 100), "heldout")


def train(recipe: GPTRecipe) -> tuple[GPT, dict]:
    """Train a course GPT as ``recipe`` says; writes the checkpoint (fp16) and its model card. Returns the model and
    its metrics."""
    device = resolve(recipe.device)
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    started = time.time()
    generator = seed_everything(recipe.seed)

    docs = recipe.documents()
    n_eval = max(1, int(len(docs) * recipe.eval_fraction))
    train_docs, eval_docs = docs[n_eval:], docs[:n_eval]
    tokenizer = BPETokenizer.train(map(document_text, train_docs), recipe.vocab_size)
    train_windows = windows(token_stream(tokenizer, train_docs), recipe.block_size)
    templates = held_out_templates(recipe.num_tokens, recipe.seed)
    held_out = {
        "held-out documents": windows(token_stream(tokenizer, eval_docs), recipe.block_size),
        "held-out templates": windows(token_stream(tokenizer, templates), recipe.block_size),
    }
    order = torch.randperm(len(train_windows), generator=generator)
    batch = recipe.batch_size
    batches = [train_windows[order[i : i + batch]] for i in range(0, len(order), batch)]

    config = recipe.model_config(tokenizer)
    model = GPT(config, tokenizer)
    train_config = recipe.train_config()
    model.to(device)
    initial = {name: next_token_loss(model, data, batch, device) for name, data in held_out.items()}
    history = train_loop(model, batches, lambda m, b: m.loss(b), train_config, device, desc="GPT")
    final = {name: next_token_loss(model, data, batch, device) for name, data in held_out.items()}
    gpt.save(model, recipe.out, torch.float16)  # half the bytes, and the card's numbers to the digits shown

    tail = history[-max(1, len(history) // 10) :]
    metrics = {
        "device": str(device),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_words": sum(len(s) for d in train_docs for s in d),
        "train_tokens": train_windows.numel(),
        "epochs": recipe.steps * batch / len(train_windows),
        "vocab_size": tokenizer.vocab_size,
        "history": history,
        "final_train_loss": sum(tail) / len(tail),
        "initial_loss": initial,
        "loss": final,
        "perplexity": {name: math.exp(loss) for name, loss in final.items()},
        "minutes": (time.time() - started) / 60,
        "checkpoint_bytes": Path(recipe.out).stat().st_size,
    }
    if recipe.probes:
        from ..probes import english_probes, sense_probe

        metrics["probes"] = {
            f"Sense probe, {cue} cues (held-out templates, seeds 0-2, per layer)": {"mean": r.mean, "std": r.std}
            for cue in ("left", "right")
            for r in [sense_probe(model, cue=cue)]
        } | {
            f"Probe, {r.name} ({len(r.scores)} halvings, per layer)": {"mean": r.mean, "std": r.std}
            for r in english_probes(model)
        }
    if recipe.card:
        write_card(recipe, config, train_config, metrics, model)
    return model, metrics


def write_card(recipe: GPTRecipe, config: GPTConfig, train_config: TrainConfig, metrics: dict, model: GPT) -> Path:
    """``gpt.md`` next to the checkpoint: data, configuration, the exact command, metrics, a sample."""
    prompt = "the bank"
    ids = torch.tensor([model.tokenizer.encode(prompt)], device=model.wte.weight.device)
    sample = model.generate(ids, 24, temperature=0.8, generator=torch.Generator().manual_seed(0))
    text = model.tokenizer.decode(sample[0].tolist()).split(ENDOFTEXT)[0]
    return save_card(
        recipe.out,
        name="GPT",
        summary=(
            "Loaded by `word2bert.gpt.pretrained()`: a decoder-only `GPT` (pre-LN, GPT-2's block) with its byte-level "
            "BPE tokenizer in the checkpoint's metadata. For teaching only."
        ),
        data=[
            f"{metrics['train_words']:,} words of training documents from {recipe.text_source()}; "
            f"{recipe.eval_fraction:.0%} of the documents held out.",
            f"Byte-level BPE vocabulary of {metrics['vocab_size']} tokens (256 bytes, `{ENDOFTEXT}`, merges) trained "
            f"on the training documents; {metrics['train_tokens']:,} training tokens in windows of "
            f"{recipe.block_size}, read {metrics['epochs']:.2f} times.",
        ],
        config=config,
        parameters=metrics["parameters"],
        configuration=[
            f"Training: `{train_config}`, batch {recipe.batch_size}; AdamW with weight-decay groups, linear warm-up "
            "then cosine decay, gradient clipping at 1.0.",
            f"Device `{metrics['device']}`, {metrics['minutes']:.1f} minutes in all (data, tokenizer, training, "
            "evaluation).",
        ],
        command=command(recipe.script, recipe),
        metrics_title="Metrics (next-token cross-entropy in nats per BPE token)",
        metrics=[
            f"Final training loss (mean of the last 10% of steps): {metrics['final_train_loss']:.3f}",
            *(
                f"{name.capitalize()}: loss {loss:.3f}, perplexity {metrics['perplexity'][name]:.1f} "
                f"(untrained: {metrics['initial_loss'][name]:.3f})"
                for name, loss in metrics["loss"].items()
            ),
        ],
        probes=metrics.get("probes", {}),
        notes=[
            f'Sample (prompt "{prompt}", temperature 0.8, seed 0): {text!r}',
            "Re-running the command on a CPU gives these numbers up to small floating-point differences (thread counts "
            "change the order of sums).",
        ],
    )
