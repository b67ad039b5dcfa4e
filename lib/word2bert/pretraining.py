"""BERT's pre-training (Devlin et al. 2019, section 3.1 and appendix A): the loss and the loop.

The data, masked language modelling and the sentence objectives (NSP, SOP, MLM alone), are
:mod:`word2bert.pretraining_data`. ``PretrainingObjective`` is the loss the loop trains, ``BertForPreTraining.loss``:
MLM's cross-entropy on the masked positions plus the sentence objective's.

The loop (``pretrain``) runs on one process or under ``torchrun`` with DistributedDataParallel: gloo on the CPU,
NCCL on GPUs, a DistributedSampler giving each rank its share, bf16 autocast on GPUs
(:func:`word2bert.training.init_distributed`, :func:`word2bert.training.autocast`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler
from tqdm import tqdm

from .device import resolve
from .pretraining_data import (
    MLM_PROBABILITY,
    NSP,
    PretrainingCollator,
    PretrainingDataset,
    PretrainingInstance,
    SentenceObjective,
)
from .training import TrainConfig, autocast, init_distributed, to_device, train
from .wordpiece import WordPieceTokenizer

# --- the loop --------------------------------------------------------------------------------------------------


@dataclass
class PretrainConfig:
    # BERT's optimisation: warm-up, then linear decay to 0
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=2000, lr=1e-3, schedule="linear"))
    batch_size: int = 32  # the global batch: under torchrun each of the N ranks takes batch_size / N
    mlm_probability: float = MLM_PROBABILITY
    whole_word_mask: bool = False
    eval_every: int = 200  # MLM and NSP accuracy on the evaluation instances (0: only at the end)
    checkpoint_every: int = 0  # steps between checkpoints (0: only at the end)
    seed: int = 0
    objective: SentenceObjective = NSP  # the instances' sentence objective: its loss is added to MLM's if trained
    # the loss module, built as loss(model, objective): PretrainingObjective (MLM + the sentence objective) unless
    # told; the objective ablation's language models bring their own (word2bert.objectives)
    loss: Callable[[nn.Module, SentenceObjective], nn.Module] | None = None


@dataclass
class PretrainResult:
    losses: list[float]  # this rank's training loss at every step
    evals: list[dict] = field(default_factory=list)  # {"step", "loss", "mlm_accuracy", "nsp_accuracy"}
    final_loss: float = math.nan  # mean training loss of the last tenth of the steps, averaged over ranks
    world_size: int = 1
    parameter_digests: list[str] = field(default_factory=list)  # one per rank: equal when the ranks agree


class PretrainingObjective(nn.Module):
    """The loss the loop trains: ``BertForPreTraining.loss`` (MLM's cross-entropy on the masked positions, as one
    step, plus the sentence objective's) on the encoder's output, the sentence objective's term only if it is
    ``trained``. Unlike the model's ``forward``, it makes no [B, T, V] logits of every position. Wrapping this module
    (not the model) in DDP keeps every parameter in sync."""

    def __init__(self, model: nn.Module, sentence: SentenceObjective = NSP):
        super().__init__()
        self.model, self.sentence = model, sentence

    def forward(self, input_ids, token_type_ids, attention_mask, labels, next_sentence_label) -> torch.Tensor:
        out = self.model.bert(input_ids, token_type_ids, attention_mask)
        return self.model.loss(out, labels, next_sentence_label if self.sentence.trained else None)


@torch.no_grad()
def evaluate_pretraining(
    model: nn.Module,
    batches: Sequence[dict],
    device: str | torch.device | None = None,
    sentence: SentenceObjective = NSP,
) -> dict:
    """Loss (MLM + ``sentence``'s), MLM accuracy (over masked pieces) and the [CLS] classifier's accuracy on the
    batches' pair labels, on already masked batches.

    ``nsp_accuracy`` keeps BERT's name whatever objective made the pairs: with ``SOP`` it is the accuracy of telling
    swapped pairs from kept ones. The name stays because the committed results and the book's pages read it.
    ``device`` is the model's own unless given: a model loaded onto the CPU is scored there on a GPU machine too."""
    device = resolve(device) if device is not None else next(model.parameters()).device
    was_training = model.training
    model.eval()
    loss = mlm_hits = mlm_total = nsp_hits = nsp_total = 0.0
    for batch in batches:
        batch = to_device(batch, device)
        masked = batch["labels"] != -100
        with autocast(device):
            out = model.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
            loss += model.loss(out, batch["labels"], batch["next_sentence_label"] if sentence.trained else None).item()
            mlm_logits, nsp_logits = model.mlm(out.last_hidden_state[masked]), model.nsp(out.pooler_output)
        targets = batch["labels"][masked]
        mlm_hits += (mlm_logits.argmax(-1) == targets).sum().item()
        mlm_total += len(targets)
        nsp_hits += (nsp_logits.argmax(-1) == batch["next_sentence_label"]).sum().item()
        nsp_total += len(batch["next_sentence_label"])
    model.train(was_training)
    return {
        "loss": loss / len(batches),
        "mlm_accuracy": mlm_hits / max(1, mlm_total),
        "nsp_accuracy": nsp_hits / max(1, nsp_total),
    }


def eval_batches(
    instances: Sequence[PretrainingInstance],
    tokenizer: WordPieceTokenizer,
    batch_size: int = 64,
    seed: int = 1234,
    mlm_probability: float = MLM_PROBABILITY,
) -> list[dict]:
    """Evaluation batches masked once with a fixed seed, so every evaluation scores the same predictions."""
    collate = PretrainingCollator(tokenizer, mlm_probability, seed=seed)
    return [collate(instances[i : i + batch_size]) for i in range(0, len(instances), batch_size)]


def parameter_digest(model: nn.Module) -> str:
    """A SHA-256 of every parameter's bytes: two ranks in step have the same digest."""
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode("utf-8"))
        h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def pretrain(
    model: nn.Module,
    instances: Sequence[PretrainingInstance],
    tokenizer: WordPieceTokenizer,
    config: PretrainConfig,
    eval_instances: Sequence[PretrainingInstance] = (),
    device: str | torch.device | None = None,
    save: Callable[[nn.Module], object] | None = None,
) -> PretrainResult:
    """Pre-train ``model`` (BERT with MLM and NSP heads) for ``config.train.steps`` updates.

    The set-up is BERT's; the loop is ``training.train`` (AdamW, warm-up and decay, gradient clipping, a tqdm bar)
    with one callback: rank 0 measures MLM/NSP accuracy on ``eval_instances`` every ``config.eval_every`` steps
    and calls ``save(model)`` every ``config.checkpoint_every`` steps, and both at the end. Under ``torchrun`` the
    model is wrapped in DistributedDataParallel, each rank reads its share of every epoch through a
    DistributedSampler and masks with its own seed.
    """
    rank, world_size, device = init_distributed(device)
    if config.batch_size % world_size:
        raise ValueError(f"batch_size={config.batch_size} does not split over {world_size} ranks")
    torch.manual_seed(config.seed)  # the same dropout on a single process; DDP keeps ranks' weights equal anyway
    model.to(device)
    objective = (config.loss or PretrainingObjective)(model, config.objective)
    if world_size > 1:
        objective = DistributedDataParallel(objective, device_ids=[device.index] if device.type == "cuda" else None)
    dataset = PretrainingDataset(instances)
    if world_size > 1:
        sampler = DistributedSampler(dataset, world_size, rank, shuffle=True, seed=config.seed, drop_last=True)
    else:
        sampler = RandomSampler(dataset, generator=torch.Generator().manual_seed(config.seed))
    collate = PretrainingCollator(tokenizer, config.mlm_probability, config.whole_word_mask, config.seed + rank)
    loader = DataLoader(dataset, config.batch_size // world_size, sampler=sampler, collate_fn=collate, drop_last=True)
    if len(loader) == 0:
        raise ValueError(f"{len(instances)} instances make no batch of {config.batch_size}")
    batches = (b for epoch in itertools.count() for b in _epoch(loader, sampler, epoch))
    evaluation = eval_batches(list(eval_instances), tokenizer, mlm_probability=config.mlm_probability)
    result = PretrainResult(losses=[], world_size=world_size)
    steps = config.train.steps

    def loss_fn(objective: nn.Module, batch: dict) -> torch.Tensor:
        with autocast(device):
            return objective(**batch)

    def evaluate_and_save(step: int, loss: float) -> None:
        if rank != 0:
            return  # the other ranks hold the same weights
        last = step == steps
        if evaluation and (last or config.eval_every and step % config.eval_every == 0):
            result.evals.append({"step": step, **evaluate_pretraining(model, evaluation, device, config.objective)})
            e = result.evals[-1]
            tqdm.write(
                f"step {step}: loss {e['loss']:.3f}, MLM accuracy {e['mlm_accuracy']:.3f}"
                f", {config.objective.task} accuracy {e['nsp_accuracy']:.3f}"
            )
        if save and (last or config.checkpoint_every and step % config.checkpoint_every == 0):
            save(model)

    desc = f"BERT pre-training ({world_size} rank{'s' * (world_size > 1)})"
    result.losses = train(objective, batches, loss_fn, config.train, device, desc, [evaluate_and_save], rank == 0)

    tail = result.losses[-max(1, steps // 10) :]
    final = torch.tensor(sum(tail) / len(tail))
    result.parameter_digests = [parameter_digest(model)]
    if world_size > 1:
        dist.all_reduce(final)
        final /= world_size
        digests: list = [None] * world_size
        dist.all_gather_object(digests, result.parameter_digests[0])
        result.parameter_digests = digests
    result.final_loss = final.item()
    return result


def _epoch(loader: DataLoader, sampler, epoch: int):
    if isinstance(sampler, DistributedSampler):
        sampler.set_epoch(epoch)  # a new order every epoch, the same on every rank
    yield from loader
