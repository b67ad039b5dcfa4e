"""What several test modules share, so that no test module imports another: the repository's paths and small
helpers here; the graders' submissions in `helpers.grading`, the book's table of contents in `helpers.book`, the
headless browser in `helpers.browser`. Fixtures live in `tests/conftest.py`."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The folder whose _config.yml/_toc.yml are built; W2B_BOOK_DIR points the tests at a scratch copy.
BOOK_DIR = Path(os.environ.get("W2B_BOOK_DIR", ROOT)).resolve()

# The committed experiments' scripts (`word2bert.scripts.sentence_objectives`, `.objective_ablation`) on a tiny
# config: a fifth of the text held out, so that each held-out task has a batch; a 1-layer, 16-wide encoder.
TINY_PRETRAINING = ["--num-tokens", "10000", "--eval-fraction", "0.2", "--wordnet-fraction", "0", "--vocab-size", "200"]
TINY_PRETRAINING += ["--layers", "1", "--hidden", "16", "--heads", "2"]
TINY_PRETRAINING += ["--steps", "6", "--long-steps", "2", "--warmup-steps", "2", "--batch-size", "4", "--threads", "1"]


def perturbed(model):
    """A Hugging Face model for a parity test, in eval mode, with every weight (LayerNorm's too) redrawn from
    N(0, 0.1): larger than the init, so a weight that ``from_hf`` maps wrongly shows in the outputs."""
    import torch

    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.1)
    return model.eval()


def card_corpus(card: str) -> tuple[int, int]:
    """``(num_tokens, seed)`` of the ``pretraining_documents`` call a model card says its checkpoint read."""
    found = re.search(r"pretraining_documents\((\d+), wordnet_fraction=[\d.]+, seed=(\d+)", card)
    return int(found.group(1)), int(found.group(2))


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
