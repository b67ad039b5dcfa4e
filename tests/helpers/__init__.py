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
