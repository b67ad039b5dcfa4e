"""Fine-tuning BERT for the course's four kinds of task (Devlin et al. 2019, section 4 and figure 4).

One pre-trained encoder, one small new head per task, all weights trained together for a few epochs. The tasks
(``word2bert.tasks``: sentiment, entailment, part of speech, question answering) say how their examples are
encoded, which head they use (``word2bert.heads``), their loss and their metrics (``word2bert.metrics``); this
module is the loop that does not care which task it runs.

The feature-based alternative (``feature_based=True``) freezes the encoder and feeds the head a learned scalar mix
of its layers, as ELMo does. Every score is on held-out templates, against a simple baseline per task
(``baseline``), and ``run_seeds`` repeats a run over seeds for a mean ± spread (``metrics.summarize``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.utils.data import DataLoader

from .bert import Bert
from .data import ToyWorld
from .device import resolve
from .elmo import ScalarMix
from .tasks import TASKS, Features, Task, get_task
from .training import TrainConfig, to_device, train
from .transformer import MultiHeadSelfAttention
from .wordpiece import WordPieceTokenizer

__all__ = [
    "TASKS",
    "FineTuner",
    "FinetuneConfig",
    "FinetuneResult",
    "baseline",
    "collate",
    "encode",
    "evaluate_finetuned",
    "examples",
    "finetune",
    "learning_curve",
    "predict",
    "run_seeds",
    "score",
    "set_dropout",
    "task_loader",
]


class FineTuner(nn.Module):
    """A BERT encoder with a task head. With ``feature_based`` the encoder is frozen (and kept in eval mode) and
    the head reads a trained scalar mix of its layers (ELMo's recipe); otherwise every weight is trained and the
    head reads the last layer (BERT's recipe)."""

    def __init__(self, encoder: Bert, head: nn.Module, feature_based: bool = False):
        super().__init__()
        self.encoder, self.head, self.feature_based = encoder, head, feature_based
        if feature_based:
            encoder.requires_grad_(False)
            self.mix = ScalarMix(encoder.config.num_hidden_layers + 1)

    def train(self, mode: bool = True) -> FineTuner:
        super().train(mode)
        if self.feature_based:
            self.encoder.eval()  # a frozen feature extractor: no dropout
        return self

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        if self.feature_based:
            with torch.no_grad():
                states = self.encoder(input_ids, token_type_ids, attention_mask, output_hidden_states=True)
            hidden = self.mix(states.hidden_states)
        else:
            hidden = self.encoder(input_ids, token_type_ids, attention_mask).last_hidden_state
        return self.head(hidden)


def set_dropout(encoder: Bert, p: float) -> None:
    """Set every dropout rate of ``encoder`` (embeddings, attention weights, sub-layer outputs) to ``p``. BERT is
    fine-tuned with 0.1; our small checkpoint was pre-trained without dropout, so fine-tuning switches it on."""
    for m in encoder.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
        elif isinstance(m, MultiHeadSelfAttention):
            m.dropout = p
    encoder.config = replace(encoder.config, dropout=p)


# --- data: toy-world examples as encoder inputs -----------------------------------------------------------------


def examples(task: str | Task, n: int, split: str = "train", seed: int = 0) -> list:
    """``n`` toy-world examples of ``task`` from the templates of ``split`` ("train" or "heldout", and for QA
    "heldout-questions"). ``split="unseen"`` gives new examples of the *training* templates (another world's
    seed), not the training examples themselves: a test of the task without the shift to new templates."""
    world = ToyWorld(seed + 1000 if split == "unseen" else seed)
    return get_task(task).examples(world, n, "train" if split == "unseen" else split)


def encode(
    task: str | Task, tokenizer: WordPieceTokenizer, example, max_length: int = 128, label_all_pieces: bool = False
) -> Features:
    """One example as BERT's input (``Task.encode``)."""
    return get_task(task).encode(tokenizer, example, max_length, label_all_pieces)


def collate(features: Sequence[Features], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Right-pad a list of features into tensors: input_ids, token_type_ids, attention_mask and the task's targets
    (labels [B] or [B, T], or start_positions/end_positions [B])."""
    T = max(len(f.input_ids) for f in features)
    pad = [T - len(f.input_ids) for f in features]
    batch = {
        "input_ids": torch.tensor([f.input_ids + [pad_id] * n for f, n in zip(features, pad)]),
        "token_type_ids": torch.tensor([f.token_type_ids + [0] * n for f, n in zip(features, pad)]),
        "attention_mask": torch.tensor([[1] * len(f.input_ids) + [0] * n for f, n in zip(features, pad)]),
    }
    return batch | features[0].task.targets(features, T)


def task_loader(
    task: str | Task,
    tokenizer: WordPieceTokenizer,
    n: int,
    split: str = "train",
    batch_size: int = 32,
    seed: int = 0,
    shuffle: bool = True,
    max_length: int = 128,
    label_all_pieces: bool = False,
) -> DataLoader:
    """A DataLoader of padded batches of ``n`` toy-world examples of ``task`` (e.g. sentiment for the graded
    fine-tuning cell); shuffled with ``seed``."""
    task = get_task(task)
    feats = [task.encode(tokenizer, x, max_length, label_all_pieces) for x in examples(task, n, split, seed)]
    return DataLoader(
        feats,
        batch_size,
        shuffle=shuffle,
        collate_fn=lambda fs: collate(fs, tokenizer.pad_id),
        generator=torch.Generator().manual_seed(seed),
    )


# --- training and evaluation ------------------------------------------------------------------------------------


@dataclass
class FinetuneConfig:
    n_train: int = 400
    n_test: int = 200
    steps: int = 200
    batch_size: int = 16
    lr: float = 1e-3  # full fine-tuning of the small course BERT; the frozen variant uses `feature_lr`
    dropout: float = 0.1  # in the encoder while fine-tuning, as in the paper (the heads have their own)
    feature_lr: float = 3e-3
    warmup_fraction: float = 0.1
    feature_based: bool = False
    label_all_pieces: bool = False
    max_length: int = 128
    max_answer_len: int = 4
    test_split: str = "heldout"  # "heldout" templates, or "unseen" examples of the training templates
    threads: int | None = None  # torch threads on a CPU while training; None: device.cpu_threads() picks them


@dataclass
class FinetuneResult:
    task: Task
    metrics: dict[str, float]
    losses: list[float]
    examples: list  # the held-out examples
    predictions: list  # one per example: a label, a list of tags, or the answer's words
    model: FineTuner | None = None

    def errors(self, k: int = 5) -> list[tuple]:
        """Up to ``k`` (example, prediction) pairs the model got wrong."""
        wrong = [(x, p) for x, p in zip(self.examples, self.predictions) if p != self.task.gold(x)]
        return wrong[:k]


@torch.no_grad()
def predict(
    task: str | Task,
    model: FineTuner,
    tokenizer: WordPieceTokenizer,
    batch_examples: Sequence,
    config: FinetuneConfig,
    batch_size: int = 64,
) -> list:
    """Predictions for ``batch_examples``: labels, tag lists (from each word's first piece), or answer words."""
    task = get_task(task)
    model.eval()
    device = next(model.parameters()).device
    out = []
    for i in range(0, len(batch_examples), batch_size):
        chunk = batch_examples[i : i + batch_size]
        feats = [task.encode(tokenizer, x, config.max_length, config.label_all_pieces) for x in chunk]
        batch = to_device(collate(feats, tokenizer.pad_id), device)
        outputs = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        out += task.decode(outputs, feats, chunk, config.max_answer_len)
    return out


def score(task: str | Task, predictions: Sequence, test: Sequence) -> dict[str, float]:
    """The task's metrics: accuracy and macro-F1; token accuracy; exact match and span F1."""
    task = get_task(task)
    return task.score(predictions, [task.gold(x) for x in test])


def finetune(
    task: str | Task,
    encoder: Bert,
    config: FinetuneConfig | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
    keep_model: bool = False,
) -> FinetuneResult:
    """Fine-tune a copy of ``encoder`` (or, feature-based, train a head on it frozen) on ``config.n_train``
    training-template examples of ``task``; score on ``config.n_test`` held-out-template examples."""
    task, config, device = get_task(task), config or FinetuneConfig(), resolve(device)
    tokenizer = encoder.tokenizer
    torch.manual_seed(seed)
    enc = copy.deepcopy(encoder)
    set_dropout(enc, config.dropout)
    model = FineTuner(enc, task.make_head(enc), config.feature_based).to(device)
    loader = task_loader(
        task,
        tokenizer,
        config.n_train,
        "train",
        config.batch_size,
        seed,
        max_length=config.max_length,
        label_all_pieces=config.label_all_pieces,
    )
    train_config = TrainConfig(
        steps=config.steps,
        lr=config.feature_lr if config.feature_based else config.lr,
        warmup_steps=max(1, int(config.warmup_fraction * config.steps)),
        schedule="linear",
        threads=config.threads,
    )

    def loss_fn(m: FineTuner, batch: dict) -> torch.Tensor:
        return task.loss(m(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]), batch)

    losses = train(model, loader, loss_fn, train_config, device, desc=f"fine-tuning ({task.name})")
    result = evaluate_finetuned(task, model, tokenizer, config, seed)
    return replace(result, losses=losses, model=model if keep_model else None)


def evaluate_finetuned(
    task: str | Task, model: FineTuner, tokenizer: WordPieceTokenizer, config: FinetuneConfig, seed: int = 0
) -> FinetuneResult:
    """Score a fine-tuned ``model`` on ``config.n_test`` examples of ``config.test_split`` (e.g. one model on
    another held-out split than the one it was scored on)."""
    task = get_task(task)
    test = examples(task, config.n_test, config.test_split, seed)
    predictions = predict(task, model, tokenizer, test, config)
    return FinetuneResult(task, task.score(predictions, [task.gold(x) for x in test]), [], test, predictions, model)


def baseline(
    task: str | Task, n_train: int = 400, n_test: int = 200, seed: int = 0, test_split: str = "heldout"
) -> dict[str, float]:
    """A model without pre-training (``Task.baseline``), trained on ``n_train`` and scored like ``finetune``."""
    task = get_task(task)
    return task.baseline(examples(task, n_train, "train", seed), examples(task, n_test, test_split, seed), seed)


# --- repeated runs and learning curves ---------------------------------------------------------------------------


def run_seeds(
    task: str | Task,
    encoder: Bert,
    config: FinetuneConfig | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    device: str | torch.device | None = None,
    keep_model: bool = False,
) -> list[FinetuneResult]:
    """One fine-tuning run per seed (the seed picks the data, the head's initialisation and the batches)."""
    task = get_task(task)
    return [finetune(task, encoder, config, seed, device, keep_model) for seed in seeds]


def learning_curve(
    task: str | Task,
    encoder: Bert,
    sizes: Sequence[int],
    config: FinetuneConfig | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
    done: dict[int, float] | None = None,
) -> dict[str, list[float]]:
    """The task's main metric for fine-tuned BERT and for the baseline, trained on each of ``sizes`` examples.
    ``done`` maps sizes already fine-tuned with this config and seed (e.g. a run made earlier) to their score, which
    is reused instead of training again. ``reporting.plot_learning_curve`` draws it."""
    task, config, done = get_task(task), config or FinetuneConfig(), dict(done or {})
    curve: dict[str, list[float]] = {"n_train": list(sizes), "BERT": [], "baseline": []}
    for n in sizes:
        if n not in done:
            done[n] = finetune(task, encoder, replace(config, n_train=n), seed, device).metrics[task.metric]
        curve["BERT"].append(done[n])
        curve["baseline"].append(baseline(task, n, config.n_test, seed, config.test_split)[task.metric])
    return curve
