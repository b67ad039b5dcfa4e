"""Training utilities GPT and BERT share: AdamW with weight-decay groups, warm-up schedules, a train loop;
and the progress bar that every trainer of the course shows.

The recipe of GPT-2 and BERT: AdamW (Loshchilov & Hutter 2019) without weight decay on biases, LayerNorm
and embeddings; a linear warm-up, then cosine (GPT) or linear (BERT) decay; gradients clipped to norm 1.
Checkpoints are written with ``word2bert.checkpoint``.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from tqdm import tqdm

from .device import resolve, training_threads


def progress_bar(iterable: Iterable | None = None, *, show: bool = True, **kwargs: Any) -> tqdm:
    """A tqdm text progress bar, or a silent one when ``show`` is false (the training loops' ``progress``).

    A shown bar still obeys tqdm's own switch, the environment variable ``TQDM_DISABLE=1``: the book's build sets
    it (``book/_ext/w2b_sphinx.py``), since a finished bar on a web page is noise; in a terminal or a notebook the
    bar says how far training has got.
    """
    return tqdm(iterable, **kwargs) if show else tqdm(iterable, disable=True, **kwargs)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups: matrices decay; biases, LayerNorm and embedding weights do not."""
    kinds = (nn.Embedding, nn.LayerNorm)
    no_decay = {id(p) for m in model.modules() if isinstance(m, kinds) for p in m.parameters()}
    decay, rest = [], []
    for name, p in model.named_parameters():  # tied weights appear once
        if p.requires_grad:
            (rest if id(p) in no_decay or name.endswith("bias") else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]


def warmup_cosine(step: int, warmup_steps: int, total_steps: int, min_ratio: float = 0.0) -> float:
    """Learning-rate multiplier: linear from 0 to 1 over warm-up, then a half cosine down to ``min_ratio``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def warmup_linear(step: int, warmup_steps: int, total_steps: int) -> float:
    """Learning-rate multiplier: linear from 0 to 1 over warm-up, then linear to 0 at ``total_steps`` (BERT)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


SCHEDULES = {"cosine": warmup_cosine, "linear": warmup_linear}


@dataclass
class TrainConfig:
    steps: int = 1000
    lr: float = 3e-4
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = 100
    schedule: str = "cosine"  # "cosine" (GPT) or "linear" (BERT)
    grad_clip: float = 1.0
    threads: int | None = None  # torch threads on a CPU; None: device.cpu_threads() picks them


def make_optimizer(model: nn.Module, config: TrainConfig) -> tuple[torch.optim.AdamW, Any]:
    """AdamW with weight-decay groups and the warm-up schedule of ``config``, stepped once per batch."""
    # The fused kernel updates every parameter in one call instead of a Python loop over them (CPU and CUDA).
    fused = all(p.device.type in ("cpu", "cuda") for p in model.parameters())
    optimizer = torch.optim.AdamW(
        param_groups(model, config.weight_decay), lr=config.lr, betas=config.betas, fused=fused
    )
    schedule = SCHEDULES[config.schedule]
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: schedule(step, config.warmup_steps, config.steps)
    )
    return optimizer, scheduler


def train_step(
    model: nn.Module,
    batch: Any,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    grad_clip: float | None = 1.0,
) -> float:
    """One update: loss, backward, clip the gradient norm, step. Returns the loss."""
    model.train()
    loss = loss_fn(model, batch)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()


def to_device(batch: Any, device: torch.device) -> Any:
    """Move every tensor of a (nested) batch to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def _cycle(batches: Iterable) -> Iterator:
    while True:
        empty = True
        for batch in batches:
            empty = False
            yield batch
        if empty:
            raise ValueError("no batches: pass a list or a DataLoader (a generator runs out after one pass)")


def train(
    model: nn.Module,
    batches: Iterable,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    config: TrainConfig,
    device: str | torch.device | None = None,
    desc: str = "training",
    callbacks: Sequence[Callable[[int, float], None]] = (),
    progress: bool = True,
) -> list[float]:
    """Train for ``config.steps`` updates, cycling over ``batches`` (e.g. a DataLoader) as often as needed.

    ``loss_fn(model, batch)`` returns the scalar loss. After every update each of ``callbacks`` is called with the
    step (from 1) and its loss, as minGPT's trainer calls its ``on_batch_end`` callbacks: this is how pre-training
    evaluates and saves checkpoints without a loop of its own. Returns the loss of every step. On a CPU the loop
    runs on ``config.threads`` torch threads, by default as many as there are idle cores (``device.cpu_threads``).
    """
    device = resolve(device)
    model.to(device)
    optimizer, scheduler = make_optimizer(model, config)
    history: list[float] = []
    stream = _cycle(batches)
    with training_threads(device, config.threads), progress_bar(total=config.steps, desc=desc, show=progress) as bar:
        for step, batch in enumerate(itertools.islice(stream, config.steps), start=1):
            batch = to_device(batch, device)
            history.append(train_step(model, batch, loss_fn, optimizer, scheduler, config.grad_clip))
            bar.update()
            bar.set_postfix(loss=f"{history[-1]:.3f}", refresh=False)
            for callback in callbacks:
                callback(step, history[-1])
    return history


def autocast(device: torch.device):
    """bf16 mixed precision on GPUs; full precision elsewhere (CPU autocast would only slow the course down)."""
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")


def init_distributed(device: str | torch.device | None = None) -> tuple[int, int, torch.device]:
    """(rank, world_size, device). Under ``torchrun`` (WORLD_SIZE > 1) joins the process group: NCCL with one
    GPU per rank on CUDA, gloo on the CPU. A plain ``python`` run is rank 0 of 1."""
    device = resolve(device)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return 0, 1, device
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size(), device
