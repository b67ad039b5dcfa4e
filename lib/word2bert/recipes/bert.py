"""The course BERT's recipe: WordPiece vocabulary, MLM + NSP in phases of growing length, model card
(``python -m word2bert.scripts.pretrain_bert``).

The defaults are the course's first recipe (3,000 pieces, 400k words, a quarter of them WordNet's, 3,300 steps); the
committed checkpoint's is ``make checkpoints``'s command, chosen from the curve of ``recipes.english_curve``. Every rank
of a ``torchrun`` builds the same vocabulary and instances from the same seed; rank 0 writes the checkpoint, its model
card (``bert.md`` next to it) and, with ``metrics``, a JSON file of the results.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import torch
import torch.distributed as dist

from .. import bert
from ..bert import BertConfig, BertForPreTraining, count_parameters
from ..pretraining import PretrainConfig, PretrainResult, pretrain
from ..pretraining_data import MLM_PROBABILITY, NSP, create_pretraining_instances, tokenize_documents
from ..training import TrainConfig, init_distributed
from ..wordpiece import WordPieceTokenizer
from .base import TransformerRecipe, save_card
from .options import command, option


@dataclass
class BertRecipe(TransformerRecipe):
    """Text, vocabulary, size and phases of a course BERT (the encoder's shape is BERT's: a 4x wide feed-forward)."""

    script: ClassVar[str] = "word2bert.scripts.pretrain_bert"

    out: Path = option(bert.CHECKPOINT, "the checkpoint (.safetensors)")
    eval_fraction: float = option(0.03, "documents held out for MLM/NSP accuracy")
    vocab_size: int = option(3000, "WordPiece vocabulary size")
    max_seq_length: int = option(128, "pieces per instance in the last phase")
    short_seq_length: int = option(64, "pieces per instance before that")
    dupe_factor: int = option(1, "passes over the documents making NSP pairs")
    steps: int = option(3000, "steps on short instances")
    long_steps: int = option(300, "then steps on instances of --max-seq-length")
    batch_size: int = option(16, "global batch, split over the ranks")
    lr: float = option(1e-3, "the peak learning rate")
    warmup_steps: int = option(300, "warm-up steps of the first phase (later phases warm up for a tenth of theirs)")
    whole_word_mask: bool = option(False, "mask every piece of a chosen word")
    eval_every: int = option(500, "steps between MLM/NSP accuracies on held-out instances (0: only at the end)")
    checkpoint_every: int = option(1000, "steps between checkpoints (0: only at the end)")
    probes: bool = option(False, "score the sense and POS probes for the model card")
    metrics: Path | None = option(None, "also write the results as JSON here")

    def phases(self) -> list[tuple[int, int]]:
        """(sequence length, steps) of each phase. As BERT (90% of the steps at 128 pieces, then 512), most steps use
        short instances, which cost less; the last ones teach the remaining position embeddings."""
        if self.long_steps and self.short_seq_length < self.max_seq_length:
            return [(self.short_seq_length, self.steps), (self.max_seq_length, self.long_steps)]
        return [(self.max_seq_length, self.steps)]

    def pretrain_config(self, phase: int, steps: int, seed: int) -> PretrainConfig:
        """The loop's settings in phase ``phase``: warm-up (the recipe's in the first phase, a tenth of the phase's
        steps after it), then linear decay, with the phase's own masking seed."""
        warmup_steps = self.warmup_steps if phase == 0 else max(1, steps // 10)
        return PretrainConfig(
            train=TrainConfig(
                steps=steps, lr=self.lr, warmup_steps=warmup_steps, schedule="linear", threads=self.threads
            ),
            batch_size=self.batch_size,
            whole_word_mask=self.whole_word_mask,
            eval_every=self.eval_every,
            checkpoint_every=self.checkpoint_every,
            seed=seed + phase,
        )

    def model_config(self, tokenizer: WordPieceTokenizer) -> BertConfig:
        """The model's size: BERT's shape (4x wide feed-forward), positions up to the longest phase."""
        return BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=self.hidden,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            intermediate_size=4 * self.hidden,
            max_position_embeddings=self.max_seq_length,
            dropout=self.dropout,
        )

    def split_documents(self) -> tuple[list, list]:
        """(training documents, held-out documents) of the pre-training text."""
        docs = self.documents()
        n_eval = max(2, int(len(docs) * self.eval_fraction))
        return docs[n_eval:], docs[:n_eval]

    def data(self, progress: bool = True) -> tuple[WordPieceTokenizer, list, list, int]:
        """The WordPiece tokenizer, the training and held-out documents as piece ids, and the training words."""
        train_docs, eval_docs = self.split_documents()
        tokenizer = WordPieceTokenizer.train(
            (" ".join(s) for d in train_docs for s in d), self.vocab_size, progress=progress
        )
        words = sum(len(s) for d in train_docs for s in d)
        return tokenizer, tokenize_documents(tokenizer, train_docs), tokenize_documents(tokenizer, eval_docs), words

    def held_out_instances(self, tokenizer: WordPieceTokenizer, eval_ids=None) -> list:
        """The NSP instances of the held-out documents at the final length, on which the card's accuracies are
        measured."""
        if eval_ids is None:
            eval_ids = tokenize_documents(tokenizer, self.split_documents()[1])
        return create_pretraining_instances(eval_ids, self.max_seq_length, self.seed)

    def settings(self, tokenizer: WordPieceTokenizer, words: int) -> dict:
        """The pre-training settings an experiment's results record."""
        return {
            "train_words": words,
            "vocab_size": tokenizer.vocab_size,
            "phases": self.phases(),
            "batch_size": self.batch_size,
            "layers": self.layers,
            "hidden": self.hidden,
        }


@dataclass
class Phase:
    """One phase of a run: its sequence length, the loop's settings, how many instances it trained on and held out,
    and what the loop returned."""

    length: int
    config: PretrainConfig
    instances: int
    held_out: int
    result: PretrainResult


def pretrain_in_phases(
    model: BertForPreTraining,
    recipe: BertRecipe,
    tokenizer: WordPieceTokenizer,
    train_ids: list,
    device=None,
    *,
    seed: int | None = None,
    objective=NSP,
    loss=None,
    mlm_probability: float = MLM_PROBABILITY,
    eval_ids: list | None = None,
    save=None,
) -> list[Phase]:
    """Pre-train ``model`` through the recipe's phases, from ``seed`` (the recipe's unless told): in each, instances
    of the sentence ``objective`` at the phase's length, the ``loss`` module (``PretrainingObjective`` unless told),
    MLM accuracy on ``eval_ids``' instances and ``save(model)`` as the recipe says."""
    seed = recipe.seed if seed is None else seed
    phases = []
    for i, (length, steps) in enumerate(recipe.phases()):
        instances = create_pretraining_instances(
            train_ids, length, seed + i, dupe_factor=recipe.dupe_factor, objective=objective
        )
        held_out = create_pretraining_instances(eval_ids, length, seed, objective=objective) if eval_ids else ()
        config = replace(
            recipe.pretrain_config(i, steps, seed), mlm_probability=mlm_probability, objective=objective, loss=loss
        )
        result = pretrain(model, instances, tokenizer, config, held_out, device, save)
        phases.append(Phase(length, config, len(instances), len(held_out), result))
    return phases


def train(recipe: BertRecipe) -> tuple[BertForPreTraining, dict]:
    """Pre-train a course BERT as ``recipe`` says (under ``torchrun``, data-parallel); rank 0 writes the checkpoint
    (fp16), its model card and the metrics. Returns the model and its metrics."""
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    rank, world_size, device = init_distributed(recipe.device)
    started = time.time()
    tokenizer, train_ids, eval_ids, num_words = recipe.data(progress=rank == 0)
    config = recipe.model_config(tokenizer)
    torch.manual_seed(recipe.seed)  # the same initial weights on every rank
    model = BertForPreTraining(config, tokenizer)

    def save(model: BertForPreTraining) -> None:  # half the bytes, and the same scores as in full precision
        bert.save(model, recipe.out, torch.float16)

    phases = pretrain_in_phases(model, recipe, tokenizer, train_ids, device, eval_ids=eval_ids, save=save)
    evals, steps = [], 0
    for phase in phases:
        evals += [{**e, "step": e["step"] + steps, "seq_length": phase.length} for e in phase.result.evals]
        steps += len(phase.result.losses)
    last = phases[-1].result
    metrics = {
        "world_size": world_size,
        "device": str(device),
        "final_train_loss": last.final_loss,
        "eval": evals[-1] if evals else {},
        "eval_history": evals,
        "losses": [loss for phase in phases for loss in phase.result.losses],
        "parameter_digests": last.parameter_digests,
        "parameters": count_parameters(model),
        "train_instances": [phase.instances for phase in phases],
        "eval_instances": phases[-1].held_out,
        "train_words": num_words,
        "vocab_size": tokenizer.vocab_size,
        "minutes": (time.time() - started) / 60,
    }
    if rank == 0:
        if recipe.probes:
            from ..probes import english_probes, pos_probe, sense_probe

            model.eval()
            results = [sense_probe(model), pos_probe(model), *english_probes(model)]
            metrics["probes"] = {p.name: {"mean": p.mean, "std": p.std, "seeds": len(p.scores)} for p in results}
        if recipe.metrics:
            recipe.metrics.write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        if recipe.card:
            write_card(recipe, config, [phase.config for phase in phases], metrics)
        print(json.dumps({k: metrics[k] for k in ("final_train_loss", "eval", "world_size")}))
    if dist.is_initialized():
        dist.destroy_process_group()
    return model, metrics


def write_card(recipe: BertRecipe, config: BertConfig, train_configs: list, metrics: dict) -> Path:
    """``bert.md`` next to the checkpoint: data, configuration, the exact command, metrics."""
    e = metrics["eval"]
    phases = recipe.phases()
    return save_card(
        recipe.out,
        name="BERT",
        summary=(
            "Loaded by `word2bert.bert.pretrained()`: a `BertForPreTraining` (encoder, pooler, MLM and NSP heads) "
            "with its WordPiece vocabulary in the checkpoint's metadata. For teaching only."
        ),
        data=[
            f"{metrics['train_words']:,} words of training documents from {recipe.text_source()}; "
            f"{recipe.eval_fraction:.0%} of the documents held out for the accuracies below.",
            f"WordPiece vocabulary of {metrics['vocab_size']} pieces trained on the training documents.",
            f"NSP instances per phase (max. pieces: count): "
            f"{', '.join(f'{n}: {c:,}' for (n, _), c in zip(phases, metrics['train_instances']))}; dupe "
            f"factor {recipe.dupe_factor}; masked afresh for every batch ({MLM_PROBABILITY:.0%}, 80/10/10"
            f"{', whole words' if recipe.whole_word_mask else ''}).",
        ],
        config=config,
        parameters=metrics["parameters"],
        configuration=[
            *(f"Phase {i + 1}, {n} pieces: `{c}`" for i, ((n, _), c) in enumerate(zip(phases, train_configs))),
            "AdamW with weight-decay groups, linear warm-up then linear decay in each phase, gradient clipping at 1.0.",
            f"Ran on {metrics['world_size']} process(es), device `{metrics['device']}`, "
            f"in {metrics['minutes']:.1f} min.",
        ],
        command=command(recipe.script, recipe, metrics["world_size"]),
        metrics_title=f"Metrics (held-out documents, {recipe.max_seq_length} pieces, fixed masks)",
        metrics=[
            f"Final training loss (mean of the last 10% of the last phase's steps): {metrics['final_train_loss']:.3f}",
            f"Held-out loss (MLM + NSP): {e.get('loss', float('nan')):.3f}",
            f"MLM accuracy: {e.get('mlm_accuracy', float('nan')):.3f}",
            f"NSP accuracy: {e.get('nsp_accuracy', float('nan')):.3f}",
        ],
        probes={
            f"Probe, {name} ({p['seeds']} seeds or halvings, per layer)": p
            for name, p in metrics.get("probes", {}).items()
        },
        notes=[
            "Re-running the command on a CPU reproduces the MLM and NSP accuracies within ±0.02 and the held-out "
            "loss within ±0.1; the probes, which fit a classifier on the model's vectors, within ±0.05 per layer. "
            "Thread counts and optimizer kernels change the order of floating-point sums, and the run drifts from "
            "there."
        ],
    )
