"""Where tensors live. Every model and trainer takes a ``device`` argument; this picks a default."""

from __future__ import annotations

import os

import torch


def default_device() -> torch.device:
    """CUDA if present, then Apple's MPS, then the CPU. ``W2B_DEVICE=cpu`` (or any torch device) overrides."""
    forced = os.environ.get("W2B_DEVICE")
    if forced:
        return torch.device(forced)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve(device: str | torch.device | None) -> torch.device:
    """``None`` means the default device; strings become ``torch.device``."""
    return default_device() if device is None else torch.device(device)


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python's, NumPy's and torch's global generators; return a fresh CPU generator with that seed."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)
