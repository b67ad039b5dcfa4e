"""What every checkpoint's recipe has: its text, seed, device, threads and output, and the model card it writes; and
what BERT's and GPT's add, the transformer's size (``TransformerRecipe``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import pretraining_documents
from ..data.english import LICENCES
from .options import option


@dataclass
class Recipe:
    """The pre-training text (``data.pretraining_documents``'s arguments), the seed of everything, where it runs and
    where the checkpoint and its model card go. Each model's recipe adds its own fields and defaults."""

    num_tokens: int = option(400_000, "words of pre-training text")
    wordnet_fraction: float = option(0.25, "share of WordNet glosses and examples")
    english_fraction: float = option(
        0.0, "share of ordinary English (WordNet, GCIDE, fortunes: word2bert.data.english)"
    )
    seed: int = option(0, "the seed of the text, the weights and the batches")
    device: str | None = option(None, "cuda, mps or cpu (default: the best available)")
    threads: int | None = option(None, "CPU threads (1 is fastest on a machine whose cores other jobs share)")
    out: Path = option(Path("model.safetensors"), "the checkpoint (.safetensors)")
    card: bool = option(True, "write the model card next to the checkpoint (--no-card: do not)")

    def documents(self) -> list[list[list[str]]]:
        return pretraining_documents(self.num_tokens, self.wordnet_fraction, self.seed, self.english_fraction)

    def text_source(self) -> str:
        """The model card's words for the pre-training text: the call that builds it, and what is in it."""
        call = (
            f"`word2bert.data.pretraining_documents({self.num_tokens}, wordnet_fraction={self.wordnet_fraction}, "
            f"seed={self.seed}, english_fraction={self.english_fraction})`"
        )
        parts = ["the toy world's training templates"]
        if self.wordnet_fraction:
            parts.append(f"{self.wordnet_fraction:.0%} WordNet 3.0 glosses and usage examples, benchmark ones included")
        if self.english_fraction:
            parts.append(
                f"{self.english_fraction:.0%} ordinary English from WordNet, GCIDE and fortune "
                f"(`word2bert.data.english`: cleaned, near-duplicates dropped, the real-English sense benchmark held "
                f"out; licences: {', '.join(LICENCES)}, as the book's licences page records)"
            )
        # a source whose Debian package is missing gives no text, and the toy world fills its share
        return f"{call}: " + ", ".join(parts) + "; the toy world fills the share of any source not installed"


@dataclass
class TransformerRecipe(Recipe):
    """A transformer's recipe (BERT's, GPT's): the model's size, the same options with the same defaults for both."""

    layers: int = option(4, "transformer blocks")
    hidden: int = option(128, "the width of every vector")
    heads: int = option(4, "attention heads per block")
    dropout: float = option(0.0, "dropout on embeddings, attention weights and sub-layer outputs")


def save_card(
    checkpoint: str | Path,
    *,
    name: str,
    summary: str,
    data: list[str],
    config: Any,
    parameters: int,
    configuration: list[str],
    command: str,
    metrics: list[str],
    metrics_title: str = "Metrics",
    probes: dict[str, dict] | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """The model card, next to the checkpoint with the suffix ``.md``: every card's sections (data, configuration,
    the command that made the checkpoint, metrics, notes) filled with what a recipe says of its own model.

    ``data``, ``configuration`` and ``metrics`` are bullets; the configuration opens with the model's ``config``,
    its parameters and the checkpoint's size. ``probes`` maps a probe's label to its per-layer ``mean`` and
    ``std``, listed after the metrics; ``notes`` are paragraphs after them. A ``## Changes`` section that ends the
    card already there (the checkpoint's history, written by hand) is kept at the end.
    """
    checkpoint = Path(checkpoint)
    megabytes = checkpoint.stat().st_size / 1e6
    lines = [
        f"# Model card: the course's small {name} (`{checkpoint.name}`)",
        "",
        summary,
        "",
        "## Data",
        *(f"- {line}" for line in data),
        "",
        "## Configuration",
        f"- Model: `{config}`, {parameters:,} parameters, {megabytes:.1f} MB.",
        *(f"- {line}" for line in configuration),
        "",
        "## Command",
        "```bash",
        command,
        "```",
        "",
        f"## {metrics_title}",
        *(f"- {line}" for line in metrics),
    ]
    for label, p in (probes or {}).items():
        cells = ", ".join(f"L{i} {m:.3f} ± {s:.3f}" for i, (m, s) in enumerate(zip(p["mean"], p["std"])))
        lines.append(f"- {label}: {cells}")
    for note in notes:
        lines += ["", note]
    path = checkpoint.with_suffix(".md")
    # The card's history (CHANGELOG.md in brief) is not the run's to write: a new run keeps it.
    changes = re.search(r"^## Changes\n.*", path.read_text(encoding="utf-8"), re.M | re.S) if path.exists() else None
    if changes:
        lines += ["", changes.group().rstrip()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
