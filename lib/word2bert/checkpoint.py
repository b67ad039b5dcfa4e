"""Checkpoint I/O shared by every model: weights in safetensors, the config (and any extras) as JSON metadata.

A checkpoint is one ``.safetensors`` file. Its metadata holds ``config`` (the model's config dataclass as JSON)
and ``extra`` (anything else small the model needs, e.g. a vocabulary), so a file alone rebuilds the model.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors import safe_open
from safetensors.torch import load_model, save_model

from .device import resolve

M = TypeVar("M", bound=torch.nn.Module)


def save_checkpoint(
    path: str | Path, model: torch.nn.Module, config: Any, extra: dict | None = None, dtype: torch.dtype | None = None
) -> Path:
    """Write ``model``'s weights and ``config`` (a dataclass) to ``path``. Tied weights are stored once. With
    ``dtype`` (e.g. ``torch.float16``, half the bytes) the floating-point weights are stored in it and the model
    itself is untouched; loading casts them back to the model's own dtype. The weights are written from a copy on
    the CPU: on a GPU, cuDNN keeps an LSTM's weights in one flat buffer, which safetensors refuses to save."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"config": json.dumps(dataclasses.asdict(config)), "extra": json.dumps(extra or {})}
    save_model(copy.deepcopy(model).to(device="cpu", dtype=dtype), str(path), metadata=metadata)
    return path


def read_metadata(path: str | Path) -> tuple[dict, dict]:
    """The ``(config, extra)`` dictionaries stored in a checkpoint, without loading its tensors."""
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    if "config" not in meta:
        raise ValueError(f"{path} is not a word2bert checkpoint: its metadata has no 'config'")
    return json.loads(meta["config"]), json.loads(meta.get("extra", "{}"))


def load_checkpoint(path: str | Path, build: Callable[[dict, dict], M], device: str | torch.device | None = None) -> M:
    """Rebuild a model with ``build(config_dict, extra)`` and load the weights of ``path`` into it."""
    config, extra = read_metadata(path)
    model = build(config, extra)
    load_model(model, str(path), strict=True, device=str(resolve(device)))
    return model.to(resolve(device)).eval()


def load_converted(model: M, state: dict[str, torch.Tensor], source: str) -> M:
    """Copy ``state`` (another library's weights, renamed to ours) into ``model``, after checking, as nanoGPT's
    ``from_pretrained`` does, that both hold the same names with the same shapes: a conversion must fill every
    weight of ours and leave nothing of theirs behind."""
    ours = model.state_dict()
    missing, unexpected = sorted(ours.keys() - state.keys()), sorted(state.keys() - ours.keys())
    shapes = [
        f"{k}: {tuple(state[k].shape)} for our {tuple(ours[k].shape)}"
        for k in sorted(ours.keys() & state.keys())
        if state[k].shape != ours[k].shape
    ]
    if missing or unexpected or shapes:
        raise ValueError(
            f"{source} does not fit our model: missing {missing}, not ours {unexpected}, other shapes {shapes}"
        )
    model.load_state_dict(state, strict=True)
    return model
